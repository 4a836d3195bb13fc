"""The agent's tools: what the model may call, each reported to the client as an ACP tool call.

``read_file``, ``write_file`` and ``edit_file`` go through the client's file system when it offers
one (unsaved editor buffers included), else straight to disk; either way only inside the session's
directories. ``run_command`` runs in a terminal of the client (offered only to clients with
terminals). ``update_plan`` shows the plan. Each MCP tool of the session's servers is offered as
``<server>__<tool>``. The mode decides which tools are offered and which ask permission first.

Every tool call carries ``_meta`` ``{"acpio/tool": name}`` and ends with the text the model got in
``rawOutput``, so that a session loaded later gives the model the same conversation.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from acpio.agents.coder.model import TextPart, ToolCall, ToolResultMessage, ToolSpec
from acpio.agents.coder.settings import ModeSpec
from acpio.app import ActiveToolCall, ToolKindName, Turn
from acpio.errors import RequestError
from acpio.schema import PlanEntry

if TYPE_CHECKING:
    from mcp import Client as McpClient

    from acpio.jsonrpc import Connection

__all__ = ["TOOL_META", "McpServers", "ToolBox", "builtin_specs"]

_log = logging.getLogger("acpio.agents.coder")

#: The ``_meta`` key of a tool call that names the model's tool.
TOOL_META = "acpio/tool"
#: What the model gets of a file or an output at most, in characters.
MAX_RESULT = 100_000

_PATH = {
    "type": "string",
    "description": "A path relative to the project's directory (or absolute inside it)",
}

READ = ToolSpec(
    "read_file",
    "Read a text file of the project. Returns its text (or `limit` lines from line `line`, 1-based).",
    {
        "type": "object",
        "properties": {"path": _PATH, "line": {"type": "integer"}, "limit": {"type": "integer"}},
        "required": ["path"],
    },
)
WRITE = ToolSpec(
    "write_file",
    "Create or replace a text file of the project with `content`.",
    {
        "type": "object",
        "properties": {"path": _PATH, "content": {"type": "string"}},
        "required": ["path", "content"],
    },
)
EDIT = ToolSpec(
    "edit_file",
    "Replace `old_text` (which must occur exactly once) by `new_text` in a text file of the project.",
    {
        "type": "object",
        "properties": {"path": _PATH, "old_text": {"type": "string"}, "new_text": {"type": "string"}},
        "required": ["path", "old_text", "new_text"],
    },
)
RUN = ToolSpec(
    "run_command",
    "Run a shell command in the project's directory; returns its output and exit status.",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
PLAN = ToolSpec(
    "update_plan",
    "Show the user your plan: the whole list of steps each time, with their status.",
    {
        "type": "object",
        "properties": {
            "entries": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string"},
                        "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]},
                    },
                    "required": ["content", "status"],
                },
            }
        },
        "required": ["entries"],
    },
)


def builtin_specs(mode: ModeSpec, *, terminal: bool) -> list[ToolSpec]:
    """The built-in tools a mode offers (commands only where a terminal can run them)."""
    specs = [READ, PLAN]
    if mode.edit != "deny":
        specs += [WRITE, EDIT]
    if mode.execute != "deny" and terminal:
        specs.append(RUN)
    return specs


class _Failed(Exception):
    """A tool call that failed in a way the model should hear of (the message is what it gets)."""


@dataclass
class _Mcp:
    client: McpClient
    tools: list[ToolSpec]


class McpServers:
    """The MCP servers a session declared, connected for as long as the session is open.

    Each server is connected by a task of its own (the ``mcp`` client's task groups must be left
    by the task that entered them); :meth:`aclose` ends them. A server that cannot be reached is
    left out, and :attr:`problems` says why; so is one still connecting after ``connect_timeout``
    seconds (its tools come in a later turn if it gets there).
    """

    def __init__(
        self,
        cx: Connection,
        declarations: Sequence[Mapping[str, Any]],
        cwd: Path,
        *,
        connect_timeout: float = 30.0,
    ) -> None:
        self._servers: dict[str, _Mcp] = {}
        #: A line per server that failed to connect.
        self.problems: list[str] = []
        self.connect_timeout = connect_timeout
        self._stop = asyncio.Event()
        self._ready: list[tuple[str, asyncio.Event]] = []
        self._late: set[str] = set()
        self._tasks = [self._start(cx, d, cwd) for d in declarations]

    def _start(self, cx: Connection, declaration: Mapping[str, Any], cwd: Path) -> asyncio.Task[None]:
        ready = asyncio.Event()
        self._ready.append((str(declaration.get("name", "mcp")), ready))
        return asyncio.create_task(self._serve(cx, declaration, cwd, ready))

    async def _serve(
        self, cx: Connection, declaration: Mapping[str, Any], cwd: Path, ready: asyncio.Event
    ) -> None:
        name = str(declaration.get("name", "mcp"))
        try:
            from acpio.mcp import connect_declared

            async with AsyncExitStack() as stack:
                client = await stack.enter_async_context(connect_declared(cx, declaration, cwd=cwd))
                listed = await client.list_tools()
                tools = [
                    ToolSpec(
                        f"{name}__{t.name}", t.description or t.name, t.input_schema or {"type": "object"}
                    )
                    for t in listed.tools
                ]
                self._servers[name] = _Mcp(client, tools)
                ready.set()
                await self._stop.wait()
        except ImportError as exc:
            self.problems.append(f"MCP server {name!r} is unavailable: pip install 'acpio[mcp]' ({exc})")
        except Exception as exc:  # a broken server costs its tools, not the session
            _log.warning("MCP server %r: %s", name, exc)
            self.problems.append(f"MCP server {name!r} is unavailable: {exc}")
        finally:
            self._servers.pop(name, None)
            ready.set()

    async def specs(self) -> list[ToolSpec]:
        """The tools of the connected servers.

        The first time, it waits (``connect_timeout`` at most) until each server is connected or
        failed; a server still connecting then is named in :attr:`problems` and not waited for again.
        """
        waiting = [
            (name, ready) for name, ready in self._ready if not ready.is_set() and name not in self._late
        ]
        if waiting:
            waits = [asyncio.ensure_future(ready.wait()) for _, ready in waiting]
            try:
                await asyncio.wait(waits, timeout=self.connect_timeout)
            finally:
                for wait in waits:
                    wait.cancel()
            for name, ready in waiting:
                if not ready.is_set():
                    self._late.add(name)
                    self.problems.append(
                        f"MCP server {name!r} did not finish connecting within {self.connect_timeout:g} s "
                        "(does its command speak MCP?): its tools are left out until it does"
                    )
        return [spec for server in self._servers.values() for spec in server.tools]

    async def call(self, qualified: str, arguments: Mapping[str, Any]) -> tuple[str, bool]:
        """Call ``<server>__<tool>``: its text output, and whether it failed."""
        server, _, tool = qualified.partition("__")
        connected = self._servers.get(server)
        if connected is None:
            raise _Failed(f"the MCP server {server!r} is not connected")
        try:
            result = await connected.client.call_tool(tool, dict(arguments))
        except Exception as exc:  # the server's failure (an MCP error, a broken pipe) is the model's to hear
            raise _Failed(f"the MCP server {server!r} failed: {exc}") from exc
        texts = [
            getattr(block, "text", None) or f"[{getattr(block, 'type', 'content')}]"
            for block in result.content
        ]
        return "\n".join(texts), bool(result.is_error)

    async def aclose(self) -> None:
        """Disconnect every server (a stdio server's process is stopped)."""
        self._stop.set()
        for (_, ready), task in zip(self._ready, self._tasks, strict=True):
            if not ready.is_set():
                task.cancel()  # still connecting: it would never see the stop
        await asyncio.gather(*self._tasks, return_exceptions=True)


class ToolBox:
    """The tools of one turn: which are offered, and running a call as an ACP tool call."""

    def __init__(self, turn: Turn, mode: ModeSpec, roots: Sequence[Path], mcp: McpServers | None) -> None:
        self.turn = turn
        self.mode = mode
        self.roots = [root.resolve() for root in roots]
        self.mcp = mcp

    async def specs(self) -> list[ToolSpec]:
        """What the model is offered in this mode."""
        specs = builtin_specs(self.mode, terminal=self._terminals)
        return specs + (await self.mcp.specs() if self.mcp is not None else [])

    async def run(self, call: ToolCall) -> ToolResultMessage:
        """Run one call of the model, reported as a tool call; the result the model gets."""
        try:
            arguments = json.loads(call.arguments or "{}")
            if not isinstance(arguments, dict):
                raise ValueError("the arguments are not a JSON object")
        except ValueError as exc:
            return _result(call, f"{call.name}: bad arguments ({exc}); send a JSON object", True)
        title, kind, locations = self._describe(call.name, arguments)
        meta = {TOOL_META: call.name}
        async with self.turn.tool_call(
            title, kind=kind, locations=locations, raw_input=arguments, meta=meta
        ) as shown:
            try:
                text = await self._run(call.name, arguments, shown)
            except (_Failed, RequestError, OSError, UnicodeDecodeError, KeyError, TypeError) as exc:
                message = _failure(exc)
                await shown.update(status="failed", text=message, raw_output=message)
                return _result(call, message, True)
            await shown.update(status="completed", raw_output=text)
            return _result(call, text, False)

    def _describe(self, name: str, arguments: Mapping[str, Any]) -> tuple[str, ToolKindName, list[Path]]:
        path = arguments.get("path")
        where = [self.turn.cwd / str(path)] if isinstance(path, str) else []
        match name:
            case "read_file":
                return f"Read {path}", "read", where
            case "write_file":
                return f"Write {path}", "edit", where
            case "edit_file":
                return f"Edit {path}", "edit", where
            case "run_command":
                return f"Run `{arguments.get('command')}`", "execute", []
            case "update_plan":
                return "Update the plan", "think", []
            case _:
                return f"{name.replace('__', ': ', 1)}", "other", []

    async def _run(self, name: str, arguments: Mapping[str, Any], shown: ActiveToolCall) -> str:
        match name:
            case "read_file":
                text = await self._read(self._inside(arguments["path"]))
                line, limit = arguments.get("line"), arguments.get("limit")
                if isinstance(line, int) or isinstance(limit, int):
                    lines = text.splitlines(keepends=True)
                    start = max(1, line if isinstance(line, int) else 1) - 1
                    text = "".join(lines[start : start + limit if isinstance(limit, int) else None])
                return text[:MAX_RESULT]
            case "write_file" | "edit_file":
                if self.mode.edit == "deny":
                    raise _Failed(f"{name} is not allowed in the mode {self.mode.name!r}")
                path = self._inside(arguments["path"])
                old = await self._read(path) if name == "edit_file" or path.exists() else None
                new = (
                    str(arguments["content"]) if name == "write_file" else _replace_once(old or "", arguments)
                )
                await shown.update(diff=(path, old, new))
                await self._permit(shown, self.mode.edit)
                await self._write(path, new)
                return f"{'Edited' if name == 'edit_file' else 'Wrote'} {arguments['path']}"
            case "run_command":
                if self.mode.execute == "deny" or not self._terminals:
                    raise _Failed(f"run_command is not available in the mode {self.mode.name!r}")
                await self._permit(shown, self.mode.execute)
                result = await self.turn.run_command("sh", "-c", str(arguments["command"]), call=shown)
                status = (
                    f"exit status {result.exit_code}" if result.signal is None else f"signal {result.signal}"
                )
                return f"{result.output[-MAX_RESULT:]}\n[{status}]"
            case "update_plan":
                entries = [
                    PlanEntry(
                        content=str(e["content"]), priority="medium", status=str(e.get("status", "pending"))
                    )
                    for e in arguments["entries"]
                ]
                await self.turn.plan(entries)
                return "The plan is shown to the user."
            case _ if self.mcp is not None and "__" in name:
                text, failed = await self.mcp.call(name, arguments)
                if failed:
                    raise _Failed(text)
                return text[:MAX_RESULT]
        raise _Failed(f"there is no tool {name!r}")

    async def _permit(self, shown: ActiveToolCall, permission: str) -> None:
        if permission == "ask" and not await self.turn.ask_permission(shown, allow="Allow", deny="Reject"):
            raise _Failed("the user rejected this call; do not try it again unless they ask")

    def _inside(self, raw: Any) -> Path:
        path = (self.turn.cwd / str(raw)).resolve()
        if not any(path.is_relative_to(root) for root in self.roots):
            roots = ", ".join(str(r) for r in self.roots)
            raise _Failed(f"{raw} is outside the session's directories ({roots})")
        return path

    @property
    def _terminals(self) -> bool:
        """Whether commands can run: in the client's terminals on v1, as agent terminals on v2."""
        return self.turn.protocol_version == 2 or self.turn.client.terminal

    async def _read(self, path: Path) -> str:
        # v2 has no client files: the agent reads and writes them itself (``path`` is confined already)
        if self.turn.protocol_version == 1 and self.turn.client.read_text_file:
            return await self.turn.read_file(path)
        return await asyncio.to_thread(path.read_text, encoding="utf-8")

    async def _write(self, path: Path, text: str) -> None:
        if self.turn.protocol_version == 1 and self.turn.client.write_text_file:
            await self.turn.write_file(path, text)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        await asyncio.to_thread(path.write_text, text, encoding="utf-8")


def _replace_once(text: str, arguments: Mapping[str, Any]) -> str:
    old, new = str(arguments["old_text"]), str(arguments["new_text"])
    count = text.count(old) if old else 0
    if count != 1:
        raise _Failed(
            f"old_text occurs {count} times in {arguments['path']}: give text that occurs exactly once"
        )
    return text.replace(old, new, 1)


def _failure(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"a required argument is missing: {exc}"
    if isinstance(exc, FileNotFoundError):
        return f"no such file: {exc.filename}"
    return str(exc) or type(exc).__name__


def _result(call: ToolCall, text: str, failed: bool) -> ToolResultMessage:
    return ToolResultMessage(call.id, call.name, (TextPart(text),), is_error=failed)
