"""acpio's ACP v2 requirement registry: each requirement's id, tier and the spec text it checks.

The official kit's v2 suite (106 requirements, pinned to an older draft) is not available here, so
these are our own, read from ``shared/spec/v2`` (the schema's descriptions) and
``shared/reference/spec-v2.md``. Tiers as the kit's: ``MANDATORY`` (every v2 agent),
``CAPABILITY`` (an agent that advertises or offers the feature: otherwise the test is skipped,
saying so), ``ADVISORY`` (a SHOULD, about a feature: skipped too when the agent does not offer it),
``INFORMATIONAL`` (optional behaviour, checked for its shape when the agent shows it). There are
no batch requirements: v2 removed batches (an array is refused like any invalid request).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class Tier(StrEnum):
    """How binding a requirement is."""

    MANDATORY = "MANDATORY"
    CAPABILITY = "CAPABILITY"
    ADVISORY = "ADVISORY"
    INFORMATIONAL = "INFORMATIONAL"


@dataclass(frozen=True)
class Requirement:
    """One requirement: its id, tier and the spec's words it checks."""

    id: str
    tier: Tier
    text: str


_M, _C, _A, _I = Tier.MANDATORY, Tier.CAPABILITY, Tier.ADVISORY, Tier.INFORMATIONAL

REQUIREMENTS: Final[tuple[Requirement, ...]] = (
    Requirement("ACP2-TRANSPORT-001", _M, "each line the agent writes is one JSON-RPC 2.0 message"),
    Requirement("ACP2-JSONRPC-001", _M, "a response carries its request's id as sent, number or string"),
    Requirement("ACP2-JSONRPC-002", _M, "request ids are never null: the agent's own requests have one"),
    Requirement("ACP2-JSONRPC-003", _M, "an unknown method is answered -32601 Method not found"),
    Requirement("ACP2-JSONRPC-004", _M, "a JSON array is refused -32600 (v2 has no batches)"),
    Requirement("ACP2-JSONRPC-005", _M, "a request for an unknown _-prefixed method is answered"),
    Requirement(
        "ACP2-INIT-001", _M, "initialize answers protocolVersion 2, info (name, version) and capabilities"
    ),
    Requirement(
        "ACP2-INIT-002",
        _M,
        "a version the agent does not speak is answered -32022 with data {requested, supported}; "
        "the connection stays open for another initialize",
    ),
    Requirement("ACP2-INIT-003", _M, "a client asking for a newer version (65535) gets 2, not its version"),
    Requirement(
        "ACP2-INIT-004",
        _A,
        "a request before initialize is answered -32600 (the first request must be initialize)",
    ),
    Requirement(
        "ACP2-CAPS-001", _M, "every capability marker is an object ({} = supported), never a boolean"
    ),
    Requirement("ACP2-SCHEMA-001", _M, "every message the agent sends is valid against the v2 schema"),
    Requirement(
        "ACP2-V1GONE-001",
        _M,
        "no v1-only method or update on a v2 connection (fs/*, terminal/* requests, tool_call, plan, modes)",
    ),
    Requirement("ACP2-SESSION-001", _M, "session/new with an absolute cwd answers a sessionId; two differ"),
    Requirement(
        "ACP2-PROMPT-001",
        _M,
        "session/prompt is acknowledged with a non-null messageId once the prompt is accepted",
    ),
    Requirement(
        "ACP2-PROMPT-002",
        _M,
        "the agent sends the prompt back as user_message (or chunks) with that messageId",
    ),
    Requirement(
        "ACP2-PROMPT-003",
        _M,
        "state_update running when foreground work starts, and idle with a stopReason when it ends",
    ),
    Requirement("ACP2-PROMPT-004", _M, "messageId is present on every message chunk"),
    Requirement(
        "ACP2-CANCEL-001",
        _M,
        "session/cancel is confirmed by an idle state_update with stopReason cancelled, after all "
        "pending updates",
    ),
    Requirement(
        "ACP2-CANCEL-002",
        _C,
        "a permission request pending at cancel is answered cancelled by the client; the agent does not "
        "take it as approval and idles cancelled",
    ),
    Requirement(
        "ACP2-TOOL-001",
        _C,
        "tool calls are tool_call_update upserts: the first for an unseen toolCallId creates the call",
    ),
    Requirement("ACP2-TOOL-002", _A, "title SHOULD be sent on a tool call's first report"),
    Requirement(
        "ACP2-TOOL-003",
        _C,
        "tool_call/cancel of a call advertising capabilities.cancel is accepted ({}) and confirmed by a "
        "tool_call_update to a final status",
    ),
    Requirement(
        "ACP2-TOOL-004", _C, "tool_call/cancel of an unknown or finished tool call is answered -32602"
    ),
    Requirement(
        "ACP2-TERMINAL-001",
        _C,
        "an agent terminal is a terminal_update upsert with an absolute cwd; terminal_output_chunk data is "
        "base64; a concrete exitStatus marks it exited",
    ),
    Requirement(
        "ACP2-TERMINAL-002",
        _C,
        "terminal/cancel of a running terminal advertising capabilities.cancel is accepted ({}) and "
        "confirmed by a terminal_update that sets exitStatus",
    ),
    Requirement(
        "ACP2-DIFF-001",
        _C,
        "a diff is changes (absolute paths, an operation each) plus an optional git patch consistent "
        "with them",
    ),
    Requirement(
        "ACP2-PERMISSION-001", _C, "session/request_permission carries a title and at least one option"
    ),
    Requirement(
        "ACP2-PERMISSION-002",
        _A,
        "while blocked on a permission request the agent reports state_update requires_action, then running",
    ),
    Requirement(
        "ACP2-UPSERT-001",
        _C,
        "an agent_message upsert with content replaces the message's content (same messageId as its chunks)",
    ),
    Requirement("ACP2-PLAN-001", _C, "plans are plan_update {plan: {type: items, planId, entries}}"),
    Requirement(
        "ACP2-AUTH-001",
        _C,
        "auth methods carry methodId and type; auth/login with one succeeds and auth/logout is implemented",
    ),
    Requirement("ACP2-RESUME-001", _M, "session/resume without replayFrom answers and replays nothing"),
    Requirement(
        "ACP2-RESUME-002",
        _M,
        "session/resume with replayFrom {type: start} replays the history, keeping the live messageIds",
    ),
    Requirement("ACP2-LIST-001", _M, "session/list (baseline with the session marker) lists the session"),
    Requirement("ACP2-CLOSE-001", _M, "session/close (baseline with the session marker) answers {}"),
    Requirement("ACP2-DELETE-001", _C, "session/delete (capabilities.session.delete) answers {}"),
    Requirement(
        "ACP2-BACKGROUND-001",
        _I,
        "background updates may continue while idle; they carry messageIds and change no state",
    ),
    Requirement("ACP2-ERROR-001", _A, "each error message is a non-empty single line"),
    Requirement(
        "ACP2-INFO-001",
        _I,
        "the agent's info names it: name and version are non-empty strings, title a string",
    ),
)

BY_ID: Final = {requirement.id: requirement for requirement in REQUIREMENTS}
