"""Unstable methods are opt-in: off unless the builder (or compat connection) turns them on.

While they are off, sending one raises :class:`UnstableMethodNotEnabled` and writes nothing,
registering a typed handler for one raises it too, and receiving one answers ``-32601`` (method in
``data``) as for any unknown method: no handler sees it. A proxy forwards it unchanged; a
conductor routes everything. Stable, extension and ``$/cancel_request`` messages are unaffected.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from acpio import UnstableMethodNotEnabled
from acpio import schema as acp
from acpio.conductor import Chain
from acpio.jsonrpc import Builder, Connection, Dispatch, Unhandled
from acpio.roles import (
    PROXY_INITIALIZE_METHOD,
    SUCCESSOR_METHOD,
    Agent,
    Client,
    Conductor,
    Proxy,
    UntypedRole,
    unstable_methods,
)
from acpio.transports.channel import Channel

from ._support import TIMEOUT, WirePeer, serving

FORK = {"sessionId": "s1", "cwd": "/tmp"}
STATUS_UPDATE = {"state": "unauthenticated"}
MCP = {"serverId": "srv", "requestId": "r1", "method": "tools/list", "sessionId": "s1"}


class Pong(BaseModel):
    who: str


class VendorPing(BaseModel):
    METHOD: ClassVar[str] = "_vendor/ping"
    RESPONSE: ClassVar[type[BaseModel]] = Pong


def _method_not_found(answer: dict[str, Any], request_id: int, method: str) -> None:
    assert answer == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": -32601, "message": "Method not found", "data": method},
    }


def _recorder(app: Builder) -> list[str]:
    """A catch-all handler that records every method it sees and claims nothing."""
    seen: list[str] = []

    @app.on_dispatch
    async def record(message: Dispatch) -> Unhandled:
        seen.append(message.method)
        return Unhandled(message)

    return seen


async def _run(app: Builder, main: Callable[[Connection, WirePeer], Awaitable[None]]) -> None:
    """Connect ``app`` to a raw peer and run ``main(cx, peer)`` while it is served."""
    ours, theirs = Channel.duplex()
    peer = WirePeer(theirs, timeout=TIMEOUT)

    async def body(cx: Connection) -> None:
        await main(cx, peer)

    async with asyncio.timeout(TIMEOUT):
        await app.connect_with(ours, body)


# --- which methods --------------------------------------------------------------------------------


def test_the_unstable_methods_are_the_rows_of_the_method_table_marked_unstable() -> None:
    unstable = unstable_methods()
    assert unstable == {m.method for m in acp.METHODS if not m.stable}
    assert {"session/fork", "providers/list", "mcp/message", "auth/status_update"} <= unstable
    assert not unstable & {m.method for m in acp.METHODS if m.stable}
    assert "$/cancel_request" not in unstable
    assert not any(method.startswith("_") for method in unstable)


def test_the_flag_is_off_by_default_and_shows_on_the_role() -> None:
    assert Agent.builder().role.disabled_methods() == unstable_methods()
    assert Agent.builder(unstable=True).role.disabled_methods() == frozenset()
    assert repr(Client.builder(unstable=True).role) == "Client(unstable=True)"
    assert repr(Client.builder().role) == "Client()"
    # The proxy-chain methods are a proxy's own machinery; a conductor only routes.
    assert PROXY_INITIALIZE_METHOD not in Proxy.builder().role.disabled_methods()
    assert SUCCESSOR_METHOD not in Proxy.builder().role.disabled_methods()
    assert "session/fork" in Proxy.builder().role.disabled_methods()
    assert Conductor.builder().role.disabled_methods() == frozenset()
    assert UntypedRole.builder().role.disabled_methods() == frozenset()


# --- receiving ------------------------------------------------------------------------------------


async def test_an_unstable_request_answers_method_not_found_and_reaches_no_handler() -> None:
    app = Agent.builder()
    seen = _recorder(app)
    async with serving(app) as client:
        client.request("session/fork", FORK, request_id=1)
        _method_not_found(await client.recv(), 1, "session/fork")
        client.notify("mcp/message", MCP)  # an unstable notification: dropped
        client.request("session/bogus", {}, request_id=2)  # an unknown method: the same answer
        _method_not_found(await client.recv(), 2, "session/bogus")
    assert seen == ["session/bogus"]


async def test_a_typed_handler_for_an_unstable_method_is_refused_at_registration() -> None:
    app = Agent.builder(name="no-flag")

    async def fork(req: acp.ForkSessionRequest) -> acp.ForkSessionResponse:
        return acp.ForkSessionResponse(session_id="s2")

    with pytest.raises(UnstableMethodNotEnabled, match=r"Agent\.builder\(unstable=True\)") as caught:
        app.on_request(fork)
    assert caught.value.method == "session/fork"
    assert caught.value.action == "handle"
    with pytest.raises(UnstableMethodNotEnabled):
        app.on_request(acp.ForkSessionRequest, fork)

    async def status(note: acp.AuthStatusUpdateNotification) -> None:
        pass

    with pytest.raises(UnstableMethodNotEnabled, match="auth/status_update"):
        Client.builder().on_notification(status)
    # Merging a builder that has one is refused the same way.
    flagged = Agent.builder(unstable=True)
    flagged.on_request(fork)
    with pytest.raises(UnstableMethodNotEnabled):
        app.merge(flagged)
    assert app.statistics()["handlers"] == 0


async def test_with_the_flag_an_unstable_request_is_handled() -> None:
    app = Agent.builder(unstable=True)

    @app.on_request
    async def fork(req: acp.ForkSessionRequest) -> acp.ForkSessionResponse:
        return acp.ForkSessionResponse(session_id=f"{req.session_id}-fork")

    async with serving(app) as client:
        client.request("session/fork", FORK, request_id=1)
        assert await client.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1-fork"}}


async def test_a_client_refuses_an_unstable_session_request_at_once_instead_of_parking_it() -> None:
    # The Client role parks unclaimed session messages; a disabled one is answered right away.
    app = Client.builder()
    seen = _recorder(app)
    async with serving(app) as agent:
        agent.request("mcp/message", MCP, request_id=5)
        _method_not_found(await agent.recv(), 5, "mcp/message")
        agent.notify("auth/status_update", STATUS_UPDATE)
    assert seen == []


async def test_stable_and_extension_messages_are_unaffected() -> None:
    app = Agent.builder()

    @app.on_request
    async def initialize(req: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    @app.on_request
    async def vendor(req: VendorPing) -> Pong:
        return Pong(who="vendor")

    async with serving(app) as client:
        client.request("initialize", {"protocolVersion": 1}, request_id=1)
        assert (await client.recv())["result"]["protocolVersion"] == 1
        client.request("_vendor/ping", {}, request_id=2)
        assert (await client.recv())["result"] == {"who": "vendor"}


# --- sending --------------------------------------------------------------------------------------


async def test_sending_an_unstable_method_raises_and_writes_nothing() -> None:
    async def main(cx: Connection, client: WirePeer) -> None:
        update = acp.AuthStatusUpdateNotification.model_validate(STATUS_UPDATE)
        with pytest.raises(UnstableMethodNotEnabled, match=r"auth/status_update.*Agent\.builder") as caught:
            cx.send_notification(update)
        assert caught.value.action == "send"
        with pytest.raises(UnstableMethodNotEnabled):
            cx.send_notification("auth/status_update", STATUS_UPDATE)
        with pytest.raises(UnstableMethodNotEnabled):
            cx.send_request("mcp/message", MCP)
        with pytest.raises(UnstableMethodNotEnabled):
            cx.send_request(acp.MessageMcpRequest.model_validate(MCP))
        # Stable and extension methods go out; they are the first frames the client sees.
        cx.send_notification("_vendor/marker", {})
        cx.send_notification(acp.SessionNotification.model_validate(_chunk()))
        assert (await client.recv())["method"] == "_vendor/marker"
        assert (await client.recv())["method"] == "session/update"

    await _run(Agent.builder(), main)


async def test_with_the_flag_unstable_methods_are_sent() -> None:
    async def main(cx: Connection, client: WirePeer) -> None:
        cx.send_notification(acp.AuthStatusUpdateNotification.model_validate(STATUS_UPDATE))
        assert await client.recv() == {
            "jsonrpc": "2.0",
            "method": "auth/status_update",
            "params": STATUS_UPDATE,
        }

    await _run(Agent.builder(unstable=True), main)


async def test_a_client_sending_fork_without_the_flag_raises_before_writing() -> None:
    async def main(cx: Connection, agent: WirePeer) -> None:
        sent = cx.send_request(acp.InitializeRequest(protocol_version=1))
        request = await agent.recv()
        fork = {"sessionCapabilities": {"fork": {}}}  # advertised: the switch alone refuses it
        agent.send(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "result": {"protocolVersion": 1, "agentCapabilities": fork},
            }
        )
        await sent
        with pytest.raises(UnstableMethodNotEnabled, match=r"session/fork.*Client\.builder\(unstable=True\)"):
            cx.send_request(acp.ForkSessionRequest.model_validate(FORK))
        cx.send_notification("_vendor/marker", {})
        assert (await agent.recv())["method"] == "_vendor/marker"

    await _run(Client.builder(), main)


# --- proxies and conductors -----------------------------------------------------------------------


async def test_a_proxy_without_the_flag_forwards_unstable_messages_unchanged() -> None:
    app = Proxy.builder()
    seen = _recorder(app)
    async with serving(app) as conductor:
        # From the client: wrapped for the successor, inner method and params untouched.
        conductor.request("session/fork", {**FORK, "x-extra": [1]}, request_id=1)
        wrapped = await conductor.recv()
        assert wrapped["method"] == SUCCESSOR_METHOD
        assert wrapped["params"] == {"method": "session/fork", "params": {**FORK, "x-extra": [1]}}
        # The successor's answer goes back to the client's request.
        conductor.send({"jsonrpc": "2.0", "id": wrapped["id"], "result": {"sessionId": "s2"}})
        assert await conductor.recv() == {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s2"}}
        # From the agent: unwrapped for the client.
        conductor.notify(SUCCESSOR_METHOD, {"method": "auth/status_update", "params": STATUS_UPDATE})
        assert await conductor.recv() == {
            "jsonrpc": "2.0",
            "method": "auth/status_update",
            "params": STATUS_UPDATE,
        }
    assert seen == []  # forwarded, never handled


async def test_a_proxy_handles_the_proxy_chain_methods_without_the_flag() -> None:
    app = Proxy.builder()

    @app.on_request
    async def init(req: acp.InitializeProxyRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    async def fork(req: acp.ForkSessionRequest) -> acp.ForkSessionResponse:
        return acp.ForkSessionResponse(session_id="never")

    with pytest.raises(UnstableMethodNotEnabled, match=r"Proxy\.builder\(unstable=True\)"):
        app.on_request(fork)
    async with serving(app) as conductor:
        conductor.request(PROXY_INITIALIZE_METHOD, {"protocolVersion": 1}, request_id=1)
        assert (await conductor.recv())["result"] == {"protocolVersion": 1}


async def test_a_proxy_with_the_flag_handles_unstable_methods_itself() -> None:
    app = Proxy.builder(unstable=True)

    @app.on_request(peer=Client)
    async def fork(req: acp.ForkSessionRequest) -> acp.ForkSessionResponse:
        return acp.ForkSessionResponse(session_id="by-proxy")

    async with serving(app) as conductor:
        conductor.request("session/fork", FORK, request_id=1)
        assert (await conductor.recv())["result"] == {"sessionId": "by-proxy"}


async def test_a_conductor_role_sees_unstable_messages_without_the_flag() -> None:
    app = Conductor.builder()
    seen = _recorder(app)
    async with serving(app) as proxy:
        proxy.notify("auth/status_update", STATUS_UPDATE)
        proxy.request("session/fork", FORK, request_id=1)
        _method_not_found(await proxy.recv(), 1, "session/fork")  # nobody claimed it
    assert seen == ["auth/status_update", "session/fork"]


def _agent(*, unstable: bool) -> Builder:
    app = Agent.builder(name="forker", unstable=unstable)

    @app.on_request
    async def initialize(req: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse(protocol_version=1)

    if unstable:

        @app.on_request
        async def fork(req: acp.ForkSessionRequest) -> acp.ForkSessionResponse:
            return acp.ForkSessionResponse(session_id="forked")

    return app


@asynccontextmanager
async def _chain_client(chain: Chain) -> AsyncIterator[WirePeer]:
    ours, theirs = Channel.duplex()
    served = asyncio.create_task(chain.serve(ours))
    client = WirePeer(theirs, timeout=TIMEOUT)
    try:
        client.request("initialize", {"protocolVersion": 1}, request_id=1)
        assert (await client.recv())["result"]["protocolVersion"] == 1
        yield client
    finally:
        await client.close()
        async with asyncio.timeout(TIMEOUT):
            await served


@pytest.mark.parametrize("agent_unstable", [True, False])
async def test_through_a_conductor_and_a_proxy_the_agent_decides(agent_unstable: bool) -> None:
    # Neither the conductor nor the proxy turned unstable methods on: they only pass them on.
    chain = Chain.agent("conductor", [Proxy.builder(name="plain-proxy"), _agent(unstable=agent_unstable)])
    async with _chain_client(chain) as client:
        client.request("session/fork", FORK, request_id=2)
        answer = await client.recv()
    if agent_unstable:
        assert answer == {"jsonrpc": "2.0", "id": 2, "result": {"sessionId": "forked"}}
    else:
        _method_not_found(answer, 2, "session/fork")


def _chunk() -> dict[str, Any]:
    return {
        "sessionId": "s1",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},
    }
