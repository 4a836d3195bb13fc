"""A client for driving ``acpio testy`` in a real subprocess, and a record of the wire.

:func:`start_testy` spawns ``python -m acpio testy [flags]`` with :class:`~acpio.transports.AcpAgent`,
connects an acpio ``Client`` builder whose handlers (:class:`FakeClient`) answer testy's requests
(files under a root directory, a fake terminal that records what it was asked, permission with a
chosen answer) and records every frame both ways, decoded, in order (:class:`Wire`, the observer of
a :class:`~acpio.transports.Tap` on the agent's transport).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from acpio import Client
from acpio.errors import InvalidParams, RequestError, ResourceNotFound
from acpio.jsonrpc import Builder, Connection, Responder
from acpio.schema import (
    CancelledPermissionOutcome,
    ClientCapabilities,
    CreateTerminalRequest,
    CreateTerminalResponse,
    FileSystemCapabilities,
    InitializeRequest,
    InitializeResponse,
    KillTerminalRequest,
    KillTerminalResponse,
    NewSessionRequest,
    PromptRequest,
    PromptResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    SessionNotification,
    TerminalExitStatus,
    TerminalOutputRequest,
    TerminalOutputResponse,
    TextContent,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from acpio.session import SessionConnection
from acpio.transports import AcpAgent, Direction, OversizedFrame, Tap

#: Seconds any single wait may take; generous, for a busy 2-core machine.
TIMEOUT = 20

TESTY = [sys.executable, "-m", "acpio", "testy"]

#: What the test client advertises by default: files and terminals.
FULL_CLIENT = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)

Message = dict[str, Any]


class Wire:
    """Every frame the client sent and received, decoded, in order: the observer of a :class:`Tap`.

    Also checks that every line testy writes on stdout is a JSON-RPC message.
    """

    def __init__(self) -> None:
        self.frames: list[tuple[Direction, Message]] = []
        self.not_protocol: list[str] = []
        self._changed = asyncio.Event()

    def __call__(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        if isinstance(frame, OversizedFrame):
            self.not_protocol.append(repr(frame))
            return
        try:
            message = orjson.loads(frame)
        except orjson.JSONDecodeError:
            self.not_protocol.append(frame.decode(errors="replace"))
            return
        if direction is Direction.INCOMING and (type(message) is not dict or message.get("jsonrpc") != "2.0"):
            self.not_protocol.append(frame.decode())
        self.frames.append((direction, message))
        self._changed.set()

    def mark(self) -> int:
        """A position to read the wire from later."""
        return len(self.frames)

    def received(self, since: int = 0) -> list[Message]:
        """What testy sent since ``since``."""
        return [m for d, m in self.frames[since:] if d is Direction.INCOMING]

    def sent(self, since: int = 0) -> list[Message]:
        """What the client sent since ``since``."""
        return [m for d, m in self.frames[since:] if d is Direction.OUTGOING]

    def updates(self, since: int = 0) -> list[Message]:
        """The ``update`` of every ``session/update`` testy sent since ``since``."""
        return [m["params"]["update"] for m in self.received(since) if m.get("method") == "session/update"]

    def requests(self, since: int = 0) -> list[Message]:
        """The requests testy sent since ``since``."""
        return [m for m in self.received(since) if "method" in m and "id" in m]

    def text(self, since: int = 0, kind: str = "agent_message_chunk") -> str:
        """The text of the ``kind`` chunks since ``since``, joined."""
        return "".join(u["content"]["text"] for u in self.updates(since) if u["sessionUpdate"] == kind)

    async def wait_for(self, predicate: Callable[[Message], bool], since: int = 0) -> Message:
        """Wait until testy sends a message matching ``predicate``; returns it."""
        async with asyncio.timeout(TIMEOUT):
            while True:
                for message in self.received(since):
                    if predicate(message):
                        return message
                self._changed.clear()
                await self._changed.wait()


@dataclass
class FakeClient:
    """The client's side of testy's requests.

    Files live under ``root`` (paths outside it are refused); terminals are fake: ``false`` exits
    with status 1, ``die`` is killed by SIGKILL, anything else prints its own command line and exits
    0. ``permission`` is the option id picked (or ``"cancelled"``). Methods in ``hold`` are not
    answered: their responders wait in ``held`` until a test answers them.
    """

    root: Path
    permission: str = "allow-once"
    hold: set[str] = field(default_factory=set)
    held: dict[str, Responder[Any]] = field(default_factory=dict)
    terminals: list[CreateTerminalRequest] = field(default_factory=list)
    released: list[str] = field(default_factory=list)

    def reset(self) -> None:
        """Back to answering everything, allowing permission."""
        self.permission = "allow-once"
        self.hold.clear()
        self.held.clear()
        self.terminals.clear()
        self.released.clear()

    def _held(self, method: str, responder: Responder[Any]) -> bool:
        if method not in self.hold:
            return False
        self.held[method] = responder
        return True

    def _path(self, path: str) -> Path:
        if not Path(path).is_absolute():
            raise InvalidParams(message=f"{path} is not an absolute path")
        resolved = Path(path).resolve()
        if not resolved.is_relative_to(self.root):
            raise InvalidParams(message=f"{path} is outside the allowed directory {self.root}")
        return resolved

    async def read_text_file(self, req: ReadTextFileRequest, responder: Responder[Any]) -> Any:
        if self._held("fs/read_text_file", responder):
            return None
        path = self._path(req.path)
        try:
            return ReadTextFileResponse(content=path.read_text())
        except FileNotFoundError:
            raise ResourceNotFound(message=f"{req.path}: no such file") from None

    async def write_text_file(self, req: WriteTextFileRequest) -> WriteTextFileResponse:
        self._path(req.path).write_text(req.content)
        return WriteTextFileResponse()

    async def request_permission(self, req: RequestPermissionRequest, responder: Responder[Any]) -> Any:
        if self._held("session/request_permission", responder):
            return None
        if self.permission == "cancelled":
            return RequestPermissionResponse(outcome=CancelledPermissionOutcome())
        return RequestPermissionResponse(outcome=SelectedPermissionOutcome(option_id=self.permission))

    def _terminal(self, terminal_id: str) -> CreateTerminalRequest:
        return self.terminals[int(terminal_id.removeprefix("term-")) - 1]

    def _exit(self, terminal_id: str) -> TerminalExitStatus:
        command = self._terminal(terminal_id).command
        if command == "false":
            return TerminalExitStatus(exit_code=1)
        if command == "die":
            return TerminalExitStatus(signal="SIGKILL")
        return TerminalExitStatus(exit_code=0)

    async def create_terminal(self, req: CreateTerminalRequest) -> CreateTerminalResponse:
        self.terminals.append(req)
        return CreateTerminalResponse(terminal_id=f"term-{len(self.terminals)}")

    async def wait_for_terminal_exit(self, req: WaitForTerminalExitRequest, responder: Responder[Any]) -> Any:
        if self._held("terminal/wait_for_exit", responder):
            return None
        status = self._exit(req.terminal_id)
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def terminal_output(self, req: TerminalOutputRequest) -> TerminalOutputResponse:
        terminal = self._terminal(req.terminal_id)
        output = " ".join([terminal.command, *(terminal.args or [])]) + "\n"
        return TerminalOutputResponse(output=output, truncated=False, exit_status=self._exit(req.terminal_id))

    async def release_terminal(self, req: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        self.released.append(req.terminal_id)
        return ReleaseTerminalResponse()

    async def kill_terminal(self, req: KillTerminalRequest) -> KillTerminalResponse:
        return KillTerminalResponse()

    async def session_update(self, note: SessionNotification) -> None:
        """Claimed (read from the wire record), so that the client does not park it."""

    def builder(self) -> Builder:
        app = Client.builder(name="testy-test-client")
        for handler in (
            self.read_text_file,
            self.write_text_file,
            self.request_permission,
            self.create_terminal,
            self.wait_for_terminal_exit,
            self.terminal_output,
            self.release_terminal,
            self.kill_terminal,
        ):
            app.on_request(handler)
        app.on_notification(self.session_update)
        return app


@dataclass
class Testy:
    """A running testy and the client connected to it."""

    __test__ = False

    cx: SessionConnection
    wire: Wire
    client: FakeClient
    initialized: InitializeResponse | None = None

    async def request(self, message: Any, params: Any = None) -> Any:
        """Send a request (typed, or a method name with params) and wait for its result."""
        async with asyncio.timeout(TIMEOUT):
            if isinstance(message, str):
                return await self.cx.send_request(message, params)
            return await self.cx.send_request(message)

    async def error(self, message: Any, params: Any = None) -> RequestError:
        """Send a request that must fail; returns the error."""
        try:
            result = await self.request(message, params)
        except RequestError as error:
            return error
        raise AssertionError(f"expected an error, got {result!r}")

    async def new_session(self, cwd: Path | None = None) -> str:
        response = await self.request(NewSessionRequest(cwd=str(cwd or self.client.root), mcp_servers=[]))
        return str(response.session_id)

    def send_prompt(self, session_id: str, text: str) -> Any:
        """Send a prompt without waiting: the ``SentRequest``."""
        return self.cx.send_request(PromptRequest(session_id=session_id, prompt=[TextContent(text=text)]))

    async def prompt(self, session_id: str, text: str) -> tuple[str, int]:
        """Run one prompt; its stop reason and the wire mark from before it was sent."""
        mark = self.wire.mark()
        response: PromptResponse = await self.request(
            PromptRequest(session_id=session_id, prompt=[TextContent(text=text)])
        )
        return str(response.stop_reason), mark


@asynccontextmanager
async def start_testy(
    root: Path, *flags: str, capabilities: ClientCapabilities | None = FULL_CLIENT
) -> AsyncIterator[Testy]:
    """Spawn testy with ``flags``, connect the fake client, ``initialize`` (unless ``capabilities`` is None).

    ``root`` (resolved) is the only directory the client lets testy read and write.
    """
    wire = Wire()
    client = FakeClient(root)
    started: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    finished = asyncio.Event()

    async def main(cx: Connection) -> None:
        started.set_result(cx)
        await finished.wait()

    agent = Tap(await AcpAgent([*TESTY, *flags]).open(), wire)
    task = asyncio.create_task(client.builder().connect_with(agent, main))
    async with asyncio.timeout(TIMEOUT):
        await asyncio.wait((started, task), return_when=asyncio.FIRST_COMPLETED)
    if not started.done():
        task.result()  # raises why the connection failed
    cx = started.result()
    assert isinstance(cx, SessionConnection)
    testy = Testy(cx, wire, client)
    try:
        if capabilities is not None:
            testy.initialized = await testy.request(
                InitializeRequest(protocol_version=1, client_capabilities=capabilities)
            )
        yield testy
    finally:
        finished.set()
        async with asyncio.timeout(TIMEOUT):
            await task
    assert wire.not_protocol == [], f"testy wrote non-protocol lines on stdout: {wire.not_protocol}"
