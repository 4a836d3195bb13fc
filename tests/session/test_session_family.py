"""The session family from the client side: ``session/load``, ``/resume`` and ``/fork`` builders.

On the raw wire (exact frames, ordering, refusals, proxies) and against the real testy agent served
in-process to several connections (sessions outlive the connection that made them).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import pytest
from pydantic import BaseModel

from acpio.agents.testy import testy_agent
from acpio.capabilities import CapabilityNotAdvertised
from acpio.errors import InvalidParams, RequestError
from acpio.jsonrpc import Builder, Connection, DynamicHandlerRegistration, Responder, Unhandled
from acpio.roles import Client, Proxy, UnstableMethodNotEnabled
from acpio.schema import (
    ForkSessionResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    McpServerStdio,
    NewSessionRequest,
    ResumeSessionRequest,
    ResumeSessionResponse,
    StopReason,
    TextContent,
    UserMessageChunk,
)
from acpio.session import (
    ActiveSession,
    McpServerList,
    SessionConnection,
    SessionMessage,
    TurnEnded,
    attach_session,
    build_session,
    build_session_fork,
    build_session_from,
    build_session_load,
    build_session_resume,
)
from acpio.transports import ChannelListener

from ._support import INIT, TIMEOUT, WirePeer, from_agent, update_frame, wire_connection

T = TypeVar("T")

#: What the wire agent advertises: load, resume and (unstable) fork.
CAPABILITIES: dict[str, Any] = {"loadSession": True, "sessionCapabilities": {"resume": {}, "fork": {}}}
STDIO = McpServerStdio(name="tools", command="/bin/tools", args=[], env=[])


def _ask(session_id: str) -> dict[str, Any]:
    """A ``session/request_permission`` from the agent, id ``ask``."""
    params = {"sessionId": session_id, "toolCall": {"toolCallId": "t"}, "options": []}
    return {"jsonrpc": "2.0", "id": "ask", "method": "session/request_permission", "params": params}


async def _initialize(peer: WirePeer, cx: Connection, capabilities: dict[str, Any] = CAPABILITIES) -> None:
    """Have client ``cx`` send ``initialize``; answer it with ``capabilities``."""
    sent = cx.send_request(INIT)
    request = await peer.recv_request("initialize")
    peer.send(_result(request["id"], {"protocolVersion": 1, "agentCapabilities": capabilities}))
    async with asyncio.timeout(TIMEOUT):
        await sent


def _result(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def _texts(messages: list[SessionMessage]) -> list[str | None]:
    return [message.text for message in messages]


# --- session/load on the wire ---------------------------------------------------------------------


async def test_load_delivers_the_replay_as_history_before_the_session(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await _initialize(peer, cx)
        starting = asyncio.ensure_future(build_session_load(cx, "old", tmp_path).start_session())
        request = await peer.recv_request("session/load")
        assert request["params"] == {"sessionId": "old", "cwd": str(tmp_path), "mcpServers": []}
        # The handler is in place before the request left: the replay is claimed, not parked.
        assert cx.statistics()["dynamic_handlers"] == 1
        peer.send(update_frame("old", "earlier "))
        peer.send(update_frame("old", "conversation"))
        await peer.barrier()
        assert cx.statistics()["retry_queue"] == 0
        assert not starting.done()
        modes = {"currentModeId": "code", "availableModes": [{"id": "code", "name": "Code"}]}
        peer.send(
            [
                _result(request["id"], {"modes": modes, "_meta": {"k": 1}}),
                update_frame("old", "live"),  # same batch, right after the answer: not history
            ]
        )
        async with asyncio.timeout(TIMEOUT):
            session = await starting
        assert session.session_id == "old"
        assert _texts(session.history) == ["earlier ", "conversation"]
        assert session.modes is not None
        assert session.modes.current_mode_id == "code"
        assert session.meta == {"k": 1}
        assert session.config_options is None
        response = session.response()
        assert type(response) is LoadSessionResponse
        assert response.to_wire() == {"modes": modes, "_meta": {"k": 1}}
        async with asyncio.timeout(TIMEOUT):
            live = await session.read_update()
        assert isinstance(live, SessionMessage)
        assert live.text == "live"

        session.send_prompt("next")
        prompt = await peer.recv_request("session/prompt")
        assert prompt["params"]["sessionId"] == "old"
        peer.send(update_frame("old", "answer"))
        peer.send(_result(prompt["id"], {"stopReason": "end_turn"}))
        async with asyncio.timeout(TIMEOUT):
            assert await session.read_to_string() == "answer"
        session.close()
        assert cx.statistics()["dynamic_handlers"] == 0


async def test_a_null_load_answer_and_an_empty_replay(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await _initialize(peer, cx)
        starting = asyncio.ensure_future(build_session_load(cx, "old", tmp_path).start_session())
        request = await peer.recv_request("session/load")
        peer.send(_result(request["id"], None))  # the spec's own example answers null
        async with asyncio.timeout(TIMEOUT):
            session = await starting
        assert session.history == []
        assert session.response() == LoadSessionResponse()
        session.close()


async def test_the_history_keeps_the_order_of_many_updates(tmp_path: Path) -> None:
    total = 5000
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await _initialize(peer, cx)
        starting = asyncio.ensure_future(build_session_load(cx, "old", tmp_path).start_session())
        request = await peer.recv_request("session/load")
        for n in range(total):
            peer.send(update_frame("old", str(n)))
            if n % 97 == 0:
                await asyncio.sleep(0)  # let the dispatch loop run in between
        peer.send(_result(request["id"], {}))
        for n in range(3):
            peer.send(update_frame("old", f"after-{n}"))
        async with asyncio.timeout(TIMEOUT):
            session = await starting
            after = [await session.read_update() for _ in range(3)]
        assert _texts(session.history) == [str(n) for n in range(total)]
        assert [m.text for m in after if isinstance(m, SessionMessage)] == ["after-0", "after-1", "after-2"]
        assert cx.statistics()["retry_queue"] == 0
        session.close()


async def test_a_request_during_the_load_waits_for_the_reader_not_in_the_history(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await _initialize(peer, cx)
        starting = asyncio.ensure_future(build_session_load(cx, "old", tmp_path).start_session())
        request = await peer.recv_request("session/load")
        peer.send(update_frame("old", "replayed"))
        peer.send(_ask("old"))
        peer.send(_result(request["id"], {}))
        async with asyncio.timeout(TIMEOUT):
            session = await starting
            asked = await session.read_update()
        assert _texts(session.history) == ["replayed"]
        assert isinstance(asked, SessionMessage)
        assert asked.is_request
        assert asked.method == "session/request_permission"
        session.close()
        assert cx.statistics()["dynamic_handlers"] == 0


async def test_a_refused_load_raises_the_agents_error_and_leaves_no_handler(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await _initialize(peer, cx)
        registrations: list[DynamicHandlerRegistration] = []

        class Registry:
            """Declares one server and serves it with an inert handler (it is handed a session/new)."""

            def attach(self, request: NewSessionRequest, cx: Connection) -> list[DynamicHandlerRegistration]:
                request.mcp_servers.append(STDIO)

                async def decline(message: Any, cx: Connection) -> Unhandled:
                    return Unhandled(message)

                registrations.append(cx.add_dynamic_handler(decline))
                return registrations

        builder = build_session_load(cx, "gone", tmp_path).with_mcp_server(Registry())
        starting = asyncio.ensure_future(builder.start_session())
        request = await peer.recv_request("session/load")
        assert [s["name"] for s in request["params"]["mcpServers"]] == ["tools"]
        peer.send(update_frame("gone", "half a replay"))
        peer.send(_ask("gone"))
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "error": {"code": -32602, "message": "Unknown session 'gone'", "data": {"sessionId": "gone"}},
            }
        )
        with pytest.raises(InvalidParams) as caught:
            async with asyncio.timeout(TIMEOUT):
                await starting
        assert caught.value.message == "Unknown session 'gone'"
        assert caught.value.data == {"sessionId": "gone"}
        assert "session/load of session 'gone'" in "".join(caught.value.__notes__)
        # The request the agent sent during the failed load got an answer; nothing is left behind.
        answer = await peer.recv()
        assert answer["id"] == "ask"
        assert "error" in answer
        await peer.barrier()
        assert cx.statistics()["dynamic_handlers"] == 0
        assert not registrations[0].active
        # A later update for that id is not taken by a leftover handler: the client role parks it.
        peer.send(update_frame("gone", "late"))
        await peer.barrier()
        assert cx.statistics()["retry_queue"] == 1


async def test_a_load_the_agent_did_not_advertise_sends_nothing_and_installs_nothing(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await _initialize(peer, cx, {})
        with pytest.raises(CapabilityNotAdvertised):
            await build_session_load(cx, "old", tmp_path).start_session()
        await peer.barrier()  # the next frame is the barrier's answer: no session/load went out
        assert cx.statistics()["dynamic_handlers"] == 0


class _Kick(BaseModel):
    METHOD: ClassVar[str] = "_test/kick"


async def test_on_session_start_inside_a_handler_hands_over_the_history(tmp_path: Path) -> None:
    got: asyncio.Future[list[str | None]] = asyncio.get_running_loop().create_future()
    app = Client.builder(name="client")

    async def kick(message: Any, cx: Connection) -> None:
        async def run(session: ActiveSession) -> None:
            got.set_result(_texts(session.history))

        build_session_load(cx, "old", tmp_path).on_session_start(run)

    app.on_notification(_Kick, kick)

    async with wire_connection(app) as (cx, peer):
        await _initialize(peer, cx)
        peer.send({"jsonrpc": "2.0", "method": "_test/kick", "params": {}})
        request = await peer.recv_request("session/load")
        peer.send([update_frame("old", "a"), update_frame("old", "b"), _result(request["id"], {})])
        async with asyncio.timeout(TIMEOUT):
            assert await got == ["a", "b"]


# --- session/resume and session/fork on the wire --------------------------------------------------


async def test_resume_has_no_history_and_reads_on(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await _initialize(peer, cx)
        builder = build_session_resume(cx, "old", tmp_path).with_mcp_server(McpServerList([STDIO]))
        assert builder.method == "session/resume"
        starting = asyncio.ensure_future(builder.start_session())
        request = await peer.recv_request("session/resume")
        assert request["params"]["sessionId"] == "old"
        assert [s["name"] for s in request["params"]["mcpServers"]] == ["tools"]
        # An agent that says something before answering: kept for the reader, in order.
        peer.send([update_frame("old", "hello again"), _result(request["id"], {})])
        async with asyncio.timeout(TIMEOUT):
            session = await starting
            first = await session.read_update()
        assert session.history == []
        assert type(session.response()) is ResumeSessionResponse
        assert isinstance(first, SessionMessage)
        assert first.text == "hello again"
        session.close()


async def test_resume_always_sends_mcp_servers(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await _initialize(peer, cx)
        builder = build_session_from(cx, ResumeSessionRequest(session_id="old", cwd=str(tmp_path)))
        assert builder.request.mcp_servers == []
        starting = asyncio.ensure_future(builder.start_session())
        request = await peer.recv_request("session/resume")
        assert request["params"] == {"sessionId": "old", "cwd": str(tmp_path), "mcpServers": []}
        peer.send({"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32000, "message": "Log in"}})
        with pytest.raises(RequestError, match="Log in"):
            async with asyncio.timeout(TIMEOUT):
                await starting
        assert cx.statistics()["dynamic_handlers"] == 0


async def test_fork_needs_unstable_methods_on(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await _initialize(peer, cx)
        with pytest.raises(UnstableMethodNotEnabled):
            await build_session_fork(cx, "old", tmp_path).start_session()
        await peer.barrier()
        assert cx.statistics()["dynamic_handlers"] == 0


async def test_fork_reads_the_new_session_named_by_the_answer(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client", unstable=True)) as (cx, peer):
        await _initialize(peer, cx)
        starting = asyncio.ensure_future(build_session_fork(cx, "old", tmp_path).start_session())
        request = await peer.recv_request("session/fork")
        assert request["params"] == {"sessionId": "old", "cwd": str(tmp_path), "mcpServers": []}
        peer.send([_result(request["id"], {"sessionId": "forked"}), update_frame("forked", "hi")])
        peer.send(update_frame("old", "not ours"))
        async with asyncio.timeout(TIMEOUT):
            session = await starting
            first = await session.read_update()
        assert session.session_id == "forked"
        assert session.history == []
        assert session.response() == ForkSessionResponse(session_id="forked")
        assert isinstance(first, SessionMessage)
        assert first.text == "hi"
        session.send_prompt("summarize")
        prompt = await peer.recv_request("session/prompt")
        assert prompt["params"]["sessionId"] == "forked"
        peer.send(_result(prompt["id"], {"stopReason": "end_turn"}))
        async with asyncio.timeout(TIMEOUT):
            assert isinstance(await session.read_update(), TurnEnded)
        session.close()
        await peer.barrier()
        assert cx.statistics()["retry_queue"] == 1  # "not ours": parked for the session named "old"


# --- the shape of the API ---------------------------------------------------------------------


async def test_builders_of_every_kind(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, _):
        assert isinstance(cx, SessionConnection)
        load = build_session_load(cx, "s", "relative")
        assert load.request == LoadSessionRequest(
            session_id="s", cwd=str(Path.cwd() / "relative"), mcp_servers=[]
        )
        assert repr(load).startswith("<SessionBuilder session/load session_id='s'")
        assert cx.build_session_resume("s", tmp_path).method == "session/resume"
        assert cx.build_session_fork("s", tmp_path).method == "session/fork"
        assert build_session(cx, tmp_path).method == "session/new"
        original = LoadSessionRequest(session_id="s", cwd=str(tmp_path), mcp_servers=[])
        copied = cx.build_session_from(original).with_mcp_server(McpServerList([STDIO]))
        assert copied.method == "session/load"
        assert original.mcp_servers == []  # the builder works on a copy
        assert copied.request.mcp_servers == [STDIO]
        with pytest.raises(TypeError, match="SessionBuilder takes"):
            build_session_from(cx, INIT)  # type: ignore[type-var]


async def test_attach_session_takes_any_setup_answer(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, _):
        with pytest.raises(TypeError, match="session_id"):
            attach_session(cx, LoadSessionResponse())
        async with attach_session(cx, ResumeSessionResponse(), session_id="old") as session:
            assert session.session_id == "old"
            assert session.history == []
        with pytest.raises(ValueError, match="differs"):
            attach_session(cx, ForkSessionResponse(session_id="a"), session_id="b")


# --- proxies --------------------------------------------------------------------------------------


def _proxy_loading(
    start: Callable[[LoadSessionRequest, Responder[LoadSessionResponse], Connection], Any],
) -> Builder:
    app = Proxy.builder(name="proxy")

    @app.on_request(peer=Client)
    async def load_session(
        req: LoadSessionRequest, responder: Responder[LoadSessionResponse], cx: Connection
    ) -> None:
        start(req, responder, cx)

    return app


LOAD = {"sessionId": "old", "cwd": "/work", "mcpServers": []}


async def _client_loads(peer: WirePeer) -> Any:
    """The client sends session/load; the conductor sees it go to the agent (with the proxy's server)."""
    peer.send({"jsonrpc": "2.0", "id": "c1", "method": "session/load", "params": LOAD})
    forwarded = await peer.recv_for_agent("session/load")
    assert [s["name"] for s in forwarded["params"]["mcpServers"]] == ["tools"]
    return forwarded


@pytest.mark.parametrize("blocking", [True, False])
async def test_a_proxy_loads_for_its_client_replay_first_then_the_answer(blocking: bool) -> None:
    ids: list[str] = []

    def start(req: LoadSessionRequest, responder: Responder[LoadSessionResponse], cx: Connection) -> None:
        builder = build_session_from(cx, req).with_mcp_server(McpServerList([STDIO]))
        if not blocking:
            builder.on_proxy_session_start(responder)
            return

        async def run() -> None:
            ids.append(await builder.start_session_proxy(responder))

        cx.spawn(run)

    async with wire_connection(_proxy_loading(start)) as (_, peer):
        forwarded = await _client_loads(peer)
        peer.send(
            [
                from_agent(update_frame("old", "1")),
                from_agent(update_frame("old", "2")),
                _result(forwarded["id"], {"_meta": {"k": 1}}),
                from_agent(update_frame("old", "3")),
            ]
        )
        seen = [await peer.recv() for _ in range(4)]
        assert [m.get("params", {}).get("update", {}).get("content", {}).get("text") for m in seen] == [
            "1",
            "2",
            None,
            "3",
        ]
        assert seen[2] == _result("c1", {"_meta": {"k": 1}})
        peer.send(from_agent(update_frame("old", "4")))
        assert (await peer.recv())["params"]["update"]["content"]["text"] == "4"
        assert ids == (["old"] if blocking else [])


async def test_a_proxy_passes_a_refused_load_on_and_keeps_no_handler() -> None:
    def start(req: LoadSessionRequest, responder: Responder[LoadSessionResponse], cx: Connection) -> None:
        build_session_from(cx, req).with_mcp_server(McpServerList([STDIO])).on_proxy_session_start(responder)

    async with wire_connection(_proxy_loading(start)) as (cx, peer):
        forwarded = await _client_loads(peer)
        peer.send({"jsonrpc": "2.0", "id": forwarded["id"], "error": {"code": -32602, "message": "No such"}})
        assert await peer.recv() == {
            "jsonrpc": "2.0",
            "id": "c1",
            "error": {"code": -32602, "message": "No such"},
        }
        assert cx.statistics()["dynamic_handlers"] == 0


# --- against testy, on several connections --------------------------------------------------------


class _TestyServer:
    """One testy agent (one session store) served to each client connection a test opens."""

    def __init__(self, listener: ChannelListener) -> None:
        self._listener = listener

    async def connect(
        self, main: Callable[[SessionConnection], Awaitable[T]], *, unstable: bool = False
    ) -> T:
        """Connect a new client, initialize, run ``main``; the connection ends with it."""
        client = Client.builder(name="client", unstable=unstable)

        async def run(cx: SessionConnection) -> T:
            async with asyncio.timeout(TIMEOUT):
                await cx.send_request(INIT)
                return await main(cx)

        async with asyncio.timeout(TIMEOUT):
            return await client.connect_with(self._listener.connect(), run)


@asynccontextmanager
async def _testy() -> AsyncIterator[_TestyServer]:
    listener = ChannelListener()
    server = asyncio.create_task(testy_agent().serve(listener))
    try:
        yield _TestyServer(listener)
    finally:
        await listener.aclose()
        async with asyncio.timeout(TIMEOUT):
            await server


async def test_testy_sessions_load_resume_and_refuse_across_connections(tmp_path: Path) -> None:
    async with _testy() as testy:

        async def first(cx: SessionConnection) -> tuple[str, str]:
            async with cx.build_session(tmp_path).start_session() as one:
                one.send_prompt("the first exchange")
                assert await one.read_to_string() == "the first exchange"
            async with cx.build_session(tmp_path).start_session() as two:
                two.send_prompt("kept for resume")
                assert await two.read_to_string() == "kept for resume"
            return one.session_id, two.session_id

        one, two = await testy.connect(first)

        async def second(cx: SessionConnection) -> None:
            async with cx.build_session_load(one, tmp_path).start_session() as loaded:
                assert loaded.session_id == one
                history = loaded.history
                assert isinstance(history[0].update, UserMessageChunk)
                assert history[0].update.content == TextContent(text="the first exchange")
                assert _texts(history) == [None, "the first exchange"]
                assert type(loaded.response()) is LoadSessionResponse
                assert loaded.modes is not None
                loaded.send_prompt("after the load")
                assert await loaded.read_to_string() == "after the load"
                assert loaded.stop_reason == StopReason.END_TURN
            async with cx.build_session_resume(two, tmp_path).start_session() as resumed:
                assert resumed.history == []
                assert type(resumed.response()) is ResumeSessionResponse
                resumed.send_prompt("resumed")
                assert await resumed.read_to_string() == "resumed"
            with pytest.raises(InvalidParams, match="Unknown session"):
                await cx.build_session_load("testy-404", tmp_path).start_session()
            assert cx.statistics()["dynamic_handlers"] == 0

        await testy.connect(second)

        async def third(cx: SessionConnection) -> list[str | None]:
            async with cx.build_session_load(one, tmp_path).start_session() as again:
                return _texts(again.history)

        # The whole conversation, the part added on the second connection included, in order.
        assert await testy.connect(third) == [None, "the first exchange", None, "after the load"]

        async def fork(cx: SessionConnection) -> None:
            # testy does not advertise sessionCapabilities.fork: refused before anything is sent.
            with pytest.raises(CapabilityNotAdvertised):
                await cx.build_session_fork(one, tmp_path).start_session()
            assert cx.statistics()["dynamic_handlers"] == 0

        await testy.connect(fork, unstable=True)
