"""An in-process test agent, a raw-wire peer and a raw conductor for the session tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from acpio import testing
from acpio.jsonrpc import Builder, Connection
from acpio.roles import SUCCESSOR_METHOD, Agent
from acpio.schema import (
    AgentMessageChunk,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SessionNotification,
    StopReason,
    TextContent,
)
from acpio.transports.channel import Channel

TIMEOUT = 5
T = TypeVar("T")

#: What a client sends first: ACP refuses session/* requests before the agent answered it.
INIT = InitializeRequest(protocol_version=1)


def answers_initialize(app: Builder) -> Builder:
    """``app`` (an agent's builder), answering ``initialize`` with version 1 and no capabilities."""

    @app.on_request
    async def initialize(req: InitializeRequest) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    return app


def initialized(main: Callable[[Connection], Awaitable[T]]) -> Callable[[Connection], Awaitable[T]]:
    """A client's ``main`` that first sends ``initialize`` and waits for the agent's answer."""

    async def run(cx: Connection) -> T:
        async with asyncio.timeout(TIMEOUT):
            await cx.send_request(INIT)
        return await main(cx)

    return run


def chunk(session_id: str, text: str) -> SessionNotification:
    """A ``session/update`` carrying one agent text chunk."""
    return SessionNotification(
        session_id=session_id, update=AgentMessageChunk(content=TextContent(text=text))
    )


def update_frame(session_id: str, text: str) -> dict[str, Any]:
    """The raw JSON of :func:`chunk`, for wire peers."""
    return {"jsonrpc": "2.0", "method": "session/update", "params": chunk(session_id, text).to_wire()}


def prompt_text(req: PromptRequest) -> str:
    return "".join(block.text for block in req.prompt if isinstance(block, TextContent))


class EchoAgent:
    """An agent that answers ``session/new`` and echoes each prompt back word by word.

    ``early_updates``: updates sent for a new session *before* its ``session/new`` response.
    """

    def __init__(self, *, early_updates: int = 0) -> None:
        self.early_updates = early_updates
        self.sessions = 0
        self.cx: Connection | None = None
        self.prompts: list[PromptRequest] = []

    def builder(self) -> Builder:
        app = answers_initialize(Agent.builder(name="agent"))

        @app.on_request
        async def new_session(req: NewSessionRequest, cx: Connection) -> NewSessionResponse:
            self.cx = cx
            self.sessions += 1
            session_id = f"sess-{self.sessions}"
            for n in range(self.early_updates):
                cx.send_notification(chunk(session_id, f"early-{n} "))
            return NewSessionResponse(
                session_id=session_id,
                modes=SessionModeState(
                    current_mode_id="code",
                    available_modes=[SessionMode(id="code", name="Code"), SessionMode(id="ask", name="Ask")],
                ),
                meta={"agent": "echo", "cwd": req.cwd},
            )

        @app.on_request
        async def prompt(req: PromptRequest, cx: Connection) -> PromptResponse:
            self.prompts.append(req)
            for word in prompt_text(req).split(" "):
                cx.send_notification(chunk(req.session_id, word + " "))
            return PromptResponse(stop_reason=StopReason.END_TURN)

        return app


def from_agent(message: dict[str, Any]) -> dict[str, Any]:
    """``message`` as a conductor delivers it to a proxy from its successor: in ``_proxy/successor``."""
    inner = {"method": message["method"], "params": message["params"]}
    wrapped = {"jsonrpc": "2.0", "method": SUCCESSOR_METHOD, "params": inner}
    if "id" in message:
        wrapped["id"] = message["id"]
    return wrapped


class WirePeer(testing.WirePeer):
    """A raw peer that also reads messages the proxy sends to its successor."""

    async def recv_request(self, method: str) -> Any:
        message = await self.recv()
        assert message.get("method") == method, message
        return message

    async def recv_for_agent(self, method: str) -> Any:
        """The next message, which must be ``method`` sent to the successor (wrapped); unwrapped."""
        message = await self.recv_request(SUCCESSOR_METHOD)
        inner = message["params"]
        assert inner["method"] == method, message
        return {"id": message.get("id"), "method": method, "params": inner.get("params")}

    async def initialize(self, cx: Connection) -> None:
        """Have client ``cx`` send ``initialize`` and answer it (version 1, no capabilities)."""
        sent = cx.send_request(INIT)
        request = await self.recv_request("initialize")
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 1}})
        async with asyncio.timeout(TIMEOUT):
            await sent

    async def barrier(self) -> None:
        """Send a request and wait for its answer: everything sent before it has been dispatched.

        A client or plain connection answers ``-32601``; a proxy forwards it to its successor
        first (that forwarded copy is answered here).
        """
        self.send({"jsonrpc": "2.0", "id": "barrier", "method": "_test/barrier"})
        answer = await self.recv()
        if answer.get("method") == SUCCESSOR_METHOD:
            self.send({"jsonrpc": "2.0", "id": answer["id"], "result": {}})
            answer = await self.recv()
        assert answer["id"] == "barrier", answer


@asynccontextmanager
async def wire_connection(builder: Builder) -> AsyncIterator[tuple[Connection, WirePeer]]:
    """Serve ``builder`` on one end of a channel; yield its connection and a raw peer on the other."""
    ours, theirs = Channel.duplex()
    started: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    finished = asyncio.Event()

    async def main(cx: Connection) -> None:
        started.set_result(cx)
        await finished.wait()

    task = asyncio.create_task(builder.connect_with(ours, main))
    async with asyncio.timeout(TIMEOUT):
        cx = await started
    try:
        yield cx, WirePeer(theirs)
    finally:
        finished.set()
        await theirs.aclose()
        async with asyncio.timeout(TIMEOUT):
            await task
