"""The tool calls a :class:`~acpio.app.Turn` reports, and the ``session/update`` stream they go out on."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal, TypeAlias

import orjson

from acpio import schema as acp
from acpio.app.history import SentUpdates
from acpio.app.update_templates import (
    Template,
    TextChunk,
    ToolCallChange,
    ToolCallStart,
    kept_text,
    text_chunk_opening,
)
from acpio.errors import AcpError, ConnectionClosed, NotInProtocolVersion
from acpio.jsonrpc import Connection, RawJson
from acpio.otel.activity import Activity, start_tool_call

__all__ = ["ActiveToolCall", "OnToolError", "ReportingToolCall", "ToolKindName", "ToolStatusName"]

_log = logging.getLogger("acpio.app")

#: The kinds of tool call ACP names (``ToolKind``), as strings.
ToolKindName: TypeAlias = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
#: The statuses of a tool call (``ToolCallStatus``), as strings (``paused`` and ``cancelled``: v2 only).
ToolStatusName: TypeAlias = Literal["pending", "in_progress", "completed", "failed", "paused", "cancelled"]
_V2_STATUSES = ("paused", "cancelled")
_FINAL_STATUSES = ("completed", "failed", "cancelled")

#: What an exception in a :meth:`~acpio.app.Turn.tool_call` block does: ``"raise"`` it, or
#: ``"report"`` it in the call and go on.
OnToolError: TypeAlias = Literal["raise", "report"]

_UPDATE: Final = "session/update"


class SessionUpdates:
    """The ``session/update`` notifications a turn sends for its session, and the record of them.

    This one writes them as v1 has them; :class:`~acpio.app.updates_v2.V2Updates` as v2 does. An
    update is a model (``turn.update``), or the :class:`~acpio.app.update_templates.Template` of a
    verb, written without one (its model when a value does not fit the template). The JSON written
    without a model goes out as a :class:`~acpio.jsonrpc.RawJson` whose ``source`` is this writer:
    its :attr:`session_id` is how a send observer (the session store's recorder, the attached
    clients' forwarder) finds the session without parsing the JSON.
    """

    #: The ACP version it writes.
    version = 1

    def __init__(self, cx: Connection, session_id: str, cwd: Path) -> None:
        self.cx = cx
        #: The session the updates are for.
        self.session_id = session_id
        self.cwd = cwd
        #: Every update sent so far, in order (the turn's history keeps them).
        self.sent = SentUpdates()
        #: The params of each update up to its update object: ``{"sessionId":...,"update":``.
        self.params_head = b'{"sessionId":' + orjson.dumps(session_id) + b',"update":'

    async def send(self, update: acp.SessionUpdate) -> None:
        """Send the model ``update``, then wait while the client is behind."""
        self._post_model(update)
        await self.cx.drain()

    async def send_template(self, template: Template) -> None:
        """Send a verb's ``template``, then wait while the client is behind."""
        self._post_template(template)
        await self.cx.drain()

    def send_template_now(self, template: Template) -> None:
        """Send ``template`` without waiting (a turn being cancelled must still get it out), unless closed."""
        if not self.cx.closed:
            self._post_template(template)

    async def send_text(self, kind: str, text: str) -> None:
        """Send a text chunk of ``kind`` (``say``, ``think``), then wait while the client is behind.

        :meth:`send_template` of a :class:`~acpio.app.update_templates.TextChunk` without making
        one: the hot path of a streaming turn.
        """
        try:
            opening = text_chunk_opening(kind, text)
        except TypeError:  # not text the template writes: the model, as the verb built it
            self._post_model(TextChunk(kind, text).model())
        else:
            self._post_text(kind, text, opening)
        await self.cx.drain()

    def _post_model(self, update: acp.SessionUpdate) -> None:
        self.sent.append(update)
        self.cx.send_notification(acp.SessionNotification(session_id=self.session_id, update=update))

    def _post_template(self, template: Template) -> None:
        try:
            update = template.update_json()
        except TypeError:  # a value the template does not write: the model, as the verb built it
            self._post_model(template.model())
        else:
            self.sent.append(template.kept())
            self.cx.send_notification(_UPDATE, RawJson(b"".join((self.params_head, update, b"}")), self))

    def _post_text(self, kind: str, text: str, opening: bytes) -> None:
        """A text chunk whose update object, up to its closing brace, is ``opening``."""
        self.sent.append(kept_text(kind, text))
        self.cx.send_notification(_UPDATE, RawJson(b"".join((self.params_head, opening, b"}}")), self))

    def absolute(self, path: str | Path) -> Path:
        """``path`` relative to the session's cwd: ACP wants absolute paths on the wire."""
        return self.cwd / path


class ActiveToolCall:
    """A tool call being reported (see :meth:`~acpio.app.Turn.tool_call`): its :attr:`id`, :meth:`update`."""

    def __init__(
        self,
        updates: SessionUpdates,
        title: str,
        kind: ToolKindName | None,
        locations: list[Path],
        raw_input: Any,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self._updates = updates
        #: The tool call's id, unique in its session.
        self.id = f"call_{uuid.uuid4().hex[:16]}"
        #: The title the user sees.
        self.title = title
        self._kind = kind
        self._locations = locations
        self._raw_input = raw_input
        self._meta = meta
        self._final = False
        #: What the block raised, when the call reports its errors (``on_error="report"``).
        self.error: Exception | None = None
        self._span: Activity | None = None

    def __repr__(self) -> str:
        return f"<ActiveToolCall {self.id} {self.title!r}>"

    async def __aenter__(self) -> ActiveToolCall:
        self._span = start_tool_call(self._updates.session_id, self.id, self.title, self._kind)
        await self._updates.send_template(
            ToolCallStart(self.id, self.title, self._kind, self._locations, self._raw_input, self._meta)
        )
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._end_span(error)
        if self._final:
            return
        # sent without waiting: the turn may be being cancelled, and this must still go out
        status = "completed" if error is None else "failed"
        self._updates.send_template_now(ToolCallChange(self.id, status=status))

    def _end_span(self, error: BaseException | None) -> None:
        span, self._span = self._span, None
        if span is not None:
            span.end(error)

    def _report(self, error: Exception) -> None:
        """Mark the call ``failed`` with ``error``'s message: the block raised it, and the turn goes on."""
        self.error = error
        self._end_span(error)
        # a refusal by the client is expected; anything else is a bug worth its traceback
        level = logging.INFO if isinstance(error, AcpError) else logging.WARNING
        _log.log(level, "The tool call %r failed; the turn goes on", self.title, exc_info=error)
        if not self._final:
            self._final = True
            self._updates.send_template_now(ToolCallChange(self.id, status="failed", text=str(error)))

    async def update(
        self,
        *,
        status: ToolStatusName | None = None,
        title: str | None = None,
        text: str | None = None,
        diff: tuple[str | Path, str | None, str] | None = None,
        raw_output: Any = None,
    ) -> None:
        """Report progress: a new ``status``, ``title``, ``text`` shown as the call's content, a ``diff``.

        ``diff`` is ``(path, old_text, new_text)`` (``old_text`` ``None`` for a new file; on v2 it
        goes out as ``changes`` with a git patch). A final status (``completed``, ``failed``,
        ``cancelled``) is kept when the ``async with`` block ends. ``paused`` and ``cancelled`` exist
        on v2 only: on v1 they raise :class:`~acpio.errors.NotInProtocolVersion`.
        """
        if status in _V2_STATUSES and self._updates.version == 1:
            raise NotInProtocolVersion(
                f"the tool call status {status!r}", 1, "report 'failed' (or 'in_progress') on v1"
            )
        where = None
        if diff is not None:
            path, old, new = diff
            where = (str(self._updates.absolute(path)), old, new)
        if title is not None:
            self.title = title
        self._final = self._final or status in _FINAL_STATUSES
        await self._updates.send_template(
            ToolCallChange(self.id, status=status, title=title, text=text, diff=where, raw_output=raw_output)
        )

    async def show_terminal(self, terminal_id: str) -> None:
        """Show the terminal ``terminal_id`` as this call's content (its output, live).

        On v1 a terminal of the client's; on v2 one the agent runs (:meth:`~acpio.app.Turn.run_command`).
        """
        await self._updates.send_template(ToolCallChange(self.id, terminal_id=terminal_id))


class ReportingToolCall:
    """A tool call whose errors fail the call, not the turn: ``turn.tool_call(..., on_error="report")``.

    ``async with`` it gives the :class:`ActiveToolCall`; an exception raised in the block (not a
    cancellation, not the connection ending) marks the call ``failed`` with the error's message,
    is kept in :attr:`ActiveToolCall.error`, and goes no further.
    """

    def __init__(self, call: ActiveToolCall) -> None:
        self._call = call

    def __repr__(self) -> str:
        return f"<ReportingToolCall {self._call.id} {self._call.title!r}>"

    async def __aenter__(self) -> ActiveToolCall:
        return await self._call.__aenter__()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool:
        if not isinstance(error, Exception) or isinstance(error, ConnectionClosed):
            await self._call.__aexit__(kind, error, traceback)
            return False
        self._call._report(error)
        return True
