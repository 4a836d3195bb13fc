"""Initialization through the conductor: lazy start, `proxy/initialize` vs `initialize`, instantiators."""

from __future__ import annotations

from typing import Any

import pytest

from acpio import Agent, Client, InvalidRequest, Proxy
from acpio import schema as acp
from acpio.conductor import Chain, ConductorError
from acpio.jsonrpc import Connection, Responder, UntypedMessage
from acpio.roles import InitializeProxyRequest

from ._support import RawComponent, arrow_proxy, prompt_text, raw_client, recording_proxy, run_client
from .scripted_agent import ScriptedAgent

PARAMS = {"protocolVersion": 1, "clientInfo": {"name": "editor", "version": "1"}, "future": {"x": 1}}


async def initialize(cx: Connection) -> Any:
    return await cx.send_request(UntypedMessage("initialize", PARAMS))


def received(log: list[tuple[str, Any]]) -> list[str]:
    return [method for method, _ in log]


async def test_a_single_component_receives_a_plain_initialize() -> None:
    agent = ScriptedAgent()
    result = await run_client(Chain.agent("conductor", [agent.builder()]), initialize)
    assert agent.seen == [{"method": "initialize", "id": 1, "params": PARAMS}]
    assert result["agentInfo"] == {"name": "scripted", "version": "1.0"}


async def test_a_proxy_receives_proxy_initialize_and_the_agent_initialize() -> None:
    agent = ScriptedAgent()
    log: list[tuple[str, Any]] = []
    result = await run_client(Chain.agent("conductor", [recording_proxy(log), agent.builder()]), initialize)
    assert log == [("proxy/initialize", PARAMS)]
    assert agent.seen[0]["method"] == "initialize"
    assert agent.seen[0]["params"] == PARAMS
    # The agent's capabilities flow back to the client unchanged.
    assert result == {
        "protocolVersion": 1,
        "agentCapabilities": {"loadSession": False},
        "agentInfo": {"name": "scripted", "version": "1.0"},
        "_meta": {"agent": "scripted"},
    }


async def test_every_proxy_of_a_longer_chain_receives_proxy_initialize() -> None:
    agent = ScriptedAgent()
    logs: list[list[tuple[str, Any]]] = [[], [], []]
    chain = Chain.agent("conductor", [*(recording_proxy(log) for log in logs), agent.builder()])
    await run_client(chain, initialize)
    assert [received(log) for log in logs] == [["proxy/initialize"]] * 3
    assert agent.methods() == ["initialize"]


async def test_a_proxy_answers_after_initializing_its_successor() -> None:
    """A typed proxy handler adds to what the agent answered: capabilities flow back through the chain."""
    proxy = Proxy.builder(name="capable")

    @proxy.on_request(peer=Client)
    async def init(req: InitializeProxyRequest, responder: Responder[Any], cx: Connection) -> None:
        async def answered(result: acp.InitializeResponse | Exception) -> None:
            assert isinstance(result, acp.InitializeResponse)
            result.meta = {**(result.meta or {}), "proxy": "capable"}
            responder.respond(result)

        cx.send_request_to(Agent, acp.InitializeRequest(protocol_version=1)).on_receiving_result(answered)

    result = await run_client(Chain.agent("conductor", [proxy, ScriptedAgent().builder()]), initialize)
    assert result["_meta"] == {"agent": "scripted", "proxy": "capable"}


def forwards_proxy_initialize(method: str) -> Any:
    """A broken proxy: it passes ``method`` (a `proxy/initialize`) to its successor, not `initialize`."""
    proxy = Proxy.builder(name="broken")

    @proxy.on_request(peer=Client)
    async def init(req: InitializeProxyRequest, responder: Responder[Any], cx: Connection) -> None:
        sent = cx.send_request_to(Agent, UntypedMessage(method, req.to_wire()))
        sent.forward_response_to(responder)

    return proxy


@pytest.mark.parametrize("method", ["proxy/initialize", "_proxy/initialize"])
@pytest.mark.parametrize("successor", ["agent", "proxy"])
async def test_a_proxy_that_sends_proxy_initialize_downstream_gets_invalid_request(
    successor: str, method: str
) -> None:
    agent = ScriptedAgent()
    log: list[tuple[str, Any]] = []
    after = [recording_proxy(log)] if successor == "proxy" else []
    chain = Chain.agent("conductor", [forwards_proxy_initialize(method), *after, agent.builder()])

    async def main(cx: Connection) -> InvalidRequest:
        with pytest.raises(InvalidRequest) as caught:
            await initialize(cx)
        return caught.value

    error = await run_client(chain, main)
    assert f"`{method}` requests are only sent by the conductor" in error.data
    assert agent.seen == []
    assert log == []


async def test_the_first_message_must_be_initialize() -> None:
    component = RawComponent()
    async with raw_client(Chain.agent("conductor", [component])) as client:
        client.notify("session/cancel", {"sessionId": "s"})  # ignored
        client.request("session/new", {"cwd": "/", "mcpServers": []}, request_id=1)
        refused = await client.response_to(1)
        assert refused["error"] == {
            "code": -32600,
            "message": "Invalid request",
            "data": "expected `initialize` request",
        }
        assert not component.opened.is_set()  # nothing starts before initialize
        client.request("initialize", {"protocolVersion": 1}, request_id=2)
        agent = await component.wait_peer()
        init = await agent.recv()
        assert init["method"] == "initialize"
        agent.respond(init["id"], {"protocolVersion": 1})
        assert (await client.response_to(2))["result"] == {"protocolVersion": 1}


@pytest.mark.parametrize(
    ("mode", "wrong"),
    [("agent", "proxy/initialize"), ("agent", "_proxy/initialize"), ("proxy", "initialize")],
)
async def test_the_wrong_kind_of_initialize_is_refused(mode: str, wrong: str) -> None:
    chain = Chain(mode, mode, [ScriptedAgent().builder()])  # type: ignore[arg-type]
    async with raw_client(chain) as client:
        client.request(wrong, {"protocolVersion": 1}, request_id=1)
        error = (await client.response_to(1))["error"]
    expected = "initialize" if mode == "agent" else "proxy/initialize"
    assert error["code"] == -32600
    assert error["data"] == f"expected `{expected}` request"


async def test_a_second_initialize_reaches_the_components_again() -> None:
    agent = ScriptedAgent()
    log: list[tuple[str, Any]] = []

    async def main(cx: Connection) -> None:
        await initialize(cx)
        await initialize(cx)

    await run_client(Chain.agent("conductor", [recording_proxy(log), agent.builder()]), main)
    assert received(log) == ["proxy/initialize", "proxy/initialize"]
    assert agent.methods() == ["initialize", "initialize"]


# --- instantiators --------------------------------------------------------------------------------


async def test_an_instantiator_chooses_the_components_from_the_initialize_request() -> None:
    seen: list[acp.InitializeRequest] = []

    def choose(request: acp.InitializeRequest) -> list[Any]:
        seen.append(request)
        name = request.client_info.name if request.client_info else ""
        arrows = [arrow_proxy() for _ in range(2 if name == "two arrows" else 1)]
        return [*arrows, ScriptedAgent().builder()]

    async def main(cx: Connection) -> str:
        return await prompt_text(cx, "greet")

    async def main_two(cx: Connection) -> str:
        await cx.send_request(
            acp.InitializeRequest.model_validate(
                {"protocolVersion": 1, "clientInfo": {"name": "two arrows", "version": "1"}}
            )
        )
        async with cx.build_session("/").start_session() as session:  # type: ignore[attr-defined]
            session.send_prompt("greet")
            return await session.read_to_string()  # type: ignore[no-any-return]

    chain = Chain.agent("conductor", choose)
    assert await run_client(chain, main) == "> Hello, world!"
    assert await run_client(chain, main_two) == "> > Hello, world!"
    assert [r.client_info.name if r.client_info else None for r in seen] == [None, "two arrows"]


async def test_an_async_instantiator_is_awaited() -> None:
    async def choose(request: acp.InitializeRequest) -> list[Any]:
        return [arrow_proxy(), ScriptedAgent().builder()]

    async def main(cx: Connection) -> str:
        return await prompt_text(cx, "greet")

    assert await run_client(Chain.agent("conductor", choose), main) == "> Hello, world!"


async def test_an_instantiator_that_fails_answers_initialize_and_stops_the_conductor() -> None:
    def choose(request: acp.InitializeRequest) -> list[Any]:
        raise RuntimeError("no agent for you")

    async def main(cx: Connection) -> Exception:
        with pytest.raises(Exception) as caught:
            await initialize(cx)
        return caught.value

    with pytest.raises(ConductorError, match="could not choose its components: no agent for you"):
        await run_client(Chain.agent("conductor", choose), main)


def test_bad_component_lists_are_refused_when_the_conductor_is_made() -> None:
    with pytest.raises(ValueError, match="at least one component"):
        Chain.agent("conductor", [])
    with pytest.raises(TypeError, match="is not a conductor component"):
        Chain.agent("conductor", [42])
    with pytest.raises(ValueError, match="No closing quotation"):
        Chain.agent("conductor", ["python 'agent.py"])
    with pytest.raises(TypeError, match="a list of components, or an instantiator"):
        Chain.agent("conductor", "python agent.py")
