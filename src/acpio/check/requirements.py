"""acpio's requirement registry: what ``acpio check`` holds an agent to, each with the spec rule it checks.

A requirement has an id (``V1-CANCEL-001``: protocol, area, number), a tier, the spec's rule in a
sentence and a link to where the spec says it. Tiers decide the exit code of ``acpio check``:

* ``MANDATORY``: a MUST every agent meets; a failure fails the check.
* ``CAPABILITY``: a MUST about a feature the agent advertises (``loadSession``...); skipped, saying
  so, when it does not; a failure fails the check under ``--strict``.
* ``ADVISORY``: a SHOULD, or what the editors in :mod:`acpio.profiles` need; reported, never failing.

The ``EDITOR-*`` requirements come from the editor profiles: the spec allows what they check, the
editors named in the text do not.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final, Literal

__all__ = ["BY_ID", "REQUIREMENTS", "Requirement", "Tier"]


class Tier(StrEnum):
    """How binding a requirement is (see the module docstring)."""

    MANDATORY = "MANDATORY"
    CAPABILITY = "CAPABILITY"
    ADVISORY = "ADVISORY"


@dataclass(frozen=True)
class Requirement:
    """One requirement: its id, tier, protocol version, the rule it checks and the spec's page for it."""

    id: str
    tier: Tier
    #: The protocol version it applies to; ``0`` for the editor requirements (run on v1).
    protocol: Literal[0, 1, 2]
    #: The rule, in the spec's words where it has them.
    text: str
    #: Where the spec (or, for an editor requirement, the editor's issue) says it.
    spec: str


_SITE = "https://agentclientprotocol.com/protocol/"
_V2 = "https://github.com/agentclientprotocol/agent-client-protocol/blob/main/docs/protocol/v2/"
_JSONRPC = "https://www.jsonrpc.org/specification#error_object"
_M, _C, _A = Tier.MANDATORY, Tier.CAPABILITY, Tier.ADVISORY

REQUIREMENTS: Final[tuple[Requirement, ...]] = (
    # --- v1 ---------------------------------------------------------------------------------------
    Requirement(
        "V1-STDOUT-001",
        _M,
        1,
        "the agent MUST NOT write anything to stdout that is not a valid ACP message: each line is one "
        "JSON-RPC 2.0 message, UTF-8",
        _SITE + "transports#stdio",
    ),
    Requirement(
        "V1-INIT-001",
        _M,
        1,
        "initialize is answered with the chosen protocolVersion (an integer) and the agent's capabilities",
        _SITE + "initialization",
    ),
    Requirement(
        "V1-INIT-002",
        _M,
        1,
        "a client asking for a version the agent supports (1) gets that same version",
        _SITE + "initialization#version-negotiation",
    ),
    Requirement(
        "V1-INIT-003",
        _M,
        1,
        "a client asking for a version the agent does not support (65535) gets the latest version the "
        "agent supports, not its own echoed",
        _SITE + "initialization#version-negotiation",
    ),
    Requirement(
        "V1-INIT-004",
        _A,
        1,
        "initialize names the agent: agentInfo with name and version",
        _SITE + "initialization#implementation-information",
    ),
    Requirement(
        "V1-JSONRPC-001",
        _M,
        1,
        "a response carries its request's id exactly as sent, string or integer",
        _SITE + "overview",
    ),
    Requirement(
        "V1-JSONRPC-002",
        _M,
        1,
        "a response has either result or error; an error is an object with an integer code and a string "
        "message",
        _SITE + "overview#error-handling",
    ),
    Requirement(
        "V1-JSONRPC-003",
        _M,
        1,
        "a request for a method the agent does not have is answered -32601 Method not found",
        _JSONRPC,
    ),
    Requirement(
        "V1-JSONRPC-004",
        _M,
        1,
        "a notification is never answered, neither with a result nor with an error",
        _SITE + "overview#error-handling",
    ),
    Requirement(
        "V1-PARAMS-001",
        _A,
        1,
        "a request whose params fail validation (session/new without cwd) is answered -32602 Invalid params",
        _JSONRPC,
    ),
    Requirement(
        "V1-ERROR-001",
        _A,
        1,
        "an error message SHOULD be a concise single sentence: non-empty, one line",
        _SITE + "overview#error-handling",
    ),
    Requirement(
        "V1-SESSION-001",
        _M,
        1,
        "session/new is answered with a sessionId, a non-empty string",
        _SITE + "session-setup#creating-a-session",
    ),
    Requirement(
        "V1-SESSION-002",
        _M,
        1,
        "each session/new creates a new session: two answer two different sessionIds",
        _SITE + "session-setup#session-id",
    ),
    Requirement(
        "V1-PROMPT-001",
        _M,
        1,
        "a prompt turn ends with the session/prompt answer carrying a stopReason: end_turn, max_tokens, "
        "max_turn_requests, refusal or cancelled",
        _SITE + "prompt-turn#stop-reasons",
    ),
    Requirement(
        "V1-PROMPT-002",
        _M,
        1,
        "the turn's session/update notifications name the prompted session and are all sent before the "
        "session/prompt answer: none follows it",
        _SITE + "prompt-turn#cancellation",
    ),
    Requirement(
        "V1-CANCEL-001",
        _M,
        1,
        "after session/cancel the agent MUST answer the running session/prompt with stopReason cancelled",
        _SITE + "prompt-turn#cancellation",
    ),
    Requirement(
        "V1-CANCEL-002",
        _M,
        1,
        "a permission request pending at session/cancel is answered cancelled by the client; the agent "
        "does not take it as an answer and still ends the turn with stopReason cancelled",
        _SITE + "prompt-turn#cancellation",
    ),
    Requirement(
        "V1-CLIENTCAP-001",
        _M,
        1,
        "the agent sends fs/*, terminal/* and elicitation requests only when the client advertised that "
        "capability in initialize",
        _SITE + "initialization#client-capabilities",
    ),
    Requirement(
        "V1-LOAD-001",
        _C,
        1,
        "session/load replays the whole conversation as session/update notifications, then answers: every "
        "replayed update comes before the answer",
        _SITE + "session-setup#loading-a-session",
    ),
    Requirement(
        "V1-RESUME-001",
        _C,
        1,
        "session/resume MUST NOT replay the history: no session/update of the session before its answer",
        _SITE + "session-setup#resuming-a-session",
    ),
    Requirement(
        "V1-SHUTDOWN-001",
        _A,
        1,
        "the agent exits by itself when its stdin closes (the client's way to end it)",
        _SITE + "transports#stdio",
    ),
    # --- v2 ---------------------------------------------------------------------------------------
    Requirement(
        "V2-STDOUT-001",
        _M,
        2,
        "each line the agent writes on stdout is one JSON-RPC 2.0 message",
        _V2 + "transports.mdx",
    ),
    Requirement(
        "V2-INIT-001",
        _M,
        2,
        "initialize with protocolVersion 2 answers protocolVersion 2, info (name, version) and capabilities",
        _V2 + "initialization.mdx",
    ),
    Requirement(
        "V2-INIT-002",
        _M,
        2,
        "a client asking for a newer version (65535) gets 2, not its own version echoed",
        _V2 + "initialization.mdx#protocol-version",
    ),
    Requirement(
        "V2-JSONRPC-001",
        _M,
        2,
        "a request for a method the agent does not have is answered -32601 Method not found",
        _JSONRPC,
    ),
    Requirement(
        "V2-JSONRPC-002",
        _M,
        2,
        "a response has either result or error; an error is an object with an integer code and a string "
        "message",
        _V2 + "overview.mdx",
    ),
    Requirement(
        "V2-SESSION-001",
        _M,
        2,
        "session/new answers a non-empty sessionId; two session/new answer two different ids",
        _V2 + "session-setup.mdx",
    ),
    Requirement(
        "V2-PROMPT-001",
        _M,
        2,
        "session/prompt is acknowledged once accepted; the agent reports state_update running, then idle "
        "with a stopReason when the turn's work ends",
        _V2 + "prompt-lifecycle.mdx#4-report-completion",
    ),
    Requirement(
        "V2-CANCEL-001",
        _M,
        2,
        "session/cancel is confirmed by a state_update idle with stopReason cancelled",
        _V2 + "prompt-lifecycle.mdx#cancellation",
    ),
    Requirement(
        "V2-V1GONE-001",
        _M,
        2,
        "no v1-only request on a v2 connection: no fs/* nor terminal/* request",
        _V2 + "migration.mdx",
    ),
    # --- editors (the profiles of acpio.profiles, on v1) ---------------------------------------------
    Requirement(
        "EDITOR-001",
        _A,
        0,
        "no session/update names a session before its session/new answer: Zed drops such an update "
        "(zed#60199), JetBrains IDEs hang on it",
        "https://github.com/zed-industries/zed/issues/60199",
    ),
    Requirement(
        "EDITOR-002",
        _A,
        0,
        "with each editor's own initialize (Zed, JetBrains, CodeCompanion.nvim), the agent sends only "
        "requests that editor advertised (CodeCompanion.nvim has no terminal)",
        _SITE + "initialization#client-capabilities",
    ),
)

BY_ID: Final = {requirement.id: requirement for requirement in REQUIREMENTS}
