"""One prompt turn of an :class:`~acpio.app.AgentApp`: what a prompt function uses to talk to the client.

A :class:`Turn` is handed to the app's prompt function. It runs in a task of its own, never in the
connection's dispatch loop, so awaiting the client (a permission, a file) is always allowed, and
what it sends for its session goes out in the order it was sent.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, overload

from acpio.app.forms import Elicited, form_schema, form_value
from acpio.app.history import Exchange
from acpio.app.menu import CommandCall, Menu, OptionValue, SessionSettings
from acpio.capabilities import CapabilityNotAdvertised, ClientFeatures
from acpio.errors import AcpError, ConnectionClosed
from acpio.jsonrpc import Connection
from acpio.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    CompactionSummaryChunk,
    CompactionUpdate,
    CompleteElicitationNotification,
    ConfigOptionUpdate,
    Content,
    ContentBlock,
    Cost,
    CreateElicitationRequest,
    CreateElicitationResponse,
    CreateTerminalRequest,
    CreateTerminalResponse,
    CurrentModeUpdate,
    Diff,
    EnvVariable,
    KillTerminalRequest,
    Notice,
    PermissionOption,
    Plan,
    PlanEntry,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    SessionInfoUpdate,
    SessionNotification,
    SessionUpdate,
    Terminal,
    TerminalOutputRequest,
    TerminalOutputResponse,
    TextContent,
    ToolCall,
    ToolCallContent,
    ToolCallLocation,
    ToolCallUpdate,
    UsageUpdate,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
)

if TYPE_CHECKING:
    from mcp import Client as McpClient

__all__ = [
    "ActiveToolCall",
    "CommandResult",
    "OnToolError",
    "ReportingToolCall",
    "SettingChange",
    "ToolKindName",
    "ToolStatusName",
    "Turn",
]

T = TypeVar("T")

_log = logging.getLogger("acpio.app")

#: The kinds of tool call ACP names (``ToolKind``), as strings.
ToolKindName: TypeAlias = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
#: The statuses of a tool call (``ToolCallStatus``), as strings.
ToolStatusName: TypeAlias = Literal["pending", "in_progress", "completed", "failed"]

#: ``await change(config_id, value)``: the app's one way to change a session's mode (``config_id``
#: ``None``) or a config option, and keep it (see :class:`~acpio.app.AgentApp`).
SettingChange: TypeAlias = Callable[[str | None, OptionValue], Awaitable[None]]

#: What an exception in a :meth:`Turn.tool_call` block does: ``"raise"`` it, or ``"report"`` it in
#: the call and go on.
OnToolError: TypeAlias = Literal["raise", "report"]

_ALLOW = "allow"
_DENY = "deny"


@dataclass(frozen=True)
class CommandResult:
    """How a command run with :meth:`Turn.run_command` ended, and what it printed."""

    #: Its output (stdout and stderr, as the client captured them).
    output: str
    #: Whether the client cut the output to its byte limit (the start was dropped).
    truncated: bool
    #: The exit code (``None`` when a signal ended it).
    exit_code: int | None
    #: The signal that ended it, if any.
    signal: str | None
    #: Whether it was killed (``terminal/kill``) for running past ``kill_after``.
    timed_out: bool = False


class Turn:
    """One ``session/prompt`` being answered: the prompt, and the ways to answer it.

    Stream with :meth:`say` and :meth:`think`, show a :meth:`plan`, report work with
    :meth:`tool_call`, ask with :meth:`ask_permission`, and use the client's files with
    :meth:`read_file` and :meth:`write_file`. Those and terminals are offered only by some clients:
    ask :attr:`client` first (``if turn.client.write_text_file:``) and offer the user only what
    the client can do. When the client cancels the turn (``session/cancel``), the prompt function
    is cancelled where it waits and the turn ends with ``cancelled``.
    """

    def __init__(
        self,
        cx: Connection,
        session_id: str,
        cwd: Path,
        prompt: list[ContentBlock],
        client: ClientFeatures,
        settings: SessionSettings,
        menu: Menu,
        history: Sequence[Exchange] = (),
        mcp_servers: Sequence[Mapping[str, Any]] = (),
        *,
        change: SettingChange,
    ) -> None:
        #: The connection to the client.
        self.cx = cx
        #: The session this turn belongs to.
        self.session_id = session_id
        #: The session's working directory (relative paths given to the turn resolve against it).
        self.cwd = cwd
        #: The prompt's content blocks, as the client sent them.
        self.prompt = prompt
        #: What the client advertised at ``initialize``: ``client.read_text_file``,
        #: ``client.write_text_file``, ``client.terminal``... say what the turn may ask of it.
        self.client = client
        #: Whether the client asked to cancel this turn.
        self.cancel_requested = False
        self._settings = settings
        self._menu = menu
        self._change = change
        #: The session's earlier turns, oldest first (kept while the agent runs).
        self.history: tuple[Exchange, ...] = tuple(history)
        self._said: list[str] = []
        self._sent: list[SessionUpdate] = []
        #: The MCP servers the client declared for the session (their JSON objects): reach one
        #: with :meth:`mcp`.
        self.mcp_servers: tuple[Mapping[str, Any], ...] = tuple(mcp_servers)

    def __repr__(self) -> str:
        return f"<Turn session={self.session_id!r}>"

    @property
    def text(self) -> str:
        """The prompt's text blocks, joined with newlines (other blocks are left out)."""
        return "\n".join(block.text for block in self.prompt if isinstance(block, TextContent))

    @property
    def command(self) -> CommandCall | None:
        """The slash command the prompt invoked (``/name input``), if it starts with a declared one."""
        return self._menu.parse_command(self.text)

    @property
    def mode(self) -> str | None:
        """The session's current mode (``None`` when the app declares no modes)."""
        return self._settings.mode

    @property
    def options(self) -> Mapping[str, OptionValue]:
        """The session's config option values, by option id."""
        return MappingProxyType(self._settings.options)

    async def set_mode(self, mode_id: str) -> None:
        """Switch the session to another offered mode, and tell the client (``current_mode_update``).

        The change is the session's, as if the client had set it (a stored session keeps it for
        ``session/load``), but the app's :meth:`~acpio.app.AgentApp.on_change` hooks do not run: the
        turn sets what goes with the mode itself. Raises :class:`~acpio.InvalidParams` for a mode
        the session is not offered.
        """
        await self._change(None, mode_id)
        await self.update(CurrentModeUpdate(current_mode_id=mode_id))

    async def set_option(self, option_id: str, value: OptionValue) -> None:
        """Change a config option, and tell the client (``config_option_update`` with every option).

        Kept like :meth:`set_mode` (no :meth:`~acpio.app.AgentApp.on_change` hook runs). Raises
        :class:`~acpio.InvalidParams` for an unknown option or a value it cannot take.
        """
        await self._change(option_id, value)
        await self.update(ConfigOptionUpdate(config_options=self._menu.options_state(self._settings)))

    # --- streaming --------------------------------------------------------------------------------

    async def update(self, update: SessionUpdate) -> None:
        """Send one ``session/update`` for this session, then wait while the client is behind."""
        self._sent.append(update)
        self.cx.send_notification(SessionNotification(session_id=self.session_id, update=update))
        await self.cx.drain()

    async def say(self, text: str) -> None:
        """Stream ``text`` to the user (an ``agent_message_chunk``)."""
        self._said.append(text)
        await self.update(AgentMessageChunk(content=TextContent(text=text)))

    def exchange(self) -> Exchange:
        """The turn as the history keeps it: its prompt, what was said and every update sent so far."""
        return Exchange(tuple(self.prompt), "".join(self._said), tuple(self._sent))

    async def think(self, text: str) -> None:
        """Stream a thought (an ``agent_thought_chunk``)."""
        await self.update(AgentThoughtChunk(content=TextContent(text=text)))

    async def plan(self, entries: Sequence[str | PlanEntry]) -> None:
        """Show the plan: each entry a :class:`~acpio.schema.PlanEntry`, or text (pending, medium priority).

        Send the whole plan again to change it: the client replaces what it showed.
        """
        await self.update(
            Plan(
                entries=[
                    PlanEntry(content=e, priority="medium", status="pending") if isinstance(e, str) else e
                    for e in entries
                ]
            )
        )

    @overload
    def tool_call(
        self,
        title: str,
        *,
        kind: ToolKindName | None = None,
        locations: Sequence[str | Path] = (),
        raw_input: Any = None,
        meta: Mapping[str, Any] | None = None,
        on_error: Literal["raise"] = "raise",
    ) -> ActiveToolCall: ...

    @overload
    def tool_call(
        self,
        title: str,
        *,
        kind: ToolKindName | None = None,
        locations: Sequence[str | Path] = (),
        raw_input: Any = None,
        meta: Mapping[str, Any] | None = None,
        on_error: Literal["report"],
    ) -> ReportingToolCall: ...

    def tool_call(
        self,
        title: str,
        *,
        kind: ToolKindName | None = None,
        locations: Sequence[str | Path] = (),
        raw_input: Any = None,
        meta: Mapping[str, Any] | None = None,
        on_error: OnToolError = "raise",
    ) -> ActiveToolCall | ReportingToolCall:
        """A tool call to report: ``async with turn.tool_call("Read notes.txt", kind="read") as call:``.

        Entering it sends the ``tool_call`` (pending); leaving it marks it ``completed``, or
        ``failed`` when the block raised (or was cancelled), unless :meth:`ActiveToolCall.update`
        already set a final status. ``locations`` are the paths it touches (relative to
        :attr:`cwd`); ``raw_input`` is shown as the call's input; ``meta`` is sent as its ``_meta``
        (kept in the history: what the agent needs to know of the call later).

        ``on_error`` says what an exception raised in the block does. ``"raise"`` (the default):
        it goes on up, and unless caught it fails the turn. ``"report"``: the call is marked
        ``failed`` with the error's message as its content, the exception is kept in
        :attr:`ActiveToolCall.error`, and the prompt function goes on after the block (a client that
        refused a write, a file that is not there). A cancellation, or the connection ending, still
        ends the turn.
        """
        paths = [self._absolute(p) for p in locations]
        call = ActiveToolCall(self, title, kind, paths, raw_input, dict(meta) if meta else None)
        return ReportingToolCall(call) if on_error == "report" else call

    # --- asking the client ------------------------------------------------------------------------

    async def ask_permission(
        self, call: ActiveToolCall, *, allow: str = "Allow", deny: str = "Deny", always: bool = False
    ) -> bool:
        """Ask the user whether ``call`` may go on; ``True`` if they chose ``allow``.

        ``allow`` and ``deny`` label the two options; with ``always`` they are offered as
        ``allow_always`` and ``reject_always`` (the client may remember the choice). A cancelled
        answer (the client cancelled the turn) is ``False``.
        """
        options = [
            PermissionOption(option_id=_ALLOW, name=allow, kind="allow_always" if always else "allow_once"),
            PermissionOption(option_id=_DENY, name=deny, kind="reject_always" if always else "reject_once"),
        ]
        request = RequestPermissionRequest(
            session_id=self.session_id,
            tool_call=ToolCallUpdate(tool_call_id=call.id, title=call.title),
            options=options,
        )
        answer = await self.cx.send_request(request)
        outcome = answer.outcome
        return isinstance(outcome, SelectedPermissionOutcome) and outcome.option_id == _ALLOW

    async def read_file(self, path: str | Path, *, line: int | None = None, limit: int | None = None) -> str:
        """The text of ``path`` (relative to :attr:`cwd`) as the client has it, unsaved edits included.

        ``line`` (1-based) and ``limit`` read a part. Raises
        :class:`~acpio.capabilities.CapabilityNotAdvertised` when the client does not offer
        ``fs/read_text_file``, and the client's error (a :class:`~acpio.RequestError`) when it refuses.
        """
        self.client.require(ReadTextFileRequest.METHOD)
        part = _given(line=line, limit=limit)  # an explicit None would be sent as null
        request = ReadTextFileRequest(session_id=self.session_id, path=str(self._absolute(path)), **part)
        answer: ReadTextFileResponse = await self.cx.send_request(request)
        return answer.content

    async def write_file(self, path: str | Path, content: str) -> None:
        """Write ``content`` to ``path`` (relative to :attr:`cwd`) through the client.

        Raises :class:`~acpio.capabilities.CapabilityNotAdvertised` when the client does not offer
        ``fs/write_text_file``, and the client's error when it refuses.
        """
        self.client.require(WriteTextFileRequest.METHOD)
        request = WriteTextFileRequest(
            session_id=self.session_id, path=str(self._absolute(path)), content=content
        )
        await self.cx.send_request(request)

    async def run_command(
        self,
        command: str,
        *args: str,
        cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None,
        output_limit: int | None = None,
        call: ActiveToolCall | None = None,
        kill_after: float | None = None,
    ) -> CommandResult:
        """Run ``command`` with ``args`` in a terminal of the client, wait for it, and return how it went.

        ``cwd`` is relative to :attr:`cwd` (default: the session's directory); ``output_limit`` caps
        the bytes the client keeps. With ``call``, the terminal is shown in that tool call while it
        runs. Past ``kill_after`` seconds the command is killed (``terminal/kill``) and the result says
        ``timed_out``. The terminal is released at the end, also when the turn is cancelled (which
        kills the command). Raises :class:`~acpio.capabilities.CapabilityNotAdvertised` when the client offers
        no terminals.
        """
        self.client.require(CreateTerminalRequest.METHOD)
        optional = _given(
            args=list(args) or None,
            cwd=str(self._absolute(cwd)) if cwd is not None else str(self.cwd),
            env=[EnvVariable(name=k, value=v) for k, v in env.items()] if env else None,
            output_byte_limit=output_limit,
        )
        created: CreateTerminalResponse = await self.cx.send_request(
            CreateTerminalRequest(session_id=self.session_id, command=command, **optional)
        )
        terminal = created.terminal_id
        try:
            if call is not None:
                await call.show_terminal(terminal)
            wait = WaitForTerminalExitRequest(session_id=self.session_id, terminal_id=terminal)
            timed_out = False
            try:
                async with asyncio.timeout(kill_after):
                    ended: WaitForTerminalExitResponse = await self.cx.send_request(wait)
            except TimeoutError:
                timed_out = True
                await self.cx.send_request(
                    KillTerminalRequest(session_id=self.session_id, terminal_id=terminal)
                )
                ended = await self.cx.send_request(wait)
            output: TerminalOutputResponse = await self.cx.send_request(
                TerminalOutputRequest(session_id=self.session_id, terminal_id=terminal)
            )
        finally:
            if not self.cx.closed:  # not awaited: a cancelled turn must still release it
                self.cx.send_request(ReleaseTerminalRequest(session_id=self.session_id, terminal_id=terminal))
        return CommandResult(output.output, output.truncated, ended.exit_code, ended.signal, timed_out)

    def mcp(self, name: str) -> AbstractAsyncContextManager[McpClient]:
        """An ``mcp`` client for the MCP server the client declared as ``name``.

        ``async with turn.mcp("notes") as notes: await notes.call_tool("add", {...})``. An ``acp``
        server (hosted by the client or a proxy) is reached over this connection, an ``http`` one at
        its URL; the app must be made with ``AgentApp(..., mcp=True)`` to be offered them. Needs the
        ``mcp`` extra (``pip install acpio[mcp]``). Raises ``LookupError`` naming the declared
        servers when none is called ``name``.
        """
        declaration = next((d for d in self.mcp_servers if d.get("name") == name), None)
        if declaration is None:
            names = ", ".join(repr(d.get("name")) for d in self.mcp_servers) or "none"
            raise LookupError(
                f"No MCP server named {name!r} was declared for this session (declared: {names})"
            )
        try:
            from acpio.mcp import connect_declared
        except ImportError as exc:
            raise ImportError(f"turn.mcp() needs the mcp package: pip install 'acpio[mcp]' ({exc})") from exc
        return connect_declared(self.cx, declaration)

    # --- elicitation, notices, and what the client shows beside the conversation ------------------

    async def elicit(self, message: str, form: type[T], *, call: ActiveToolCall | None = None) -> Elicited[T]:
        """Ask the user to fill ``form`` (a dataclass, see :mod:`acpio.app.forms`); their answer.

        ``answer.value`` is the filled form when they accepted, ``None`` when they declined or
        cancelled. With ``call``, the question is tied to that tool call. Raises
        :class:`~acpio.capabilities.CapabilityNotAdvertised` when the client offers no form
        elicitation (do without, or fail the work), and :class:`~acpio.app.forms.FormError` when an
        accepted answer does not fit the form.
        """
        if not self.client.elicitation_form:
            raise CapabilityNotAdvertised(
                CreateElicitationRequest.METHOD, "C.elicitation.form", what="a form"
            )
        request = CreateElicitationRequest(
            session_id=self.session_id,
            mode="form",
            message=message,
            requested_schema=form_schema(form),
            **_given(tool_call_id=call.id if call is not None else None),
        )
        answer: CreateElicitationResponse = await self.cx.send_request(request)
        action = str(answer.action)
        value = form_value(form, answer.content) if action == "accept" else None
        return Elicited(action, value)

    async def elicit_url(
        self, message: str, url: str, *, elicitation_id: str | None = None, call: ActiveToolCall | None = None
    ) -> Elicited[None]:
        """Ask the user to open ``url`` (a login, a payment: what a form must not ask); their answer.

        ``accept`` means they agreed to open it, not that they finished there: once the work at the
        URL is done, call :meth:`complete_elicitation` with ``answer.elicitation_id``. Raises
        :class:`~acpio.capabilities.CapabilityNotAdvertised` when the client offers no URL elicitation.
        """
        if not self.client.elicitation_url:
            raise CapabilityNotAdvertised(CreateElicitationRequest.METHOD, "C.elicitation.url", what="a URL")
        elicitation_id = elicitation_id or f"elicit_{uuid.uuid4().hex[:16]}"
        request = CreateElicitationRequest(
            session_id=self.session_id,
            mode="url",
            message=message,
            url=url,
            elicitation_id=elicitation_id,
            **_given(tool_call_id=call.id if call is not None else None),
        )
        answer: CreateElicitationResponse = await self.cx.send_request(request)
        return Elicited(str(answer.action), None, elicitation_id)

    async def complete_elicitation(self, elicitation_id: str) -> None:
        """Tell the client the work behind an accepted URL elicitation is done (``elicitation/complete``)."""
        self.cx.send_notification(CompleteElicitationNotification(elicitation_id=elicitation_id))
        await self.cx.drain()

    async def notice(
        self,
        title: str,
        *,
        severity: Literal["info", "warning", "error"] = "info",
        description: str | None = None,
    ) -> None:
        """Tell the user something that is not part of the conversation (a ``notice`` update).

        Only clients that advertise ``session.notices`` take notices; to others the same words are
        said as a message (``say``), so the user still reads them.
        """
        if self.client.has("session.notices"):
            await self.update(Notice(severity=severity, title=title, **_given(description=description)))
            return
        detail = f": {description}" if description else ""
        await self.say(f"{severity}: {title}{detail}\n")

    async def report_usage(
        self, used: int, size: int, *, cost: float | None = None, currency: str = "USD"
    ) -> None:
        """How full the context window is (``usage_update``): ``used`` of ``size`` tokens; the cost so far."""
        extra = {"cost": Cost(amount=cost, currency=currency)} if cost is not None else {}
        await self.update(UsageUpdate(used=used, size=size, **extra))

    async def set_title(self, title: str | None) -> None:
        """Give the session a title (``session_info_update``; ``None`` clears it)."""
        await self.update(SessionInfoUpdate(title=title))

    async def compact(self, summary: str | Sequence[str], *, compaction_id: str | None = None) -> str:
        """Report a context compaction: ``in_progress``, its summary chunk by chunk, then ``completed``.

        ``summary`` is the text the conversation was compacted to (one chunk), or its chunks. Returns the
        compaction's id. Raises :class:`~acpio.capabilities.CapabilityNotAdvertised` unless the client
        advertised ``session.compaction``.
        """
        if not self.client.has("session.compaction"):
            raise CapabilityNotAdvertised(
                SessionNotification.METHOD, "C.session.compaction", what="a compaction update"
            )
        compaction_id = compaction_id or f"compaction_{uuid.uuid4().hex[:16]}"
        await self.update(CompactionUpdate(compaction_id=compaction_id, status="in_progress"))
        for chunk in [summary] if isinstance(summary, str) else summary:
            await self.update(
                CompactionSummaryChunk(compaction_id=compaction_id, content=TextContent(text=chunk))
            )
        await self.update(CompactionUpdate(compaction_id=compaction_id, status="completed"))
        return compaction_id

    def _absolute(self, path: str | Path) -> Path:
        # ACP wants absolute paths on the wire; a turn's paths are relative to the session's cwd
        return self.cwd / path


class ActiveToolCall:
    """A tool call being reported (see :meth:`Turn.tool_call`): its :attr:`id`, and :meth:`update`."""

    def __init__(
        self,
        turn: Turn,
        title: str,
        kind: ToolKindName | None,
        locations: list[Path],
        raw_input: Any,
        meta: dict[str, Any] | None = None,
    ) -> None:
        self._turn = turn
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

    def __repr__(self) -> str:
        return f"<ActiveToolCall {self.id} {self.title!r}>"

    async def __aenter__(self) -> ActiveToolCall:
        locations = [ToolCallLocation(path=str(p)) for p in self._locations] or None
        optional = _given(kind=self._kind, locations=locations, raw_input=self._raw_input, meta=self._meta)
        await self._turn.update(
            ToolCall(tool_call_id=self.id, title=self.title, status="pending", **optional)
        )
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._final:
            return
        # sent without waiting: the turn may be being cancelled, and this must still go out
        self._send(ToolCallUpdate(tool_call_id=self.id, status="completed" if error is None else "failed"))

    def _report(self, error: Exception) -> None:
        """Mark the call ``failed`` with ``error``'s message: the block raised it, and the turn goes on."""
        self.error = error
        # a refusal by the client is expected; anything else is a bug worth its traceback
        level = logging.INFO if isinstance(error, AcpError) else logging.WARNING
        _log.log(level, "The tool call %r failed; the turn goes on", self.title, exc_info=error)
        if not self._final:
            self._final = True
            content = [Content(content=TextContent(text=str(error)))]
            self._send(ToolCallUpdate(tool_call_id=self.id, status="failed", content=content))

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

        ``diff`` is ``(path, old_text, new_text)`` (``old_text`` ``None`` for a new file). A final
        status (``completed``, ``failed``) is kept when the ``async with`` block ends.
        """
        content: list[ToolCallContent] = []
        if text is not None:
            content.append(Content(content=TextContent(text=text)))
        if diff is not None:
            path, old, new = diff
            content.append(Diff(path=str(self._turn._absolute(path)), old_text=old, new_text=new))
        if title is not None:
            self.title = title
        self._final = self._final or status in ("completed", "failed")
        changed = _given(status=status, title=title, content=content or None, raw_output=raw_output)
        await self._turn.update(ToolCallUpdate(tool_call_id=self.id, **changed))

    async def show_terminal(self, terminal_id: str) -> None:
        """Show the client's terminal ``terminal_id`` as this call's content (its output, live)."""
        await self._turn.update(
            ToolCallUpdate(tool_call_id=self.id, content=[Terminal(terminal_id=terminal_id)])
        )

    def _send(self, update: SessionUpdate) -> None:
        turn = self._turn
        if not turn.cx.closed:
            turn._sent.append(update)
            turn.cx.send_notification(SessionNotification(session_id=turn.session_id, update=update))


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


def _given(**fields: Any) -> dict[str, Any]:
    """The fields that have a value: the others stay unset rather than null on the wire."""
    return {name: value for name, value in fields.items() if value is not None}
