"""The proxy-chain method names on the conductor's wire: `proxy/initialize` and `proxy/successor`
sent, the legacy `_proxy/initialize` and `_proxy/successor` of older proxies understood and answered
in kind, envelopes' `_meta` kept on their hop, cancellation of an envelope request answered on its hop.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from acpio import RequestCancelled
from acpio import schema as acp
from acpio.conductor import Chain, MemorySink
from acpio.jsonrpc import Connection

from ._support import (
    TIMEOUT,
    LegacyProxy,
    RawComponent,
    Recorded,
    arrow_proxy,
    prompt_text,
    raw_client,
    run_client,
    successor,
)
from .scripted_agent import ScriptedAgent

CANCEL = "$/cancel_request"
INIT = {"protocolVersion": 1, "clientInfo": {"name": "editor", "version": "1"}}


def methods(frames: list[Any]) -> set[str]:
    return {f["method"] for f in frames if isinstance(f, dict) and "method" in f}


# --- a chain of current and older proxies ---------------------------------------------------------


@pytest.mark.parametrize("legacy_first", [False, True], ids=["current then legacy", "legacy then current"])
@pytest.mark.parametrize("refuse_unknown", [False, True], ids=["forwards unknown", "refuses unknown"])
async def test_a_chain_mixing_current_and_legacy_proxies_runs_a_turn_and_a_cancellation(
    legacy_first: bool, refuse_unknown: bool
) -> None:
    agent = ScriptedAgent()
    legacy_proxy = LegacyProxy(refuse_unknown=refuse_unknown)
    legacy = Recorded(legacy_proxy.builder(), "legacy")
    current = Recorded(arrow_proxy(), "arrow")
    recorded_agent = Recorded(agent.builder(), "agent")
    proxies = [legacy, current] if legacy_first else [current, legacy]

    async def main(cx: Connection) -> str:
        text = await prompt_text(cx, "greet")
        new = await cx.send_request(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        prompt = acp.PromptRequest(session_id=new.session_id, prompt=[acp.TextContent(text="sleep 30")])
        sent = cx.send_request(prompt)
        async with asyncio.timeout(TIMEOUT):
            await agent.sleeping.wait()
        sent.cancel()
        with pytest.raises(RequestCancelled):
            await sent
        return text

    chain = Chain.agent("conductor", [*proxies, recorded_agent])
    assert await run_client(chain, main) == "> Hello, world!"

    # The older proxy was tried with `proxy/initialize`, then initialized with `_proxy/initialize`.
    assert legacy_proxy.initialized_with == ["proxy/initialize", "_proxy/initialize"]
    [tried] = legacy.frames_to("proxy/initialize")
    [initialized] = legacy.frames_to("_proxy/initialize")
    assert initialized["params"] == tried["params"]
    assert methods(legacy.to) & {"proxy/successor", "_proxy/successor"} == {"_proxy/successor"}
    assert methods(legacy.came) & {"proxy/successor", "_proxy/successor"} == {"_proxy/successor"}
    # The current proxy only ever saw, and used, the current names.
    assert methods(current.to) & {"proxy/initialize", "_proxy/initialize"} == {"proxy/initialize"}
    assert methods(current.to) & {"proxy/successor", "_proxy/successor"} == {"proxy/successor"}
    assert methods(current.came) & {"proxy/successor", "_proxy/successor"} == {"proxy/successor"}
    # The agent got a plain `initialize` once, and the cancellation once, naming its own request.
    assert agent.methods().count("initialize") == 1
    assert "proxy/initialize" not in agent.methods()
    [_, sleeping] = recorded_agent.frames_to("session/prompt")
    assert recorded_agent.frames_to(CANCEL) == [
        {"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": sleeping["id"]}}
    ]
    # Every hop cancelled its own request: each cancel names a request sent on that same link.
    for component in (legacy, current):
        sent_ids = {f["id"] for f in component.to if "method" in f and "id" in f}
        came_ids = {f["id"] for f in component.came if "method" in f and "id" in f}
        assert [c["params"]["requestId"] in sent_ids for c in component.frames_to(CANCEL)] == [True]
        assert [c["params"]["requestId"] in came_ids for c in component.frames_from(CANCEL)] == [True]


# --- what the conductor sends a proxy, before and after it knows ----------------------------------


async def test_an_older_proxy_that_refuses_proxy_initialize_is_initialized_with_the_legacy_name() -> None:
    """The test plays an older proxy on the raw wire: -32601 to `proxy/initialize`, then legacy names."""
    proxy = RawComponent("older proxy")
    sink = MemorySink()
    chain = Chain.agent("conductor", [proxy, ScriptedAgent().builder()]).trace_to(sink)
    async with raw_client(chain) as client:
        client.request("initialize", INIT, request_id="init")
        me = await proxy.wait_peer()
        first = await me.recv()
        assert (first["method"], first["params"]) == ("proxy/initialize", INIT)
        me.send(
            {
                "jsonrpc": "2.0",
                "id": first["id"],
                "error": {"code": -32601, "message": "Method not found", "data": "proxy/initialize"},
            }
        )
        again = await me.recv()
        assert (again["method"], again["params"]) == ("_proxy/initialize", INIT)
        assert again["id"] != first["id"]
        me.request("_proxy/successor", successor("initialize", again["params"]), request_id=7)
        answer = await me.response_to(7)
        me.respond(again["id"], answer["result"])
        assert (await client.response_to("init"))["result"] == answer["result"]

        # The turn: the proxy's envelopes are understood, and the agent's messages come back in kind.
        me.request("_proxy/successor", successor("session/new", {"cwd": "/", "mcpServers": []}), request_id=8)
        session = (await me.response_to(8))["result"]["sessionId"]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "greet"}]}
        me.request("_proxy/successor", successor("session/prompt", prompt), request_id=9)
        seen: list[Any] = []
        update = await me.message_for("_proxy/successor", seen)
        assert "id" not in update
        assert update["params"]["params"]["update"]["content"]["text"] == "Hello, world!"
        assert (await me.response_to(9, seen))["result"]["stopReason"] == "end_turn"
        assert methods(seen) == set()
    # The trace shows both attempts on the proxy's hop, each paired with its answer.
    hop = [
        (e["type"], e["method"], e.get("is_error"))
        for e in sink.events
        if {e.get("from"), e.get("to")} == {"Client", "Proxy(0)"} and "initialize" in e["method"]
    ]
    assert hop == [
        ("request", "proxy/initialize", None),
        ("response", "proxy/initialize", True),
        ("request", "_proxy/initialize", None),
        ("response", "_proxy/initialize", False),
    ]


async def test_an_older_proxy_that_forwards_proxy_initialize_then_gets_the_legacy_name() -> None:
    """Older proxies pass a request they do not know on to their successor, `proxy/initialize` too."""
    proxy = RawComponent("older proxy")
    agent = ScriptedAgent()
    async with raw_client(Chain.agent("conductor", [proxy, agent.builder()])) as client:
        client.request("initialize", INIT, request_id="init")
        me = await proxy.wait_peer()
        first = await me.recv()
        assert first["method"] == "proxy/initialize"
        me.request("_proxy/successor", successor("proxy/initialize", first["params"]), request_id=5)
        refused = (await me.response_to(5))["error"]
        assert (refused["code"], refused["message"]) == (-32601, "Method not found: proxy/initialize")
        me.send({"jsonrpc": "2.0", "id": first["id"], "error": refused})  # as it forwards any answer
        again = await me.recv()
        assert (again["method"], again["params"]) == ("_proxy/initialize", INIT)
        me.respond(again["id"], {"protocolVersion": 1, "agentInfo": {"name": "older", "version": "0"}})
        reply = await client.response_to("init")
        assert reply["result"]["agentInfo"]["name"] == "older"
    assert agent.seen == []  # `proxy/initialize` never reached the agent


async def test_an_error_to_proxy_initialize_from_a_current_proxy_goes_back_unchanged() -> None:
    proxy = RawComponent()
    async with raw_client(Chain.agent("conductor", [proxy, ScriptedAgent().builder()])) as client:
        client.request("initialize", INIT, request_id="init")
        me = await proxy.wait_peer()
        first = await me.recv()
        me.request("proxy/successor", successor("initialize", first["params"]), request_id=1)
        await me.response_to(1)
        error = {"code": -32000, "message": "Authentication required", "data": {"why": [1]}}
        me.send({"jsonrpc": "2.0", "id": first["id"], "error": error})
        assert (await client.response_to("init"))["error"] == error  # no retry under the legacy name


# --- envelopes: _meta and cancellation, on the wire -----------------------------------------------


async def test_the_envelopes_meta_stays_on_its_hop() -> None:
    proxy = RawComponent()
    agent = ScriptedAgent()
    recorded_agent = Recorded(agent.builder(), "agent")
    async with raw_client(Chain.agent("conductor", [proxy, recorded_agent])) as client:
        client.request("initialize", INIT)
        me = await proxy.wait_peer()
        init = await me.recv()
        me.respond(init["id"], {"protocolVersion": 1})
        inner = {"cwd": "/", "mcpServers": [], "_meta": {"inner": True}}
        envelope = {"method": "session/new", "params": inner, "_meta": {"hop": "proxy 0 -> conductor"}}
        me.request("proxy/successor", envelope, request_id=1)
        session = (await me.response_to(1))["result"]["sessionId"]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "greet"}]}
        me.request("proxy/successor", {"method": "session/prompt", "params": prompt, "_meta": {"x": 1}}, 2)
        update = await me.message_for("proxy/successor")
        await me.response_to(2)
    # Unwrapped: the inner message exactly, its own `_meta` kept, the envelope's gone.
    [new] = recorded_agent.frames_to("session/new")
    assert new["params"] == inner
    assert "_meta" not in recorded_agent.frames_to("session/prompt")[0]["params"]
    assert "hop" not in str(recorded_agent.to)
    # Wrapped by the conductor: an envelope of its own, with no `_meta` of the agent's hop.
    assert set(update["params"]) == {"method", "params"}


async def test_a_cancelled_successor_request_is_answered_on_its_hop_and_cancelled_downstream_anew() -> None:
    agent = ScriptedAgent()
    recorded_agent = Recorded(agent.builder(), "agent")
    proxy = RawComponent()
    async with raw_client(Chain.agent("conductor", [proxy, recorded_agent])) as client:
        client.request("initialize", INIT)
        me = await proxy.wait_peer()
        init = await me.recv()
        me.respond(init["id"], {"protocolVersion": 1})
        me.request("proxy/successor", successor("session/new", {"cwd": "/", "mcpServers": []}), "new")
        session = (await me.response_to("new"))["result"]["sessionId"]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "sleep 30"}]}
        me.request("proxy/successor", successor("session/prompt", prompt), request_id="up-2")
        async with asyncio.timeout(TIMEOUT):
            await agent.sleeping.wait()
        me.notify(CANCEL, {"requestId": "up-2"})  # plain, on this hop, naming the envelope's id
        answer = await me.response_to("up-2")
        assert answer["error"]["code"] == -32800
    [prompt_frame] = recorded_agent.frames_to("session/prompt")
    assert prompt_frame["id"] != "up-2"
    assert recorded_agent.frames_to(CANCEL) == [
        {"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": prompt_frame["id"]}}
    ]


async def test_the_result_and_error_of_a_wrapped_request_come_back_unchanged() -> None:
    proxy = RawComponent()
    async with raw_client(Chain.agent("conductor", [proxy, ScriptedAgent().builder()])) as client:
        client.request("initialize", INIT)
        me = await proxy.wait_peer()
        init = await me.recv()
        me.request("proxy/successor", successor("initialize", init["params"]), request_id=1)
        result = (await me.response_to(1))["result"]
        assert result["_meta"] == {"agent": "scripted"}
        me.request("proxy/successor", successor("_x/unknown", {"k": 1}), request_id=2)
        answer = await me.response_to(2)
    assert answer == {
        "jsonrpc": "2.0",
        "id": 2,
        "error": {"code": -32601, "message": "Method not found", "data": "_x/unknown"},
    }
