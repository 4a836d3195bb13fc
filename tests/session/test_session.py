"""Sessions from the client side: a full turn, ordering, isolation, non-blocking starts, errors."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from acpio.errors import AuthRequired, ConnectionClosed, DeadlockError, InternalError
from acpio.jsonrpc import Connection, NotificationDispatch, Responder, UntypedRole
from acpio.roles import Agent, Client
from acpio.schema import (
    InitializeRequest,
    InitializeResponse,
    McpServerStdio,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    ResourceLink,
    StopReason,
    TextContent,
)
from acpio.session import (
    ActiveSession,
    McpServerList,
    SessionMessage,
    SessionMethods,
    TurnEnded,
    attach_session,
    build_session,
    build_session_cwd,
    build_session_from,
)

from ._support import (
    TIMEOUT,
    EchoAgent,
    answers_initialize,
    chunk,
    initialized,
    update_frame,
    wire_connection,
)


async def test_a_full_turn_read_by_iteration(tmp_path: Path) -> None:
    agent = EchoAgent()

    async def main(cx: Connection) -> None:
        async with asyncio.timeout(TIMEOUT), build_session(cx, tmp_path).start_session() as session:
            assert session.session_id == "sess-1"
            assert session.modes is not None
            assert session.modes.current_mode_id == "code"
            assert session.meta == {"agent": "echo", "cwd": str(tmp_path)}
            assert session.response() == NewSessionResponse(
                session_id="sess-1", modes=session.modes, meta=session.meta
            )
            session.send_prompt("hello streaming world")
            texts = [message.text async for message in session]
            assert texts == ["hello ", "streaming ", "world "]
            assert session.stop_reason == StopReason.END_TURN
            assert session.last_response == PromptResponse(stop_reason=StopReason.END_TURN)

    await Client.builder(name="client").connect_with(agent.builder(), initialized(main))
    assert prompt_of(agent) == [TextContent(text="hello streaming world")]


def prompt_of(agent: EchoAgent) -> list[Any]:
    return list(agent.prompts[-1].prompt)


async def test_read_to_string_and_several_turns(tmp_path: Path) -> None:
    async def main(cx: Connection) -> list[str]:
        async with asyncio.timeout(TIMEOUT), build_session(cx, tmp_path).start_session() as session:
            out = []
            for text in ("one two", "three"):
                session.send_prompt(text)
                out.append(await session.read_to_string())
            return out

    assert await Client.builder(name="client").connect_with(EchoAgent().builder(), initialized(main)) == [
        "one two ",
        "three ",
    ]


async def test_read_update_gives_messages_then_the_turn_end(tmp_path: Path) -> None:
    async def main(cx: Connection) -> list[Any]:
        async with asyncio.timeout(TIMEOUT), build_session(cx, tmp_path).start_session() as session:
            session.send_prompt([TextContent(text="a"), ResourceLink(name="f", uri="file:///f")])
            first = await session.read_update()
            end = await session.read_update()
            return [first, end]

    agent = EchoAgent()
    first, end = await Client.builder(name="client").connect_with(agent.builder(), initialized(main))
    assert isinstance(first, SessionMessage)
    assert (first.method, first.is_request, first.text) == ("session/update", False, "a ")
    assert first.notification == chunk("sess-1", "a ")
    assert isinstance(end, TurnEnded)
    assert end.stop_reason == StopReason.END_TURN
    assert [type(b) for b in prompt_of(agent)] == [TextContent, ResourceLink]


async def test_prompt_meta_and_a_single_block_are_sent(tmp_path: Path) -> None:
    agent = EchoAgent()

    async def main(cx: Connection) -> None:
        async with asyncio.timeout(TIMEOUT), build_session(cx, tmp_path).start_session() as session:
            session.send_prompt(TextContent(text="x"), meta={"traceparent": "00-abc"})
            await session.read_to_string()

    await Client.builder(name="client").connect_with(agent.builder(), initialized(main))
    assert agent.prompts[0].to_wire()["_meta"] == {"traceparent": "00-abc"}
    assert prompt_of(agent) == [TextContent(text="x")]


async def test_updates_sent_before_the_session_new_response_are_delivered_in_order(tmp_path: Path) -> None:
    async def main(cx: Connection) -> list[str | None]:
        async with asyncio.timeout(TIMEOUT), build_session(cx, tmp_path).start_session() as session:
            session.send_prompt("late")
            return [message.text async for message in session]

    texts = await Client.builder(name="client").connect_with(
        EchoAgent(early_updates=3).builder(), initialized(main)
    )
    assert texts == ["early-0 ", "early-1 ", "early-2 ", "late "]


async def test_two_sessions_on_one_connection_do_not_see_each_other(tmp_path: Path) -> None:
    async def main(cx: Connection) -> tuple[str, str]:
        async with (
            asyncio.timeout(TIMEOUT),
            build_session(cx, tmp_path).start_session() as a,
            build_session(cx, tmp_path).start_session() as b,
        ):
            assert a.session_id != b.session_id
            a.send_prompt("alpha beta")
            b.send_prompt("gamma")
            a.send_prompt("delta")
            return await a.read_to_string() + await a.read_to_string(), await b.read_to_string()

    text_a, text_b = await Client.builder(name="client").connect_with(
        EchoAgent().builder(), initialized(main)
    )
    assert (text_a, text_b) == ("alpha beta delta ", "gamma ")


async def test_on_session_start_inside_a_handler_does_not_deadlock(tmp_path: Path) -> None:
    client = Client.builder(name="client")
    result: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def start(message: Any, cx: Connection) -> None:
        async def run(session: ActiveSession) -> None:
            session.send_prompt("from a handler")
            result.set_result(await session.read_to_string())

        build_session(cx, tmp_path).on_session_start(run)

    client.on_notification(_Kick, start)

    # The agent kicks the client right after answering initialize (sessions need it first).
    app = Agent.builder(name="agent")

    @app.on_request
    async def initialize(
        req: InitializeRequest, responder: Responder[InitializeResponse], cx: Connection
    ) -> None:
        responder.respond(InitializeResponse(protocol_version=1))
        cx.send_notification(_Kick())

    app.merge(EchoAgent().builder())

    async def main(cx: Connection) -> str:
        async with asyncio.timeout(TIMEOUT):
            return await result

    assert await client.connect_with(app, initialized(main)) == "from a handler "


class _Kick(BaseModel):
    METHOD: ClassVar[str] = "_test/kick"


async def test_on_session_start_installs_routing_before_a_later_entry_of_the_same_batch(
    tmp_path: Path,
) -> None:
    # A plain UntypedRole client parks nothing: only routing installed by the response callback,
    # before the next batch entry is dispatched, can catch the update.
    got: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
    async with wire_connection(UntypedRole.builder(name="client")) as (cx, peer):

        async def run(session: ActiveSession) -> None:
            message = await session.read_update()
            assert isinstance(message, SessionMessage)
            got.set_result(message.text)

        build_session(cx, tmp_path).on_session_start(run)
        request = await peer.recv_request("session/new")
        assert request["params"] == {"cwd": str(tmp_path), "mcpServers": []}
        peer.send(
            [
                {"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}},
                update_frame("s1", "in the batch"),
            ]
        )
        async with asyncio.timeout(TIMEOUT):
            assert await got == "in the batch"


async def test_start_session_inside_a_handler_raises_deadlock_error(tmp_path: Path) -> None:
    client = Client.builder(name="client")
    raised: asyncio.Future[BaseException] = asyncio.get_running_loop().create_future()

    async def start(message: Any, cx: Connection) -> None:
        try:
            await build_session(cx, tmp_path).start_session()
        except DeadlockError as exc:
            raised.set_result(exc)

    client.on_notification(_Kick, start)
    app = EchoAgent().builder()
    app.with_spawned(lambda cx: _send_kick(cx))

    async def main(cx: Connection) -> BaseException:
        async with asyncio.timeout(TIMEOUT):
            return await raised

    error = await client.connect_with(app, main)
    assert "on_session_start" in str(error)


async def _send_kick(cx: Connection) -> None:
    cx.send_notification(_Kick())


async def test_a_refused_session_new_raises_the_agents_error(tmp_path: Path) -> None:
    agent = Agent.builder(name="agent")

    answers_initialize(agent)

    @agent.on_request
    async def new_session(req: NewSessionRequest) -> NewSessionResponse:
        raise AuthRequired()

    async def main(cx: Connection) -> None:
        async with asyncio.timeout(TIMEOUT):
            with pytest.raises(AuthRequired) as caught:
                await build_session(cx, tmp_path).start_session()
            assert "authenticate first" in "".join(caught.value.__notes__)
            assert cx.statistics()["dynamic_handlers"] == 0

    await Client.builder(name="client").connect_with(agent, initialized(main))


async def test_a_refused_session_removes_its_mcp_handlers(tmp_path: Path) -> None:
    agent = answers_initialize(Agent.builder(name="agent"))
    seen: list[NewSessionRequest] = []

    @agent.on_request
    async def new_session(req: NewSessionRequest) -> NewSessionResponse:
        seen.append(req)
        raise InternalError()

    class Registry:
        def __init__(self) -> None:
            self.registration: Any = None

        def attach(self, request: NewSessionRequest, cx: Connection) -> list[Any]:
            request.mcp_servers.append(McpServerStdio(name="tools", command="/bin/tools", args=[], env=[]))

            async def nothing(message: Any, cx: Connection) -> Any:
                from acpio.jsonrpc import Unhandled

                return Unhandled(message)

            self.registration = cx.add_dynamic_handler(nothing)
            return [self.registration]

    registry = Registry()

    async def main(cx: Connection) -> None:
        async with asyncio.timeout(TIMEOUT):
            builder = build_session(cx, tmp_path).with_mcp_server(registry)
            assert registry.registration.active
            with pytest.raises(InternalError):
                await builder.start_session()
            assert not registry.registration.active

    await Client.builder(name="client").connect_with(agent, initialized(main))
    assert [s["name"] for s in seen[0].to_wire()["mcpServers"]] == ["tools"]


async def test_the_connection_closing_mid_turn_raises_connection_closed(tmp_path: Path) -> None:
    agent = EchoAgent()
    app = agent.builder()

    @app.on_request
    async def prompt(req: PromptRequest, responder: Responder[PromptResponse], cx: Connection) -> None:
        cx.send_notification(chunk(req.session_id, "partial"))
        cx.close()  # keeps the responder: the prompt is never answered

    async def main(cx: Connection) -> None:
        async with asyncio.timeout(TIMEOUT), build_session(cx, tmp_path).start_session() as session:
            session.send_prompt("hi")
            first = await session.read_update()
            assert isinstance(first, SessionMessage)
            assert first.text == "partial"
            with pytest.raises(ConnectionClosed):
                await session.read_update()

    # the agent's own prompt handler sits before the echo one: builder handlers run in order
    ordered = Agent.builder(name="agent")
    ordered.on_request(PromptRequest, prompt)
    ordered.merge(app)
    await Client.builder(name="client").connect_with(ordered, initialized(main))


async def test_an_error_answer_to_the_prompt_is_raised_by_the_read(tmp_path: Path) -> None:
    agent = Agent.builder(name="agent")

    @agent.on_request
    async def prompt(req: PromptRequest) -> PromptResponse:
        raise InternalError("model unavailable")

    agent.merge(EchoAgent().builder())

    async def main(cx: Connection) -> None:
        async with asyncio.timeout(TIMEOUT), build_session(cx, tmp_path).start_session() as session:
            session.send_prompt("hi")
            with pytest.raises(InternalError, match="model unavailable"):
                await session.read_to_string()

    await Client.builder(name="client").connect_with(agent, initialized(main))


async def test_closing_detaches_and_reading_after_close_says_what_to_do(tmp_path: Path) -> None:
    async def main(cx: Connection) -> None:
        async with asyncio.timeout(TIMEOUT):
            async with build_session(cx, tmp_path).start_session() as session:
                assert session.active
                assert cx.statistics()["dynamic_handlers"] == 1
            assert not session.active
            assert cx.statistics()["dynamic_handlers"] == 0
            with pytest.raises(RuntimeError, match="closed"):
                await session.read_update()
            with pytest.raises(RuntimeError, match="closed"):
                session.send_prompt("x")

    await Client.builder(name="client").connect_with(EchoAgent().builder(), initialized(main))


async def test_run_until_scopes_the_session(tmp_path: Path) -> None:
    async def main(cx: Connection) -> str:
        async def work(session: ActiveSession) -> str:
            session.send_prompt("scoped")
            with pytest.raises(RuntimeError, match="run_until"):
                session.proxy_remaining_messages()
            return await session.read_to_string()

        async with asyncio.timeout(TIMEOUT):
            text = await build_session(cx, tmp_path).run_until(work)
        assert cx.statistics()["dynamic_handlers"] == 0
        return text

    assert (
        await Client.builder(name="client").connect_with(EchoAgent().builder(), initialized(main))
        == "scoped "
    )


async def test_a_builder_starts_one_session(tmp_path: Path) -> None:
    async def main(cx: Connection) -> None:
        builder = build_session(cx, tmp_path)
        async with asyncio.timeout(TIMEOUT), builder.start_session():
            with pytest.raises(RuntimeError, match="already started"):
                await builder.start_session()

    await Client.builder(name="client").connect_with(EchoAgent().builder(), initialized(main))


async def test_session_requests_reach_the_reader_and_can_be_answered(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await peer.initialize(cx)
        starting = asyncio.ensure_future(build_session(cx, tmp_path).start_session())
        request = await peer.recv_request("session/new")
        peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}})
        async with asyncio.timeout(TIMEOUT):
            session = await starting
        ask = {"sessionId": "s1", "toolCall": {"toolCallId": "t"}, "options": []}
        peer.send({"jsonrpc": "2.0", "id": 7, "method": "session/request_permission", "params": ask})
        async with asyncio.timeout(TIMEOUT):
            message = await session.read_update()
        assert isinstance(message, SessionMessage)
        assert (message.is_request, message.notification, message.text) == (True, None, None)
        from acpio.jsonrpc import RequestDispatch

        assert isinstance(message.dispatch, RequestDispatch)
        message.dispatch.responder.respond({"outcome": {"outcome": "cancelled"}})
        assert await peer.recv() == {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {"outcome": {"outcome": "cancelled"}},
        }
        # an unread request is answered when the session closes
        peer.send({"jsonrpc": "2.0", "id": 8, "method": "session/request_permission", "params": ask})
        await peer.barrier()
        session.close()
        reply = await peer.recv()
        assert (reply["id"], reply["error"]["code"]) == (8, -32603)


async def test_cancel_sends_session_cancel(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        session = attach_session(cx, NewSessionResponse(session_id="s9"))
        session.cancel()
        assert await peer.recv() == {
            "jsonrpc": "2.0",
            "method": "session/cancel",
            "params": {"sessionId": "s9"},
        }
        session.close()


def test_build_session_makes_cwd_absolute_and_copies_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    cx: Any = object()
    assert build_session(cx, "sub").request.cwd == str(tmp_path / "sub")
    assert build_session_cwd(cx).request.cwd == str(tmp_path)
    original = NewSessionRequest(cwd="/p", mcp_servers=[])
    builder = build_session_from(cx, original).with_mcp_server(
        McpServerList([McpServerStdio(name="t", command="/t", args=[], env=[])])
    )
    assert original.mcp_servers == []
    assert builder.request.to_wire()["mcpServers"] == [{"name": "t", "command": "/t", "args": [], "env": []}]
    assert build_session(cx, "/p").with_mcp_server(McpServerList()).request.to_wire() == {
        "cwd": "/p",
        "mcpServers": [],
    }
    with pytest.raises(TypeError, match="McpServerList"):
        build_session(cx, "/p").with_mcp_server(object())  # type: ignore[arg-type]
    from acpio.session.messages import content_blocks

    with pytest.raises(TypeError, match="TextContent"):
        content_blocks(["text"])  # type: ignore[list-item]


def test_session_methods_mixin_delegates(tmp_path: Path) -> None:
    class Cx(SessionMethods):
        pass

    cx = Cx()
    assert cx.build_session(tmp_path).request.cwd == str(tmp_path)
    assert cx.build_session_from(NewSessionRequest(cwd="/x", mcp_servers=[])).request.cwd == "/x"


def test_messages_parse_lazily() -> None:
    message = SessionMessage(NotificationDispatch("session/update", {"sessionId": "s", "update": 1}))
    from acpio.errors import InvalidParams

    with pytest.raises(InvalidParams):
        _ = message.text
    other = SessionMessage(NotificationDispatch("_x/y", {"sessionId": "s"}))
    assert (other.notification, other.update, other.text) == (None, None, None)


async def test_response_reproduces_the_session_new_answer_with_config_options(tmp_path: Path) -> None:
    result = {
        "sessionId": "s1",
        "configOptions": [{"id": "fast", "name": "Fast mode", "type": "boolean", "currentValue": True}],
        "modes": {"currentModeId": "code", "availableModes": [{"id": "code", "name": "Code"}]},
        "_meta": {"trace": "t"},
        "vendorField": [1, 2],
    }
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await peer.initialize(cx)
        starting = asyncio.ensure_future(build_session(cx, tmp_path).start_session())
        request = await peer.recv_request("session/new")
        peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        async with asyncio.timeout(TIMEOUT):
            session = await starting
        assert session.config_options is not None
        assert [option.id for option in session.config_options] == ["fast"]
        assert session.meta == {"trace": "t"}
        assert session.response().to_wire() == result
        session.close()


async def test_wrong_roles_say_which_connection_to_use(tmp_path: Path) -> None:
    async with wire_connection(Agent.builder(name="agent")) as (cx, _):
        with pytest.raises(TypeError, match="Client or a Proxy"):
            build_session(cx, tmp_path).on_session_start(_never)
    async with wire_connection(Client.builder(name="client")) as (cx, _):
        session = attach_session(cx, NewSessionResponse(session_id="s1"))
        with pytest.raises(TypeError, match="needs a Proxy connection"):
            session.proxy_remaining_messages()
        assert session.active
        session.close()


async def _never(session: ActiveSession) -> None:
    raise AssertionError("not called")


class _OneHandlerRegistry:
    """An MCP registry stand-in: declares one server and registers one (inert) handler."""

    def __init__(self) -> None:
        self.registration: Any = None

    def attach(self, request: NewSessionRequest, cx: Connection) -> list[Any]:
        request.mcp_servers.append(McpServerStdio(name="tools", command="/bin/tools", args=[], env=[]))

        async def decline(message: Any, cx: Connection) -> Any:
            from acpio.jsonrpc import Unhandled

            return Unhandled(message)

        self.registration = cx.add_dynamic_handler(decline)
        return [self.registration]


async def test_mcp_handlers_end_with_the_session_and_outlive_a_handoff(tmp_path: Path) -> None:
    scoped, handed_off = _OneHandlerRegistry(), _OneHandlerRegistry()
    async with wire_connection(UntypedRole.builder(name="proxy")) as (cx, peer):
        for registry, session_id in ((scoped, "s1"), (handed_off, "s2")):
            starting = asyncio.ensure_future(
                build_session(cx, tmp_path).with_mcp_server(registry).start_session()
            )
            request = await peer.recv_request("session/new")
            assert request["params"]["mcpServers"][0]["name"] == "tools"
            peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": session_id}})
            async with asyncio.timeout(TIMEOUT):
                session = await starting
            if registry is scoped:
                session.close()
            else:
                session.proxy_remaining_messages()
                session.close()  # does nothing after a hand-off
        assert not scoped.registration.active
        assert handed_off.registration.active
        handed_off.registration.remove()  # kept for the connection's lifetime
        assert handed_off.registration.active


async def test_a_caller_that_stops_waiting_cancels_session_new_and_attaches_nothing(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        await peer.initialize(cx)
        starting = asyncio.ensure_future(build_session(cx, tmp_path).start_session())
        request = await peer.recv_request("session/new")
        starting.cancel()
        cancel = await peer.recv_request("$/cancel_request")
        assert cancel["params"] == {"requestId": request["id"]}
        peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}})
        await peer.barrier()
        assert starting.cancelled()
        assert cx.statistics()["dynamic_handlers"] == 0


async def test_one_reader_at_a_time(tmp_path: Path) -> None:
    async with wire_connection(Client.builder(name="client")) as (cx, _):
        session = attach_session(cx, NewSessionResponse(session_id="s1"))
        first = asyncio.ensure_future(session.read_update())
        await asyncio.sleep(0)  # let the first reader start waiting
        with pytest.raises(RuntimeError, match="one task at a time"):
            await session.read_update()
        session.close()
        with pytest.raises(RuntimeError, match="closed"):
            await first


async def test_the_acp_roles_connections_build_sessions_as_methods() -> None:
    from acpio.acp_connection import AcpConnection
    from acpio.jsonrpc import Connection, UntypedRole
    from acpio.roles import Agent, Client, Proxy
    from acpio.session import SessionConnection

    assert Client.builder().connection_class is SessionConnection
    assert Proxy.builder().connection_class is SessionConnection
    assert Agent.builder().connection_class is AcpConnection  # it keeps the client's capabilities
    assert issubclass(SessionConnection, AcpConnection)
    assert UntypedRole.builder().connection_class is Connection
    assert issubclass(SessionConnection, Connection)
    for name in ("build_session", "build_session_cwd", "build_session_from", "attach_session"):
        assert callable(getattr(SessionConnection, name))
