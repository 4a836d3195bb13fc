"""A scripted agent and client in the trait style, and a harness that connects them in-process."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from acpio import testing
from acpio.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    CancelNotification,
    CreateTerminalRequest,
    CreateTerminalResponse,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
    NewSessionResponse,
    PermissionOption,
    PermissionOptionKind,
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
    StopReason,
    TerminalExitStatus,
    TerminalOutputRequest,
    TerminalOutputResponse,
    TextContent,
    ToolCallUpdate,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from acpio.traits import AgentSideConnection, AgentTrait, ClientSideConnection, ClientTrait
from acpio.transports import Channel
from acpio.versions import select_version

TIMEOUT = 5


def text_of(prompt: PromptRequest) -> str:
    return " ".join(block.text for block in prompt.prompt if isinstance(block, TextContent))


def chunk(session_id: str, text: str) -> SessionNotification:
    return SessionNotification(
        session_id=session_id, update=AgentMessageChunk(content=TextContent(text=text))
    )


class TurnAgent(AgentTrait):
    """Answers prompts by script: ``echo <words>``, ``tools <path>``, ``wait`` (until cancelled)."""

    #: The protocol version ``initialize`` answers; ``None`` negotiates.
    answer_version: int | None = None

    def __init__(self, client: AgentSideConnection) -> None:
        self.client = client
        self.sessions = 0
        self.cancelled: dict[str, asyncio.Event] = {}
        self.ext_notes: list[tuple[str, dict[str, Any]]] = []

    async def initialize(self, params: InitializeRequest) -> InitializeResponse:
        version = self.answer_version or select_version(params.protocol_version, (1,))
        return InitializeResponse(
            protocol_version=version, agent_capabilities=AgentCapabilities(load_session=True)
        )

    async def new_session(self, params: NewSessionRequest) -> NewSessionResponse:
        self.sessions += 1
        return NewSessionResponse(session_id=f"s-{self.sessions}")

    async def prompt(self, params: PromptRequest) -> PromptResponse:
        sid = params.session_id
        self.cancelled[sid] = cancelled = asyncio.Event()  # before any await: see cancel()
        command, _, rest = text_of(params).partition(" ")
        if command == "echo":
            for word in rest.split():
                await self.client.session_update(chunk(sid, word))
        elif command == "tools":
            await self.use_tools(sid, rest)
        elif command == "wait":
            await self.client.session_update(chunk(sid, "waiting"))
            await cancelled.wait()
        if cancelled.is_set():
            return PromptResponse(stop_reason=StopReason.CANCELLED)
        return PromptResponse(stop_reason=StopReason.END_TURN)

    async def use_tools(self, sid: str, path: str) -> None:
        options = [
            PermissionOption(option_id="allow", name="Allow", kind=PermissionOptionKind.ALLOW_ONCE),
            PermissionOption(option_id="deny", name="Deny", kind=PermissionOptionKind.REJECT_ONCE),
        ]
        tool_call = ToolCallUpdate(tool_call_id="call-1", title=f"Edit {path}")
        permission = await self.client.request_permission(
            RequestPermissionRequest(session_id=sid, tool_call=tool_call, options=options)
        )
        assert isinstance(permission, RequestPermissionResponse)
        outcome = permission.outcome
        assert isinstance(outcome, SelectedPermissionOutcome), outcome
        await self.client.session_update(chunk(sid, f"permission:{outcome.option_id}"))
        read = await self.client.read_text_file(ReadTextFileRequest(session_id=sid, path=path))
        assert isinstance(read, ReadTextFileResponse)
        written = await self.client.write_text_file(
            WriteTextFileRequest(session_id=sid, path=path, content=read.content.upper())
        )
        assert isinstance(written, WriteTextFileResponse)
        terminal = await self.client.create_terminal(
            CreateTerminalRequest(session_id=sid, command="echo", args=["hi"])
        )
        assert isinstance(terminal, CreateTerminalResponse)
        tid = terminal.terminal_id
        exited = await self.client.wait_for_terminal_exit(
            WaitForTerminalExitRequest(session_id=sid, terminal_id=tid)
        )
        assert isinstance(exited, WaitForTerminalExitResponse)
        output = await self.client.terminal_output(TerminalOutputRequest(session_id=sid, terminal_id=tid))
        assert isinstance(output, TerminalOutputResponse)
        released = await self.client.release_terminal(ReleaseTerminalRequest(session_id=sid, terminal_id=tid))
        assert isinstance(released, ReleaseTerminalResponse)
        await self.client.session_update(chunk(sid, f"terminal:{output.output.strip()}:{exited.exit_code}"))

    async def cancel(self, params: CancelNotification) -> None:
        event = self.cancelled.get(params.session_id)
        if event is not None:
            event.set()

    async def ext_method(self, method: str, params: dict[str, Any]) -> Any:
        if method == "test/ping":
            return {"pong": params}
        return await super().ext_method(method, params)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.ext_notes.append((method, params))


class TurnClient(ClientTrait):
    """Records updates, allows every tool call, serves files from a dict, fakes one terminal."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, str]] = []
        self.waiting = asyncio.Event()
        self.files: dict[str, str] = {"/work/a.txt": "hello"}
        self.calls: list[str] = []
        self.ext_notes: list[tuple[str, dict[str, Any]]] = []

    async def session_update(self, params: SessionNotification) -> None:
        update = params.update
        assert isinstance(update, AgentMessageChunk)
        assert isinstance(update.content, TextContent)
        self.updates.append((params.session_id, update.content.text))
        if update.content.text == "waiting":
            self.waiting.set()

    async def request_permission(self, params: RequestPermissionRequest) -> RequestPermissionResponse:
        self.calls.append("request_permission")
        return RequestPermissionResponse(
            outcome=SelectedPermissionOutcome(option_id=params.options[0].option_id)
        )

    async def read_text_file(self, params: ReadTextFileRequest) -> ReadTextFileResponse:
        self.calls.append("read_text_file")
        return ReadTextFileResponse(content=self.files[params.path])

    async def write_text_file(self, params: WriteTextFileRequest) -> WriteTextFileResponse:
        self.calls.append("write_text_file")
        self.files[params.path] = params.content
        return WriteTextFileResponse()

    async def create_terminal(self, params: CreateTerminalRequest) -> CreateTerminalResponse:
        self.calls.append(f"create_terminal:{params.command}")
        return CreateTerminalResponse(terminal_id="t-1")

    async def wait_for_terminal_exit(self, params: WaitForTerminalExitRequest) -> WaitForTerminalExitResponse:
        self.calls.append("wait_for_terminal_exit")
        return WaitForTerminalExitResponse(exit_code=0)

    async def terminal_output(self, params: TerminalOutputRequest) -> TerminalOutputResponse:
        self.calls.append("terminal_output")
        return TerminalOutputResponse(
            output="hi\n", truncated=False, exit_status=TerminalExitStatus(exit_code=0)
        )

    async def release_terminal(self, params: ReleaseTerminalRequest) -> None:  # type: ignore[override]
        # Returning None is allowed when the result has no required field: {} is answered.
        self.calls.append("release_terminal")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.ext_notes.append((method, params))


@asynccontextmanager
async def connected(
    agent: Any = TurnAgent, client: ClientTrait | None = None
) -> AsyncIterator[tuple[AgentSideConnection, ClientSideConnection]]:
    """An agent-side and a client-side connection joined by an in-process channel, both served."""
    ours, theirs = Channel.duplex()
    agent_side = AgentSideConnection(agent, theirs)
    client_side = ClientSideConnection(client if client is not None else TurnClient(), ours)
    async with asyncio.timeout(TIMEOUT), agent_side, client_side:
        yield agent_side, client_side


class RawPeer(testing.WirePeer):
    """A raw peer that adds ``"jsonrpc": "2.0"`` to what it sends and numbers its requests."""

    next_id = 0

    def send(self, message: Any) -> None:
        super().send({"jsonrpc": "2.0", **message})

    async def request(self, method: str, params: Any = None) -> Any:
        """Send a request; return the next frame, which must answer it."""
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        answer = await self.recv()
        assert answer.get("id") == self.next_id, answer
        return answer


@asynccontextmanager
async def raw_peer_of(make: Callable[[Channel], Any]) -> AsyncIterator[RawPeer]:
    """A connection built by ``make(channel_end)``, served, with a :class:`RawPeer` at the other end."""
    ours, theirs = Channel.duplex()
    async with asyncio.timeout(TIMEOUT), make(theirs):
        yield RawPeer(ours)
        await ours.aclose()
