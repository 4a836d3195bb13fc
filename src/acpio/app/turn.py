"""One prompt turn of an :class:`~acpio.app.AgentApp`: what a prompt function uses to talk to the client.

A :class:`Turn` is handed to the app's prompt function. It runs in a task of its own, never in the
connection's dispatch loop, so awaiting the client (a permission, a file) is always allowed, and
what it sends for its session goes out in the order it was sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, TypeVar, overload

from acpio import schema as acp
from acpio.app.agent_terminals import AgentTerminals, run_agent_terminal
from acpio.app.client_requests import (
    CommandResult,
    ask_permission,
    ask_permission_v2,
    connect_mcp,
    run_in_terminal,
)
from acpio.app.first_answer import Askers
from acpio.app.history import Exchange
from acpio.app.menu import CommandCall, Menu, OptionValue, SessionSettings
from acpio.app.raw_turn import RawPrompt
from acpio.app.tool_calls import (
    ActiveToolCall,
    OnToolError,
    ReportingToolCall,
    SessionUpdates,
    ToolKindName,
    ToolStatusName,
)
from acpio.app.turn_beside import TurnBeside
from acpio.app.update_templates import THOUGHT, PlanTemplate, given
from acpio.app.updates_v2 import V2Updates
from acpio.capabilities import ClientFeatures
from acpio.errors import NotInProtocolVersion
from acpio.jsonrpc import Connection

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

#: ``await change(config_id, value)``: the app's one way to change a session's mode (``config_id``
#: ``None``) or a config option, and keep it (see :class:`~acpio.app.AgentApp`).
SettingChange: TypeAlias = Callable[[str | None, OptionValue], Awaitable[None]]


class Turn(TurnBeside):
    """One ``session/prompt`` being answered: the prompt, and the ways to answer it.

    Stream with :meth:`say` and :meth:`think`, show a :meth:`plan`, report work with
    :meth:`tool_call`, ask with :meth:`ask_permission`, and use the client's files with
    :meth:`read_file` and :meth:`write_file`. Those and terminals are offered only by some clients:
    ask :attr:`client` first (``if turn.client.write_text_file:``) and offer the user only what
    the client can do. When the client cancels the turn (``session/cancel``), the prompt function
    is cancelled where it waits and the turn ends with ``cancelled``.

    The same prompt function serves ACP v1 and v2 clients (:attr:`protocol_version` says which):
    each verb writes what its version has. What one version lacks raises
    :class:`~acpio.errors.NotInProtocolVersion` (the client's files on v2, a ``cancelled`` tool
    call on v1...), never silently nothing.
    """

    def __init__(
        self,
        cx: Connection,
        session_id: str,
        cwd: Path,
        prompt: Sequence[acp.ContentBlock],
        client: ClientFeatures,
        settings: SessionSettings,
        menu: Menu,
        history: Sequence[Exchange] = (),
        mcp_servers: Sequence[Mapping[str, Any]] = (),
        *,
        change: SettingChange,
        updates: SessionUpdates | None = None,
        terminals: AgentTerminals | None = None,
        askers: Askers | None = None,
    ) -> None:
        #: The connection to the client.
        self.cx = cx
        #: The session this turn belongs to.
        self.session_id = session_id
        #: The session's working directory (relative paths given to the turn resolve against it).
        self.cwd = cwd
        # a RawPrompt (a plain text prompt, see acpio.app.raw_turn) is kept as its texts until read
        self._raw = prompt if isinstance(prompt, RawPrompt) else None
        self._prompt: list[acp.ContentBlock] | None = None if self._raw is not None else list(prompt)
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
        self._updates = updates if updates is not None else SessionUpdates(cx, session_id, cwd)
        self._terminals = terminals if terminals is not None else AgentTerminals()
        self._askers = askers if askers is not None else Askers(cx, session_id)
        #: The MCP servers the client declared for the session (their JSON objects): reach one
        #: with :meth:`mcp`.
        self.mcp_servers: tuple[Mapping[str, Any], ...] = tuple(mcp_servers)

    def __repr__(self) -> str:
        return f"<Turn session={self.session_id!r}>"

    @property
    def prompt(self) -> list[acp.ContentBlock]:
        """The prompt's content blocks, as the client sent them."""
        if self._prompt is None:
            assert self._raw is not None
            self._prompt = list(self._raw)
        return self._prompt

    @prompt.setter
    def prompt(self, blocks: list[acp.ContentBlock]) -> None:
        self._prompt = blocks

    @property
    def text(self) -> str:
        """The prompt's text blocks, joined with newlines (other blocks are left out)."""
        if self._prompt is None and self._raw is not None:
            return "\n".join(self._raw.texts)
        return "\n".join(block.text for block in self.prompt if isinstance(block, acp.TextContent))

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

        On v2, which has no modes, the app's modes are the config option ``mode`` (``category:
        "mode"``): the client hears of the change as a ``config_option_update``.

        The change is the session's, as if the client had set it (a stored session keeps it for
        ``session/load``), but the app's :meth:`~acpio.app.AgentApp.on_change` hooks do not run: the
        turn sets what goes with the mode itself. Raises :class:`~acpio.InvalidParams` for a mode
        the session is not offered.
        """
        await self._change(None, mode_id)
        if self._updates.version == 1:
            await self.update(acp.CurrentModeUpdate(current_mode_id=mode_id))
        else:
            await self.update(
                acp.ConfigOptionUpdate(config_options=self._menu.options_state(self._settings, True))
            )

    async def set_option(self, option_id: str, value: OptionValue) -> None:
        """Change a config option, and tell the client (``config_option_update`` with every option).

        Kept like :meth:`set_mode` (no :meth:`~acpio.app.AgentApp.on_change` hook runs). Raises
        :class:`~acpio.InvalidParams` for an unknown option or a value it cannot take.
        """
        await self._change(option_id, value)
        options = self._menu.options_state(self._settings, self._updates.version == 2)
        await self.update(acp.ConfigOptionUpdate(config_options=options))

    # --- streaming --------------------------------------------------------------------------------

    def exchange(self) -> Exchange:
        """The turn as the history keeps it: its prompt, what was said and every update sent so far."""
        prompt = self._raw if self._prompt is None and self._raw is not None else tuple(self.prompt)
        return Exchange(prompt, "".join(self._said), self._updates.sent.snapshot())

    async def think(self, text: str) -> None:
        """Stream a thought (an ``agent_thought_chunk``)."""
        await self._updates.send_text(THOUGHT, text)

    async def plan(self, entries: Sequence[str | acp.PlanEntry]) -> None:
        """Show the plan: each entry a :class:`~acpio.schema.PlanEntry`, or text (pending, medium priority).

        Send the whole plan again to change it: the client replaces what it showed.
        """
        await self._updates.send_template(PlanTemplate(entries))

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
        paths = [self._updates.absolute(p) for p in locations]
        call = ActiveToolCall(self._updates, title, kind, paths, raw_input, dict(meta) if meta else None)
        return ReportingToolCall(call) if on_error == "report" else call

    # --- asking the client ------------------------------------------------------------------------

    async def ask_permission(
        self,
        call: ActiveToolCall,
        *,
        allow: str = "Allow",
        deny: str = "Deny",
        always: bool = False,
        description: str | None = None,
    ) -> bool:
        """Ask the user whether ``call`` may go on; ``True`` if they chose ``allow``.

        ``allow`` and ``deny`` label the two options; with ``always`` they are offered as
        ``allow_always`` and ``reject_always`` (the client may remember the choice). A cancelled
        answer (the client cancelled the turn), or on v2 an outcome it does not know, is ``False``.
        On v2 the request's ``title`` is the call's, its ``subject`` the call, and the session is
        ``requires_action`` until the answer; ``description`` (why it is asked) exists on v2 only.
        """
        if self._updates.version == 1:
            if description is not None:
                raise NotInProtocolVersion(
                    "a permission request's description", 1, "say why before asking (turn.say)"
                )
            return await ask_permission(self._askers, self.session_id, call, allow, deny, always)
        async with self.waiting_for_user():
            return await ask_permission_v2(self.cx, self.session_id, call, allow, deny, always, description)

    async def read_file(self, path: str | Path, *, line: int | None = None, limit: int | None = None) -> str:
        """The text of ``path`` (relative to :attr:`cwd`) as the client has it, unsaved edits included.

        ``line`` (1-based) and ``limit`` read a part. Raises
        :class:`~acpio.capabilities.CapabilityNotAdvertised` when the client does not offer
        ``fs/read_text_file``, and the client's error (a :class:`~acpio.RequestError`) when it refuses.
        v2 has no client files: raises :class:`~acpio.errors.NotInProtocolVersion` there.
        """
        self._v1_only("the client's files (turn.read_file, fs/read_text_file)")
        self.client.require(acp.ReadTextFileRequest.METHOD)
        part = given(line=line, limit=limit)  # an explicit None would be sent as null
        request = acp.ReadTextFileRequest(
            session_id=self.session_id, path=str(self._updates.absolute(path)), **part
        )
        answer: acp.ReadTextFileResponse = await self.cx.send_request(request)
        return answer.content

    async def write_file(self, path: str | Path, content: str) -> None:
        """Write ``content`` to ``path`` (relative to :attr:`cwd`) through the client.

        Raises :class:`~acpio.capabilities.CapabilityNotAdvertised` when the client does not offer
        ``fs/write_text_file``, and the client's error when it refuses. v2 has no client files:
        raises :class:`~acpio.errors.NotInProtocolVersion` there.
        """
        self._v1_only("the client's files (turn.write_file, fs/write_text_file)")
        self.client.require(acp.WriteTextFileRequest.METHOD)
        request = acp.WriteTextFileRequest(
            session_id=self.session_id, path=str(self._updates.absolute(path)), content=content
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

        On v2 (no client terminals) the agent runs the command itself and the client displays it as
        an agent-owned terminal (``terminal_update``, ``terminal_output_chunk``; ``terminal/cancel``
        kills it); the result is the same.
        """
        if isinstance(self._updates, V2Updates):
            where = self._updates.absolute(cwd) if cwd is not None else self.cwd
            return await run_agent_terminal(
                self._updates, self._terminals, [command, *args], where, env, output_limit, call, kill_after
            )
        self.client.require(acp.CreateTerminalRequest.METHOD)
        optional = given(
            args=list(args) or None,
            cwd=str(self._updates.absolute(cwd)) if cwd is not None else str(self.cwd),
            env=[acp.EnvVariable(name=k, value=v) for k, v in env.items()] if env else None,
            output_byte_limit=output_limit,
        )
        create = acp.CreateTerminalRequest(session_id=self.session_id, command=command, **optional)
        return await run_in_terminal(self.cx, create, call, kill_after)

    def mcp(self, name: str) -> AbstractAsyncContextManager[McpClient]:
        """An ``mcp`` client for the MCP server the client declared as ``name``.

        ``async with turn.mcp("notes") as notes: await notes.call_tool("add", {...})``. An ``acp``
        server (hosted by the client or a proxy) is reached over this connection, an ``http`` one at
        its URL; the app must be made with ``AgentApp(..., mcp=True)`` to be offered them. Needs the
        ``mcp`` extra (``pip install acpio[mcp]``). Raises ``LookupError`` naming the declared
        servers when none is called ``name``.
        """
        return connect_mcp(self.cx, self.mcp_servers, name)

    def _v1_only(self, feature: str) -> None:
        if self._updates.version != 1:
            raise NotInProtocolVersion(
                feature,
                self._updates.version,
                "on v2 the agent reads and writes files itself; client-side tools come as MCP servers "
                "in the session's mcpServers (turn.mcp)",
            )
