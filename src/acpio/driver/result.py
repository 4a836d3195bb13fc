"""What a prompt turn gave: :class:`TurnResult`, its parts, and the events a :class:`TurnStream` adds.

Every value here is frozen and plain (text, numbers, tuples, the views of
:mod:`acpio.session.turn_view` copied at the end of the turn), so a result can be kept, compared
and written out: :meth:`TurnResult.to_dict` gives JSON-ready data, :meth:`TurnResult.to_json` the
text (one line, for JSON lines output).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from acpio.client.forms import FormValue
from acpio.driver.usage import Usage
from acpio.session.turn_view import (
    DiffView,
    PlanEntryView,
    TerminalRef,
    ToolCallView,
    ToolContent,
    TurnEvent,
)

__all__ = [
    "FileWrite",
    "FileWritten",
    "FormAnswered",
    "FormAsk",
    "OfferedOption",
    "PermissionAsk",
    "PermissionDecided",
    "StreamEvent",
    "TerminalRun",
    "TurnResult",
    "UsageChanged",
]


@dataclass(frozen=True, slots=True)
class OfferedOption:
    """One option the agent offered in a permission request."""

    option_id: str
    name: str
    #: ``allow_once``, ``allow_always``, ``reject_once``, ``reject_always`` (or a custom value).
    kind: str


@dataclass(frozen=True, slots=True)
class PermissionAsk:
    """A permission the agent asked for, and how the client answered.

    ``subject`` is ``tool_call`` for a ``session/request_permission`` (``tool_call`` is then the
    call asked about, every update merged, as it was when asked) and ``command`` for a command the
    agent wanted to run in a terminal (``command`` is its command line; ``tool_call`` describes it
    as the policy saw it). ``outcome`` is ``selected`` (``option_id`` and ``option_kind`` say
    which) or ``cancelled``; ``covered_by_grant``: an earlier ``allow`` covered the command, so the
    policy was not asked.
    """

    subject: Literal["tool_call", "command"]
    tool_call: ToolCallView
    options: tuple[OfferedOption, ...]
    outcome: Literal["selected", "cancelled"]
    option_id: str | None = None
    option_kind: str | None = None
    command: str | None = None
    covered_by_grant: bool = False

    @property
    def allowed(self) -> bool:
        """Whether it was allowed: an ``allow_*`` option chosen, or an earlier grant covering it."""
        return self.covered_by_grant or self.option_kind in ("allow_once", "allow_always")


@dataclass(frozen=True, slots=True)
class FormAsk:
    """A form the agent asked the user to fill (``elicitation/create``), and how the client answered.

    ``schema`` is the form's requested schema as it came (JSON data); ``tool_call_id`` the tool
    call it was asked for, if the agent said. ``action`` is what the agent was answered:
    ``accept`` (``content`` holding the values sent, defaults included), ``decline`` or
    ``cancel``. ``error`` says why an answer was not sent (it did not fit the form: the agent was
    answered ``cancel``), naming each field and what it takes.
    """

    message: str
    schema: dict[str, Any]
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, FormValue] | None = None
    tool_call_id: str | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class FileWrite:
    """A file the turn wrote, with its diff.

    ``written_by`` is ``client`` for an ``fs/write_text_file`` this client answered (the old text
    read just before writing; ``None`` for a new file), ``agent`` for an edit the agent made itself
    and reported as a completed tool call's diff (v2 agents always do; ``old_text`` and
    ``new_text`` are what the diff carried, ``None`` when it carried only a patch). ``patch`` is
    a unified diff (the agent's own git patch on v2). ``tool_call_id`` is the tool call it
    belongs to, when known.
    """

    path: str
    old_text: str | None
    new_text: str | None
    patch: str | None
    written_by: Literal["client", "agent"]
    tool_call_id: str | None = None


@dataclass(frozen=True, slots=True)
class TerminalRun:
    """A command run during the turn, with its output and how it ended.

    ``owner`` is ``client`` for a ``terminal/create`` this client ran (v1) and ``agent`` for a
    terminal the agent ran itself and showed (v2). ``exit_code`` and ``signal`` are ``None``
    while it runs (or when it was not seen ending); ``truncated``: the oldest output was dropped
    past the byte limit.
    """

    terminal_id: str
    command: str | None
    output: str
    exit_code: int | None
    signal: str | None
    owner: Literal["client", "agent"]
    cwd: str | None = None
    truncated: bool = False


@dataclass(frozen=True, slots=True)
class TurnResult:
    """What one prompt turn gave: the agent's text, tool calls, files, commands, permissions, forms, usage.

    Made by :meth:`AgentSession.prompt <acpio.client.AgentSession.prompt>` (or a
    :class:`~acpio.client.TurnStream`). A turn that failed is a result too: ``error`` says what
    happened (the agent answered the prompt with an error, ``error_code`` being its JSON-RPC code;
    or the agent exited or closed the connection, ``stderr_tail`` being the end of its stderr), and
    ``stop_reason`` is ``None``; what the agent sent before is kept. :attr:`ok` is the one check
    for a turn that ended normally.
    """

    session_id: str
    #: ``end_turn``, ``cancelled``, ``max_tokens``, ``max_turn_requests``, ``refusal`` (or the
    #: agent's own value); ``None`` when the turn failed (``error``) or a v2 agent gave none.
    stop_reason: str | None
    #: The agent's message text of the turn.
    text: str
    #: The agent's thoughts (``agent_thought_chunk``) of the turn.
    thoughts: str
    #: The tool calls of the turn, in the order they started, each with every update merged.
    tool_calls: tuple[ToolCallView, ...]
    files_written: tuple[FileWrite, ...]
    terminals: tuple[TerminalRun, ...]
    #: The permissions asked, in order, with their answers.
    permissions: tuple[PermissionAsk, ...]
    #: The last plan the agent sent during the turn (empty if none).
    plan: tuple[PlanEntryView, ...]
    #: ``None`` when the agent reported no usage.
    usage: Usage | None
    #: Seconds from sending the prompt to the end of the turn.
    duration: float
    #: The ACP version of the session (1 or 2).
    protocol_version: int = 1
    error: str | None = None
    error_code: int | None = None
    stderr_tail: str | None = None
    #: The forms the agent asked (``elicitation/create``), in order, with their answers.
    forms: tuple[FormAsk, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the turn ended normally: no error, and stop reason ``end_turn``."""
        return self.error is None and self.stop_reason == "end_turn"

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON-ready data: dictionaries, lists, text and numbers (snake_case keys).

        A tool call's content items are tagged: ``{"type": "text", "text"}``, ``{"type": "diff",
        "changes", "patch"}``, ``{"type": "terminal", "terminal_id"}``.
        """
        data: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "tool_calls":
                data["tool_calls"] = [_tool_call(call) for call in value]
            elif field.name == "permissions":
                data["permissions"] = [
                    {
                        **dataclasses.asdict(ask),
                        "tool_call": _tool_call(ask.tool_call),
                        "allowed": ask.allowed,
                    }
                    for ask in value
                ]
            elif dataclasses.is_dataclass(value):
                data[field.name] = dataclasses.asdict(value)  # type: ignore[arg-type]
            elif isinstance(value, tuple):
                data[field.name] = [dataclasses.asdict(item) for item in value]
            else:
                data[field.name] = value
        data["ok"] = self.ok
        return data

    def to_json(self) -> str:
        """:meth:`to_dict` as one line of JSON (non-ASCII text kept as it is)."""
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


def _tool_call(call: ToolCallView) -> dict[str, Any]:
    return {
        "tool_call_id": call.tool_call_id,
        "title": call.title,
        "kind": call.kind,
        "status": call.status,
        "locations": list(call.locations),
        "raw_input": call.raw_input,
        "raw_output": call.raw_output,
        "content": [_content(item) for item in call.content],
        "cancellable": call.cancellable,
    }


def _content(item: ToolContent) -> dict[str, Any]:
    if isinstance(item, DiffView):
        return {"type": "diff", **dataclasses.asdict(item)}
    if isinstance(item, TerminalRef):
        return {"type": "terminal", "terminal_id": item.terminal_id}
    return {"type": "text", "text": item}


# --- the events a TurnStream adds to the view's ------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PermissionDecided:
    """The agent asked a permission and the client answered (``ask`` says what and how)."""

    ask: PermissionAsk


@dataclass(frozen=True, slots=True)
class FormAnswered:
    """The agent asked a form and the client answered (``ask`` says what and how)."""

    ask: FormAsk


@dataclass(frozen=True, slots=True)
class FileWritten:
    """The client wrote a file for the agent (``fs/write_text_file``)."""

    write: FileWrite


@dataclass(frozen=True, slots=True)
class UsageChanged:
    """The agent reported usage; ``usage`` is the turn's as known now."""

    usage: Usage


#: What iterating a :class:`~acpio.client.TurnStream` gives: the view's events (text added, a
#: tool call changed, a terminal, the plan, the state) and the client's own.
StreamEvent: TypeAlias = TurnEvent | PermissionDecided | FormAnswered | FileWritten | UsageChanged
