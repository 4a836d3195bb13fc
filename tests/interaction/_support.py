"""Harnesses for the conformance tests: a frame-recording transport, a scripted agent in each style,
and in-process client/agent pairs (builder style and trait style) whose client frames are recorded.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from contextvars import ContextVar
from typing import Any

import orjson

from acpio.jsonrpc import Builder, Connection, Responder
from acpio.roles import Agent, Client
from acpio.schema import (
    AgentCapabilities,
    AgentMessageChunk,
    CancelNotification,
    CloseSessionRequest,
    CloseSessionResponse,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionNotification,
    StopReason,
    TextContent,
    UserMessageChunk,
)
from acpio.session import SessionConnection
from acpio.traits import AgentSideConnection, ClientSideConnection
from acpio.traits import AgentTrait as CompatAgent
from acpio.traits import ClientTrait as CompatClient
from acpio.transports import Channel
from acpio.transports.base import OversizedFrame, Transport
from acpio.versions import select_version

TIMEOUT = 5

#: The wire :func:`builder_client` joins its client and agent with: ``channel`` (in process),
#: ``websocket`` or ``http`` (the agent served by ``acpio.remote.RemoteServer`` on a loopback port).
#: ``conftest.py`` runs each test that uses it over all three.
WIRE: ContextVar[str] = ContextVar("WIRE", default="channel")

#: The conversation an agent replays on ``session/load``: (role, text).
HISTORY = (("user", "What is 2+2?"), ("agent", "4"))


class Tap:
    """A transport wrapper that records every frame, decoded, in both directions, in order."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        #: ``("out" | "in", message)`` in the order they crossed this end.
        self.frames: list[tuple[str, Any]] = []

    def send(self, frame: bytes) -> None:
        self.frames.append(("out", orjson.loads(frame)))
        self.inner.send(frame)

    async def receive(self) -> bytes | OversizedFrame | None:
        frame = await self.inner.receive()
        if isinstance(frame, bytes):
            self.frames.append(("in", orjson.loads(frame)))
        return frame

    async def drain(self) -> None:
        await self.inner.drain()

    async def aclose(self) -> None:
        await self.inner.aclose()

    @property
    def sent(self) -> list[Any]:
        return [message for direction, message in self.frames if direction == "out"]

    @property
    def received(self) -> list[Any]:
        return [message for direction, message in self.frames if direction == "in"]

    def sent_methods(self) -> list[str]:
        return [m["method"] for m in self.sent if "method" in m]

    def sent_request(self, method: str) -> Any:
        """The last request for ``method`` this end sent (asserts there is one)."""
        found = [m for m in self.sent if m.get("method") == method and "id" in m]
        assert found, f"no {method} request on the wire: {self.sent_methods()}"
        return found[-1]

    def answer_to(self, request: Any) -> Any:
        """The frame this end received answering ``request`` (asserts exactly one)."""
        answers = [m for m in self.received if "method" not in m and m.get("id") == request["id"]]
        assert len(answers) == 1, answers
        return answers[0]


def text_of(prompt: PromptRequest) -> str:
    return " ".join(block.text for block in prompt.prompt if isinstance(block, TextContent))


def chunk(session_id: str, text: str) -> SessionNotification:
    return SessionNotification(
        session_id=session_id, update=AgentMessageChunk(content=TextContent(text=text))
    )


def replay(session_id: str) -> list[SessionNotification]:
    """The ``session/update`` notifications that replay :data:`HISTORY`."""
    updates: list[SessionNotification] = []
    for role, text in HISTORY:
        content = TextContent(text=text)
        update = UserMessageChunk(content=content) if role == "user" else AgentMessageChunk(content=content)
        updates.append(SessionNotification(session_id=session_id, update=update))
    return updates


class ScriptAgent:
    """A builder-style agent answering by script.

    ``initialize`` negotiates (or answers ``version``) and advertises ``capabilities``;
    ``session/load`` replays :data:`HISTORY`; a prompt ``wait`` streams ``waiting`` and ends, once
    ``session/cancel`` arrives, with one more update then ``cancelled``; any other prompt is echoed
    word by word and ends with ``end_turn``.
    """

    def __init__(self, capabilities: AgentCapabilities | None = None, *, version: int | None = None) -> None:
        self.capabilities = capabilities or AgentCapabilities()
        self.version = version
        self.received: list[Any] = []
        self.sessions = 0
        self.cancel_seen: dict[str, asyncio.Event] = {}

    def _cancel_event(self, session_id: str) -> asyncio.Event:
        return self.cancel_seen.setdefault(session_id, asyncio.Event())

    def builder(self) -> Builder:
        app = Agent.builder(name="script-agent")

        @app.on_request
        async def initialize(req: InitializeRequest) -> InitializeResponse:
            self.received.append(req)
            version = self.version if self.version is not None else select_version(req.protocol_version, (1,))
            return InitializeResponse(
                protocol_version=version,
                agent_capabilities=self.capabilities,
                agent_info=Implementation(name="script-agent", version="1.0"),
            )

        @app.on_request
        async def new_session(req: NewSessionRequest) -> NewSessionResponse:
            self.received.append(req)
            self.sessions += 1
            return NewSessionResponse(session_id=f"s-{self.sessions}")

        @app.on_request
        async def load_session(req: LoadSessionRequest, responder: Responder[Any], cx: Connection) -> Any:
            self.received.append(req)
            for update in replay(req.session_id):
                cx.send_notification(update)
            return LoadSessionResponse()

        @app.on_request
        async def resume_session(req: ResumeSessionRequest) -> ResumeSessionResponse:
            self.received.append(req)
            return ResumeSessionResponse()

        @app.on_request
        async def close_session(req: CloseSessionRequest) -> CloseSessionResponse:
            self.received.append(req)
            return CloseSessionResponse()

        @app.on_request
        async def prompt(req: PromptRequest, responder: Responder[Any], cx: Connection) -> Any:
            self.received.append(req)
            sid = req.session_id
            if text_of(req) == "wait":
                cancelled = self._cancel_event(sid)
                cx.send_notification(chunk(sid, "waiting"))

                async def finish() -> None:
                    await cancelled.wait()
                    cx.send_notification(chunk(sid, "after-cancel"))
                    responder.respond(PromptResponse(stop_reason=StopReason.CANCELLED))

                cx.spawn(finish)
                return None
            for word in text_of(req).split():
                cx.send_notification(chunk(sid, word))
            return PromptResponse(stop_reason=StopReason.END_TURN)

        @app.on_notification
        async def cancel(note: CancelNotification) -> None:
            self.received.append(note)
            self._cancel_event(note.session_id).set()

        return app


@asynccontextmanager
async def builder_client(
    agent: ScriptAgent | Builder, *, allow_failure: bool = False, client: Builder | None = None
) -> AsyncIterator[tuple[SessionConnection, Tap]]:
    """A builder-style client connected in-process to ``agent``; yields its ``cx`` and its recorded wire.

    ``client`` is the client's builder (with handlers of its own); a plain one by default.
    """
    agent_builder = agent.builder() if isinstance(agent, ScriptAgent) else agent
    async with AsyncExitStack() as stack:
        if WIRE.get() == "channel":
            ours, theirs = Channel.duplex()
            agent_task = asyncio.create_task(agent_builder.serve(theirs))
        else:
            # The agent served over the network; its failures are logged by the server, not raised here.
            from acpio.remote import RemoteAgent, RemoteServer

            server = await stack.enter_async_context(RemoteServer(agent_builder, port=0))
            url = server.url if WIRE.get() == "http" else server.url.replace("http", "ws", 1)
            ours = await RemoteAgent(url).open()
            agent_task = asyncio.create_task(asyncio.sleep(0))
        async with _client(ours, agent_task, allow_failure=allow_failure, client=client) as pair:
            yield pair


@asynccontextmanager
async def _client(
    ours: Transport, agent_task: asyncio.Task[None], *, allow_failure: bool, client: Builder | None
) -> AsyncIterator[tuple[SessionConnection, Tap]]:
    tap = Tap(ours)
    started: asyncio.Future[SessionConnection] = asyncio.get_running_loop().create_future()
    finished = asyncio.Event()

    async def main(cx: Connection) -> None:
        assert isinstance(cx, SessionConnection)
        started.set_result(cx)
        await finished.wait()

    client_app = client if client is not None else Client.builder(name="client")
    client_task = asyncio.create_task(client_app.connect_with(tap, main))
    async with asyncio.timeout(TIMEOUT):
        cx = await started
    try:
        yield cx, tap
    finally:
        finished.set()
        async with asyncio.timeout(TIMEOUT):
            results = await asyncio.gather(client_task, agent_task, return_exceptions=True)
        if not allow_failure:
            for result in results:
                if isinstance(result, BaseException):
                    raise result


class ScriptCompatAgent(CompatAgent):
    """The trait-style twin of :class:`ScriptAgent`."""

    capabilities = AgentCapabilities()
    version: int | None = None

    def __init__(self, conn: AgentSideConnection) -> None:
        self.conn = conn
        self.received: list[Any] = []
        self.sessions = 0
        self.cancel_seen: dict[str, asyncio.Event] = {}

    def _cancel_event(self, session_id: str) -> asyncio.Event:
        return self.cancel_seen.setdefault(session_id, asyncio.Event())

    async def initialize(self, params: InitializeRequest) -> InitializeResponse:
        self.received.append(params)
        version = self.version if self.version is not None else select_version(params.protocol_version, (1,))
        return InitializeResponse(
            protocol_version=version,
            agent_capabilities=self.capabilities,
            agent_info=Implementation(name="script-compat-agent", version="1.0"),
        )

    async def new_session(self, params: NewSessionRequest) -> NewSessionResponse:
        self.received.append(params)
        self.sessions += 1
        return NewSessionResponse(session_id=f"c-{self.sessions}")

    async def load_session(self, params: LoadSessionRequest) -> LoadSessionResponse:
        self.received.append(params)
        for update in replay(params.session_id):
            await self.conn.session_update(update)
        return LoadSessionResponse()

    async def resume_session(self, params: ResumeSessionRequest) -> ResumeSessionResponse:
        self.received.append(params)
        return ResumeSessionResponse()

    async def close_session(self, params: CloseSessionRequest) -> CloseSessionResponse:
        self.received.append(params)
        return CloseSessionResponse()

    async def prompt(self, params: PromptRequest) -> PromptResponse:
        self.received.append(params)
        sid = params.session_id
        if text_of(params) == "wait":
            cancelled = self._cancel_event(sid)
            await self.conn.session_update(chunk(sid, "waiting"))
            await cancelled.wait()
            await self.conn.session_update(chunk(sid, "after-cancel"))
            return PromptResponse(stop_reason=StopReason.CANCELLED)
        for word in text_of(params).split():
            await self.conn.session_update(chunk(sid, word))
        return PromptResponse(stop_reason=StopReason.END_TURN)

    async def cancel(self, params: CancelNotification) -> None:
        self.received.append(params)
        self._cancel_event(params.session_id).set()


class RecordingClient(CompatClient):
    """A trait-style client that records the text of every ``session/update`` it handles."""

    def __init__(self) -> None:
        self.updates: list[tuple[str, str]] = []
        self.update_seen = asyncio.Event()

    async def session_update(self, params: SessionNotification) -> None:
        update = params.update
        content = getattr(update, "content", None)
        text = content.text if isinstance(content, TextContent) else type(update).__name__
        self.updates.append((params.session_id, text))
        self.update_seen.set()


def compat_agent(capabilities: AgentCapabilities | None = None, *, version: int | None = None) -> type:
    """A :class:`ScriptCompatAgent` subclass advertising ``capabilities`` (and answering ``version``)."""
    return type(
        "ConfiguredAgent",
        (ScriptCompatAgent,),
        {"capabilities": capabilities or AgentCapabilities(), "version": version},
    )


@asynccontextmanager
async def compat_pair(
    agent: type = ScriptCompatAgent,
    client: CompatClient | None = None,
    *,
    require_capabilities: bool = True,
) -> AsyncIterator[tuple[AgentSideConnection, ClientSideConnection, Tap]]:
    """A trait-style agent and client joined in-process; the client's wire is recorded."""
    ours, theirs = Channel.duplex()
    tap = Tap(ours)
    agent_side = AgentSideConnection(agent, theirs)
    client_side = ClientSideConnection(
        client if client is not None else RecordingClient(), tap, require_capabilities=require_capabilities
    )
    async with asyncio.timeout(TIMEOUT), agent_side, client_side:
        yield agent_side, client_side, tap
