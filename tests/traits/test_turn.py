"""A whole session between a compat client and a compat agent, in-process."""

from __future__ import annotations

import asyncio

import pytest

from acpio import InternalError, RequestCancelled
from acpio.capabilities import UnsupportedProtocolVersion
from acpio.schema import (
    AuthenticateRequest,
    AuthenticateResponse,
    CancelNotification,
    ClientCapabilities,
    FileSystemCapabilities,
    InitializeRequest,
    InitializeResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    StopReason,
    TextContent,
)
from acpio.traits import AgentSideConnection, ClientSideConnection
from acpio.transports import Channel

from ._support import TIMEOUT, TurnAgent, TurnClient, connected

CAPABILITIES = ClientCapabilities(
    fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
)


def prompt(session_id: str, text: str) -> PromptRequest:
    return PromptRequest(session_id=session_id, prompt=[TextContent(text=text)])


async def test_a_full_turn() -> None:
    client = TurnClient()
    async with connected(client=client) as (agent_side, client_side):
        # initialize: the client asks for a version the agent does not speak; the agent answers
        # with its latest, which the client speaks.
        init = await client_side.initialize(
            InitializeRequest(protocol_version=7, client_capabilities=CAPABILITIES)
        )
        assert type(init) is InitializeResponse
        assert init.protocol_version == 1
        assert client_side.agent_features is not None
        assert client_side.agent_features.load_session
        assert agent_side.client_features is not None
        assert agent_side.client_features.read_text_file
        assert agent_side.client_features.terminal

        session = await client_side.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))
        assert type(session) is NewSessionResponse
        sid = session.session_id

        # Streamed chunks: every update is handled by the time prompt() returns, in order.
        done = await client_side.prompt(prompt(sid, "echo one two three"))
        assert type(done) is PromptResponse
        assert done.stop_reason == StopReason.END_TURN
        assert client.updates == [(sid, "one"), (sid, "two"), (sid, "three")]

        # The agent calls back into the client during the turn: permission, files, a terminal.
        client.updates.clear()
        done = await client_side.prompt(prompt(sid, "tools /work/a.txt"))
        assert done.stop_reason == StopReason.END_TURN
        assert client.calls == [
            "request_permission",
            "read_text_file",
            "write_text_file",
            "create_terminal:echo",
            "wait_for_terminal_exit",
            "terminal_output",
            "release_terminal",
        ]
        assert client.files["/work/a.txt"] == "HELLO"
        assert client.updates == [(sid, "permission:allow"), (sid, "terminal:hi:0")]

        # Cancellation: session/cancel reaches the agent while its prompt turn runs.
        turn = asyncio.create_task(client_side.prompt(prompt(sid, "wait")))
        await client.waiting.wait()
        await client_side.cancel(CancelNotification(session_id=sid))
        cancelled = await turn
        assert cancelled.stop_reason == StopReason.CANCELLED


async def test_a_cancel_sent_right_after_the_prompt_still_reaches_the_running_turn() -> None:
    # The prompt request starts before the next message is dispatched, so a session/cancel in the
    # same burst finds the turn running (no wait for the "waiting" update).
    async with connected() as (_, client_side):
        await client_side.initialize(InitializeRequest(protocol_version=1))
        sid = (await client_side.new_session(NewSessionRequest(cwd="/", mcp_servers=[]))).session_id
        sent = client_side.connection.send_request(prompt(sid, "wait"))
        await client_side.cancel(CancelNotification(session_id=sid))
        response = await sent
        assert type(response) is PromptResponse
        assert response.stop_reason == StopReason.CANCELLED


async def test_an_agent_version_the_client_does_not_speak_closes_the_connection() -> None:
    class Future(TurnAgent):
        answer_version = 99

    async with connected(agent=Future) as (_, client_side):
        with pytest.raises(UnsupportedProtocolVersion, match="version 99"):
            await client_side.initialize(InitializeRequest(protocol_version=1))
        await client_side.connection.wait_closed()
        assert client_side.agent_features is None


async def test_cancel_request_cancels_the_handler_task() -> None:
    started = asyncio.Event()
    stopped = asyncio.Event()

    class Slow(TurnAgent):
        async def load_session(self, params: LoadSessionRequest) -> LoadSessionResponse:
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                stopped.set()
            raise AssertionError("unreachable")

    async with connected(agent=Slow) as (_, client_side):
        await client_side.initialize(InitializeRequest(protocol_version=1))
        sent = client_side.connection.send_request(
            LoadSessionRequest(session_id="s", cwd="/", mcp_servers=[])
        )
        await started.wait()
        sent.cancel()  # $/cancel_request
        with pytest.raises(RequestCancelled):
            await sent
        assert stopped.is_set()


async def test_none_is_an_empty_result_when_the_result_type_allows_it() -> None:
    class Lax(TurnAgent):
        async def authenticate(self, params: AuthenticateRequest) -> AuthenticateResponse:
            return None  # type: ignore[return-value]

        async def prompt(self, params: PromptRequest) -> PromptResponse:
            return None  # type: ignore[return-value]

    async with connected(agent=Lax) as (_, client_side):
        assert (
            type(await client_side.authenticate(AuthenticateRequest(method_id="x"))) is AuthenticateResponse
        )
        with pytest.raises(InternalError):  # PromptResponse needs a stop reason: never an empty result
            await client_side.prompt(prompt("s", "hi"))


async def test_an_instance_gets_the_connection_through_on_connect() -> None:
    seen: list[AgentSideConnection] = []

    class Hooked(TurnAgent):
        def __init__(self) -> None:
            super().__init__(None)  # type: ignore[arg-type]

        def on_connect(self, conn: AgentSideConnection) -> None:
            seen.append(conn)
            self.client = conn

    agent = Hooked()
    ours, theirs = Channel.duplex()
    agent_side = AgentSideConnection(agent, theirs)
    assert seen == [agent_side]
    assert agent_side.agent is agent
    client = TurnClient()
    async with asyncio.timeout(TIMEOUT), agent_side, ClientSideConnection(client, ours) as client_side:
        await client_side.prompt(prompt("s", "echo hi"))
    assert client.updates == [("s", "hi")]


async def test_a_closed_connection_fails_calls_clearly() -> None:
    async with connected() as (_, client_side):
        pass
    assert client_side.closed
    with pytest.raises(Exception, match="closed"):
        await client_side.new_session(NewSessionRequest(cwd="/", mcp_servers=[]))
