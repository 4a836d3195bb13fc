"""A proxy between a client and an agent, behind a tiny conductor: forwarding, envelopes, sessions.

The chain is ``Client builder -> MiniConductor -> Proxy builder -> (MiniConductor) -> Agent builder``;
the conductor records the frames on its link to the proxy, which shows what is wrapped and what not.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from acpio.errors import InvalidRequest, RequestCancelled, RequestError
from acpio.jsonrpc import (
    Builder,
    Connection,
    Dispatch,
    Forward,
    RequestDispatch,
    Responder,
    ResponseDispatch,
    Unhandled,
    UntypedMessage,
)
from acpio.roles import Agent, Client, InitializeProxyRequest, Proxy
from acpio.schema import (
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionNotification,
)
from acpio.transports.channel import Channel

from ._support import TIMEOUT, MiniConductor, chain, serving

#: What the client sends first: ACP refuses its session/* requests until the agent answered it.
INIT = InitializeRequest(protocol_version=1)
META = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor": {"k": [1, 2]}}
#: Run a test under a current conductor and under an older one (``_proxy/...`` names).
CONDUCTORS = pytest.mark.parametrize("legacy", [False, True], ids=["current conductor", "legacy conductor"])


def _update(session_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "sessionId": session_id,
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}},
        **extra,
    }


class AgentLog:
    """A scripted agent: records what reaches it; answers, fails, streams or waits on request."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []
        self.cancelled = asyncio.Event()
        self.holding = asyncio.Event()
        self.cx: Connection | None = None

    def builder(self) -> Builder:
        app = Agent.builder(name="agent")

        @app.on_request
        async def initialize(req: InitializeRequest) -> InitializeResponse:
            self.seen.append(("initialize", req.to_wire()))
            return InitializeResponse.model_validate(
                {"protocolVersion": 1, "agentInfo": {"name": "a", "version": "1"}}
            )

        @app.on_dispatch
        async def anything(message: Dispatch, cx: Connection) -> Unhandled | None:
            self.cx = cx
            if not isinstance(message, RequestDispatch):
                if message.method != "$/cancel_request":
                    self.seen.append((message.method, message.params))
                return Unhandled(message)
            self.seen.append((message.method, message.params))
            responder = message.responder
            if message.method == "session/new":
                if message.params.get("cwd") == "/fail":
                    raise InvalidRequest({"cwd": "/fail"})
                if message.params.get("cwd") == "/hold":
                    cx.spawn(self._hold, responder)
                    return None
                responder.respond({"sessionId": "s1", "extra": {"kept": True}})
                cx.send_notification("session/update", _update("s1", "early"))
            elif message.method == "test/fail":
                raise RequestError(-32042, "Custom failure", {"why": message.params, "_meta": META})
            elif message.method == "test/hold":
                cx.spawn(self._hold, responder)
            elif message.method == "test/ask_client":
                cx.spawn(self._ask_client, cx, responder, message.params)
            else:
                responder.respond({"echo": message.params, "_meta": META})
            return None

        return app

    async def _hold(self, responder: Responder[Any]) -> None:
        self.holding.set()
        await responder.wait_cancelled()
        self.cancelled.set()
        responder.respond_with_error(RequestCancelled())

    async def _ask_client(self, cx: Connection, responder: Responder[Any], params: Any) -> None:
        sent = cx.send_request(UntypedMessage(params["method"], params["params"]))
        if params.get("cancel"):
            await self.holding.wait()
            sent.cancel()
        try:
            responder.respond({"client said": await sent})
        except RequestError as exc:
            responder.respond({"client failed": exc.code})


def passthrough_proxy(record: list[Connection] | None = None) -> Builder:
    """A proxy with no handlers: everything goes through its role's default handler."""
    app = Proxy.builder(name="proxy")
    if record is not None:
        app.with_spawned(lambda cx: _store(record, cx))
    return app


async def _store(record: list[Connection], cx: Connection) -> None:
    record.append(cx)


async def _client(end: Channel, main: Any, app: Builder | None = None) -> Any:
    async with asyncio.timeout(TIMEOUT):
        return await (app if app is not None else Client.builder()).connect_with(end, main)


# --- initialization -------------------------------------------------------------------------------


@CONDUCTORS
async def test_initialize_reaches_the_proxy_as_proxy_initialize_and_the_agent_as_initialize(
    legacy: bool,
) -> None:
    agent = AgentLog()
    params = {
        "protocolVersion": 1,
        "clientInfo": {"name": "ed", "version": "1"},
        "future": {"x": 1},
        "_meta": META,
    }

    async def main(cx: Connection) -> Any:
        return await cx.send_request(UntypedMessage("initialize", params))

    async with chain(passthrough_proxy(), agent.builder(), legacy=legacy) as (conductor, end):
        result = await _client(end, main)
    assert result == {"protocolVersion": 1, "agentInfo": {"name": "a", "version": "1"}}
    assert agent.seen[0] == ("initialize", params)  # unknown fields and _meta intact
    [to_proxy] = conductor.wire("to proxy", conductor.names.initialize)
    assert to_proxy["params"] == params
    # The proxy answers in kind: the names of the conductor that initialized it.
    [from_proxy] = conductor.wire("from proxy", conductor.names.successor)
    assert from_proxy["params"] == {"method": "initialize", "params": params}
    assert "id" in from_proxy


@CONDUCTORS
async def test_a_typed_proxy_initialize_handler_sees_the_conductors_request(legacy: bool) -> None:
    app = Proxy.builder()
    seen: list[Any] = []

    @app.on_request(peer=Client)
    async def init(req: InitializeProxyRequest, responder: Responder[Any], cx: Connection) -> None:
        seen.append(req.protocol_version)
        # Initialize the successor first, then answer: capabilities flow back through the chain.
        cx.send_request_to(
            Agent, InitializeRequest(protocol_version=req.protocol_version)
        ).forward_response_to(responder)

    async def main(cx: Connection) -> InitializeResponse:
        result: InitializeResponse = await cx.send_request(InitializeRequest(protocol_version=1))
        return result

    async with chain(app, AgentLog().builder(), legacy=legacy) as (_, end):
        result = await _client(end, main)
    assert seen == [1]  # `_proxy/initialize` reaches the handler of `proxy/initialize` too
    assert result.agent_info is not None
    assert result.agent_info.name == "a"


async def test_a_plain_initialize_is_refused_by_a_proxy() -> None:
    async with serving(Proxy.builder()) as conductor:
        conductor.request("initialize", {"protocolVersion": 1}, request_id=1)
        reply = await conductor.recv()
    assert reply["id"] == 1
    assert reply["error"]["code"] == -32600
    assert "initialized with `proxy/initialize` (or `_proxy/initialize`)" in reply["error"]["data"]


# --- forwarding -----------------------------------------------------------------------------------


async def test_requests_results_and_meta_are_forwarded_unvalidated() -> None:
    # No `proxy/initialize` first: the proxy wraps with the current names.
    agent = AgentLog()
    params = {
        "sessionId": "s1",
        "prompt": [{"type": "text", "text": "hi", "future": 1}],
        "_meta": META,
        "x": [1],
    }

    async def main(cx: Connection) -> Any:
        return await cx.send_request(UntypedMessage("session/prompt", params))

    async with chain(passthrough_proxy(), agent.builder()) as (conductor, end):
        result = await _client(end, main)
    assert agent.seen == [("session/prompt", params)]
    assert result == {"echo": params, "_meta": META}
    [wrapped] = conductor.wire("from proxy", "proxy/successor")
    assert wrapped["params"] == {"method": "session/prompt", "params": params}
    # The answer travels as a plain response to the envelope's id.
    [answer] = [m for m in conductor.wire("to proxy") if "method" not in m and m["id"] == wrapped["id"]]
    assert answer["result"] == {"echo": params, "_meta": META}


async def test_errors_are_forwarded_with_code_message_and_data() -> None:
    async def main(cx: Connection) -> None:
        with pytest.raises(RequestError) as caught:
            await cx.send_request("test/fail", {"n": 1})
        assert (caught.value.code, caught.value.message) == (-32042, "Custom failure")
        assert caught.value.data == {"why": {"n": 1}, "_meta": META}

    async with chain(passthrough_proxy(), AgentLog().builder()) as (_, end):
        await _client(end, main)


async def test_notifications_are_forwarded_both_ways_and_agent_requests_reach_the_client() -> None:
    agent = AgentLog()
    client = Client.builder()
    updates: list[Any] = []

    @client.on_dispatch
    async def from_agent(message: Dispatch) -> Unhandled | None:
        if message.method == "session/update":
            updates.append(message.params)
            return None
        if isinstance(message, RequestDispatch) and message.method == "fs/read_text_file":
            assert message.is_from(Agent)
            message.responder.respond({"content": "file text", "_meta": META})
            return None
        return Unhandled(message)

    cancel = {"sessionId": "s1", "_meta": META}
    ask = {"method": "fs/read_text_file", "params": {"sessionId": "s1", "path": "/a", "_meta": META}}

    async def main(cx: Connection) -> Any:
        cx.send_notification(UntypedMessage("session/cancel", cancel))
        return await cx.send_request("test/ask_client", ask)

    async with chain(passthrough_proxy(), agent.builder()) as (conductor, end):
        result = await _client(end, main, client)
    assert ("session/cancel", cancel) in agent.seen
    assert result == {"client said": {"content": "file text", "_meta": META}}
    # Client -> agent notification: wrapped, without an id.
    [note] = [
        m
        for m in conductor.wire("from proxy", "proxy/successor")
        if m["params"]["method"] == "session/cancel"
    ]
    assert "id" not in note
    assert note["params"]["params"] == cancel
    # Agent -> client request: wrapped towards the proxy, plain from it.
    [inbound] = [m for m in conductor.wire("to proxy", "proxy/successor") if "id" in m]
    assert inbound["params"] == ask
    [outbound] = conductor.wire("from proxy", "fs/read_text_file")
    assert outbound["params"] == ask["params"]


async def test_session_new_routes_the_new_sessions_messages_back_to_the_client() -> None:
    agent = AgentLog()
    proxies: list[Connection] = []
    client = Client.builder()
    got_update = asyncio.Event()
    updates: list[Any] = []

    @client.on_notification
    async def update(note: SessionNotification) -> None:
        updates.append(note.to_wire())
        got_update.set()

    async def main(cx: Connection) -> Any:
        await cx.send_request(INIT)
        response = await cx.send_request(NewSessionRequest(cwd="/tmp", mcp_servers=[]))
        await got_update.wait()
        assert proxies[0].statistics()["dynamic_handlers"] == 1  # ProxySessionMessages("s1")
        with pytest.raises(InvalidRequest):
            await cx.send_request(NewSessionRequest(cwd="/fail", mcp_servers=[]))
        assert proxies[0].statistics()["dynamic_handlers"] == 1  # a failed session/new adds none
        return response

    async with chain(passthrough_proxy(proxies), agent.builder()) as (_, end):
        response = await _client(end, main, client)
    assert response == NewSessionResponse.model_validate({"sessionId": "s1", "extra": {"kept": True}})
    assert response.to_wire()["extra"] == {"kept": True}
    assert updates == [_update("s1", "early")]


# --- cancellation ---------------------------------------------------------------------------------


@CONDUCTORS
async def test_a_client_cancellation_is_reissued_hop_by_hop_with_each_hops_own_id(legacy: bool) -> None:
    # C5.1
    agent = AgentLog()

    async def main(cx: Connection) -> Any:
        await cx.send_request(InitializeRequest(protocol_version=1))  # sets the names the proxy uses
        sent = cx.send_request("test/hold", {"n": 1})
        await agent.holding.wait()
        sent.cancel()
        with pytest.raises(RequestCancelled):
            await sent
        return await cx.send_request("test/echo", {"after": True})  # the chain still works

    async with chain(passthrough_proxy(), agent.builder(), legacy=legacy) as (conductor, end):
        result = await _client(end, main)
    assert agent.cancelled.is_set()
    assert result["echo"] == {"after": True}
    [to_proxy_request] = conductor.wire("to proxy", "test/hold")
    [to_proxy_cancel] = conductor.wire("to proxy", "$/cancel_request")
    assert to_proxy_cancel["params"] == {"requestId": to_proxy_request["id"]}
    [wrapped] = [
        m
        for m in conductor.wire("from proxy", conductor.names.successor)
        if m["params"]["method"] == "test/hold"
    ]
    [from_proxy_cancel] = conductor.wire("from proxy", "$/cancel_request")  # plain, never wrapped
    assert from_proxy_cancel["params"] == {"requestId": wrapped["id"]}
    agent_cancels = [
        m for d, m in conductor.agent_wire if d == "to agent" and m.get("method") == "$/cancel_request"
    ]
    [agent_request] = [
        m for d, m in conductor.agent_wire if d == "to agent" and m.get("method") == "test/hold"
    ]
    assert [c["params"] for c in agent_cancels] == [{"requestId": agent_request["id"]}]


async def test_an_agent_cancellation_reaches_the_client_hop_by_hop() -> None:
    # C5.2
    agent = AgentLog()
    client = Client.builder()
    client_cancelled = asyncio.Event()

    @client.on_dispatch
    async def slow(message: Dispatch, cx: Connection) -> Unhandled | None:
        if isinstance(message, RequestDispatch) and message.method == "test/slow":
            agent.holding.set()

            async def wait() -> None:
                await message.responder.wait_cancelled()
                client_cancelled.set()
                message.responder.respond_with_error(RequestCancelled())

            cx.spawn(wait)
            return None
        return Unhandled(message)

    async def main(cx: Connection) -> Any:
        return await cx.send_request("test/ask_client", {"method": "test/slow", "params": {}, "cancel": True})

    async with chain(passthrough_proxy(), agent.builder()) as (conductor, end):
        result = await _client(end, main, client)
    assert result == {"client failed": -32800}
    assert client_cancelled.is_set()
    [wrapped] = [
        m for m in conductor.wire("to proxy", "proxy/successor") if m["params"]["method"] == "test/slow"
    ]
    [cancel_in] = conductor.wire("to proxy", "$/cancel_request")
    assert cancel_in["params"] == {"requestId": wrapped["id"]}
    [plain] = conductor.wire("from proxy", "test/slow")
    [cancel_out] = conductor.wire("from proxy", "$/cancel_request")
    assert cancel_out["params"] == {"requestId": plain["id"]}


async def test_session_new_is_cancellable_through_the_proxy() -> None:
    # C5.4: the proxy forwards session/new with a result hook, and still forwards the cancellation.
    agent = AgentLog()
    proxies: list[Connection] = []

    async def main(cx: Connection) -> None:
        await cx.send_request(INIT)
        sent = cx.send_request(NewSessionRequest(cwd="/hold", mcp_servers=[]))
        await agent.holding.wait()
        sent.cancel()
        with pytest.raises(RequestCancelled):
            await sent

    async with chain(passthrough_proxy(proxies), agent.builder()) as (_, end):
        await _client(end, main)
    assert agent.cancelled.is_set()
    assert proxies[0].statistics()["dynamic_handlers"] == 0


# --- a proxy that does something ------------------------------------------------------------------


async def test_a_proxy_with_peer_handlers_rewrites_prompts_and_updates() -> None:
    # Like the Rust SDK's arrow proxy: prefix the agent's text with ">" on its way to the client.
    app = Proxy.builder(name="arrow")

    @app.on_notification(peer=Agent)
    async def update(note: SessionNotification, cx: Connection) -> None:
        wire = note.to_wire()
        wire["update"]["content"]["text"] = ">" + wire["update"]["content"]["text"]
        cx.send_notification_to(Client, SessionNotification.model_validate(wire))

    @app.on_request(peer=Client)
    async def prompt(req: PromptRequest, responder: Responder[PromptResponse], cx: Connection) -> None:
        cx.send_request_to(Agent, req).forward_response_to(responder)

    agent = Agent.builder()

    @agent.on_request
    async def initialize(req: InitializeRequest) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    @agent.on_request
    async def answer(
        req: PromptRequest, responder: Responder[PromptResponse], cx: Connection
    ) -> PromptResponse:
        cx.send_notification(SessionNotification.model_validate(_update(req.session_id, "Hello")))
        return PromptResponse.model_validate({"stopReason": "end_turn"})

    result, texts = await _prompt_through(app, agent)
    assert result.stop_reason == "end_turn"
    assert texts == [">Hello"]


async def test_forward_sends_a_changed_message_on_skipping_the_other_handlers() -> None:
    app = Proxy.builder(name="rewriter")
    later: list[str] = []

    @app.on_request(peer=Client)
    async def shout(req: PromptRequest) -> Forward:
        wire = req.to_wire()
        wire["prompt"] = [{"type": "text", "text": "LOUD"}]
        return Forward(PromptRequest.model_validate(wire))

    @app.on_notification(peer=Agent)
    async def mark(note: SessionNotification) -> Forward:
        wire = note.to_wire()
        wire["update"]["content"]["text"] += "!"
        return Forward(SessionNotification.model_validate(wire))

    @app.on_dispatch
    async def never(message: Dispatch) -> Unhandled:
        if not isinstance(message, ResponseDispatch):  # responses to forwarded requests do pass
            later.append(message.method)  # Forward skips this one
        return Unhandled(message)

    agent = Agent.builder()
    prompts: list[Any] = []

    @agent.on_request
    async def initialize(req: InitializeRequest) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    @agent.on_request
    async def answer(req: PromptRequest, cx: Connection) -> PromptResponse:
        prompts.append(req.to_wire()["prompt"])
        cx.send_notification(SessionNotification.model_validate(_update(req.session_id, "ok")))
        return PromptResponse.model_validate({"stopReason": "end_turn"})

    result, texts = await _prompt_through(app, agent)
    assert result.stop_reason == "end_turn"
    assert prompts == [[{"type": "text", "text": "LOUD"}]]
    assert texts == ["ok!"]
    assert "session/prompt" not in later
    assert "session/update" not in later


async def test_forward_where_nothing_forwards_answers_with_the_reason() -> None:
    app = Agent.builder(name="not-a-proxy")

    @app.on_request
    async def prompt(req: PromptRequest) -> Forward:
        return Forward(req)

    async with serving(app) as peer:
        request_id = peer.request("session/prompt", {"sessionId": "s", "prompt": []})
        answer = await peer.response_to(request_id)
    assert answer["error"]["code"] == -32603
    assert "Forward is for proxies" in answer["error"]["data"]["details"]


async def _prompt_through(proxy: Builder, agent: Builder) -> tuple[Any, list[str]]:
    """A client prompts ``agent`` through ``proxy``; the answer and the texts the client was shown."""
    client = Client.builder()
    texts: list[str] = []

    @client.on_notification
    async def shown(note: SessionNotification) -> None:
        texts.append(note.to_wire()["update"]["content"]["text"])

    async def main(cx: Connection) -> Any:
        await cx.send_request(INIT)
        return await cx.send_request(PromptRequest.model_validate({"sessionId": "s1", "prompt": []}))

    async with chain(proxy, agent) as (_, end):
        return await _client(end, main, client), texts


async def test_the_mini_conductor_is_a_component() -> None:
    conductor = MiniConductor(passthrough_proxy(), AgentLog().builder())

    async def main(cx: Connection) -> Any:
        return await cx.send_request("test/echo", {"x": 1})

    async with asyncio.timeout(TIMEOUT):
        assert await Client.builder().connect_with(conductor, main) == {"echo": {"x": 1}, "_meta": META}
    await conductor.wait_finished()
