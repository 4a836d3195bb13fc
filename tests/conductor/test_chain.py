"""The conductor's chain scenarios: empty chain, arrow proxies, nested conductors, routing both ways.

Most chains here are in-process builders (fast); one mixes in subprocesses.
"""

from __future__ import annotations

from typing import Any

import pytest

from acpio import Client
from acpio import schema as acp
from acpio.conductor import Chain, Named
from acpio.jsonrpc import Connection, Responder, UntypedMessage

from ._support import (
    ARROW,
    SCRIPTED_AGENT,
    RawComponent,
    arrow_proxy,
    prompt_text,
    raw_client,
    recording_proxy,
    run_client,
    successor,
)
from .scripted_agent import ScriptedAgent

META = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "vendor": {"k": [1, 2]}}


async def greet(cx: Any) -> str:
    return await prompt_text(cx, "greet")


async def test_an_empty_conductor_relays_to_the_agent_unchanged() -> None:
    agent = ScriptedAgent()
    assert await run_client(Chain.agent("conductor", [agent.builder()]), greet) == "Hello, world!"
    assert agent.methods() == ["initialize", "session/new", "session/prompt"]


async def test_the_arrow_proxy_prefixes_each_chunk_of_the_agent() -> None:
    async def main(cx: Any) -> str:
        return await prompt_text(cx, "echo hello world")

    chain = Chain.agent("conductor", [arrow_proxy(), ScriptedAgent().builder()])
    assert await run_client(chain, main) == "> hello world"


async def test_two_arrow_proxies_add_two_arrows() -> None:
    chain = Chain.agent("conductor", [arrow_proxy(), arrow_proxy(), ScriptedAgent().builder()])
    assert await run_client(chain, greet) == "> > Hello, world!"


async def test_a_proxy_mode_conductor_nests_inside_an_agent_mode_one() -> None:
    inner = Chain.proxy("inner", [arrow_proxy(), arrow_proxy()])
    chain = Chain.agent("outer", [inner, ScriptedAgent().builder()])
    assert await run_client(chain, greet) == "> > Hello, world!"


async def test_an_agent_mode_conductor_can_be_the_agent_of_another() -> None:
    inner = Chain.agent("inner", [arrow_proxy(), ScriptedAgent().builder()])
    assert await run_client(Chain.agent("outer", [arrow_proxy(), inner]), greet) == "> > Hello, world!"


async def test_nested_conductors_mixing_subprocess_and_in_process_components() -> None:
    inner = Chain.proxy("inner", [arrow_proxy(), Named("arrow (subprocess)", ARROW)])
    chain = Chain.agent("outer", [inner, arrow_proxy(), SCRIPTED_AGENT])
    assert await run_client(chain, greet) == "> > > Hello, world!"


async def test_a_conductor_serves_one_run_after_another() -> None:
    agent = ScriptedAgent()
    chain = Chain.agent("conductor", [arrow_proxy(), agent.builder()])
    assert await run_client(chain, greet) == "> Hello, world!"
    assert await run_client(chain, greet) == "> Hello, world!"
    assert agent.methods().count("initialize") == 2


# --- _meta, unknown fields, requests from the agent --------------------------------------------------


async def test_meta_and_unknown_fields_travel_unchanged_both_ways() -> None:
    agent = ScriptedAgent()
    log: list[tuple[str, Any]] = []
    params = {
        "sessionId": "",
        "prompt": [{"type": "text", "text": "greet", "future": {"x": 1}}],
        "_meta": META,
        "extension": [1, "two"],
    }

    async def main(cx: Connection) -> Any:
        await cx.send_request(UntypedMessage("initialize", {"protocolVersion": 1, "_meta": META}))
        new = await cx.send_request(UntypedMessage("session/new", {"cwd": "/", "mcpServers": []}))
        params["sessionId"] = new["sessionId"]
        return await cx.send_request(UntypedMessage("session/prompt", params))

    chain = Chain.agent("conductor", [recording_proxy(log), recording_proxy([]), agent.builder()])
    response = await run_client(chain, main)
    assert agent.seen[0]["params"] == {"protocolVersion": 1, "_meta": META}
    assert agent.seen[-1]["params"] == params  # unknown fields and _meta intact after two proxies
    assert ("session/prompt", params) in log
    assert response == {"stopReason": "end_turn", "_meta": {"agent": "scripted", **META}}


async def test_an_agent_request_reaches_the_client_through_the_chain_and_its_answer_comes_back() -> None:
    client = Client.builder()
    asked: list[Any] = []

    @client.on_request
    async def permission(
        req: acp.RequestPermissionRequest, responder: Responder[Any], cx: Connection
    ) -> acp.RequestPermissionResponse:
        asked.append(req.tool_call.tool_call_id)
        return acp.RequestPermissionResponse.model_validate(
            {"outcome": {"outcome": "selected", "optionId": "allow"}}
        )

    async def main(cx: Any) -> str:
        return await prompt_text(cx, "ask")

    chain = Chain.agent("conductor", [arrow_proxy(), recording_proxy([]), ScriptedAgent().builder()])
    assert await run_client(chain, main, client) == "> allow"
    assert asked == ["call-1"]


# --- the wire seen by a proxy ---------------------------------------------------------------------


async def test_a_proxy_sees_its_successor_wrapped_and_its_predecessor_plain() -> None:
    """The test plays proxy 0 on the raw wire: envelopes in, envelopes out, with the current names."""
    proxy = RawComponent("raw proxy")
    agent = ScriptedAgent()
    async with raw_client(Chain.agent("conductor", [proxy, agent.builder()])) as client:
        client.request("initialize", {"protocolVersion": 1}, request_id="init")
        me = await proxy.wait_peer()
        init = await me.recv()
        assert init["method"] == "proxy/initialize"
        assert init["params"] == {"protocolVersion": 1}
        # Initialize the successor, then answer with what it said.
        me.request("proxy/successor", successor("initialize", init["params"]), request_id=7)
        answer = await me.response_to(7)
        assert answer["result"]["agentInfo"]["name"] == "scripted"
        me.respond(init["id"], answer["result"])
        reply = await client.response_to("init")
        assert reply["result"] == answer["result"]

        me.request("proxy/successor", successor("session/new", {"cwd": "/", "mcpServers": []}), request_id=8)
        session = (await me.response_to(8))["result"]["sessionId"]
        me.request("proxy/successor", successor("session/prompt", {"sessionId": session, "prompt": []}), 9)
        update = await me.message_for("proxy/successor")
        assert "id" not in update  # a notification from the agent, wrapped for the proxy
        assert update["params"]["method"] == "session/update"
        assert update["params"]["params"]["sessionId"] == session
        assert (await me.response_to(9))["result"]["stopReason"] == "end_turn"

        # What the proxy sends plainly goes to the client, unwrapped.
        me.notify(
            "session/update", {"sessionId": session, "update": {"sessionUpdate": "plan", "entries": []}}
        )
        note = await client.message_for("session/update")
        assert note["params"]["update"]["sessionUpdate"] == "plan"
    assert agent.methods() == ["initialize", "session/new", "session/prompt"]


@pytest.mark.parametrize("method", ["proxy/successor", "_proxy/successor"])
async def test_a_malformed_envelope_from_a_proxy_is_answered_invalid_request(method: str) -> None:
    proxy = RawComponent()
    async with raw_client(Chain.agent("conductor", [proxy, ScriptedAgent().builder()])) as client:
        client.request("initialize", {"protocolVersion": 1})
        me = await proxy.wait_peer()
        await me.recv()
        me.request(method, {"params": {}}, request_id=1)
        error = (await me.response_to(1))["error"]
    assert error["code"] == -32600
    assert f"malformed `{method}` envelope" in error["data"]


# --- proxy mode -----------------------------------------------------------------------------------


@pytest.mark.parametrize("prefix", ["", "_"], ids=["current names", "legacy names"])
@pytest.mark.parametrize("proxies", [0, 1, 2])
async def test_in_proxy_mode_the_last_proxys_successor_is_the_conductors_own(
    proxies: int, prefix: str
) -> None:
    """The test plays the outer conductor: traffic for the successor comes up wrapped, and back.

    An older outer conductor (``_proxy/initialize``) gets its own names back: ``_proxy/successor``.
    """
    chain = Chain.proxy("inner", [arrow_proxy() for _ in range(proxies)])
    async with raw_client(chain) as outer:
        outer.request(f"{prefix}proxy/initialize", {"protocolVersion": 1}, request_id=1)
        up = await outer.message_for(f"{prefix}proxy/successor")
        assert up["params"] == {"method": "initialize", "params": {"protocolVersion": 1}}
        outer.respond(up["id"], {"protocolVersion": 1, "agentInfo": {"name": "far agent", "version": "1"}})
        assert (await outer.response_to(1))["result"]["agentInfo"]["name"] == "far agent"

        outer.request("session/prompt", {"sessionId": "s", "prompt": []}, request_id=2)
        seen: list[Any] = []
        up = await outer.message_for(f"{prefix}proxy/successor", seen)
        assert up["params"]["method"] == "session/prompt"
        assert [f for f in seen if "proxy/" in f.get("method", "")] == []  # never the other names
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}
        outer.notify(
            f"{prefix}proxy/successor", successor("session/update", {"sessionId": "s", "update": update})
        )
        outer.respond(up["id"], {"stopReason": "end_turn"})
        note = await outer.message_for("session/update")
        assert note["params"]["update"]["content"]["text"] == "> " * proxies + "hi"
        assert (await outer.response_to(2))["result"] == {"stopReason": "end_turn"}


async def test_a_batch_from_the_client_is_answered_as_one_array() -> None:
    async with raw_client(Chain.agent("conductor", [arrow_proxy(), ScriptedAgent().builder()])) as client:
        client.request("initialize", {"protocolVersion": 1}, request_id=1)
        await client.response_to(1)
        client.send(
            [
                {
                    "jsonrpc": "2.0",
                    "id": "a",
                    "method": "session/new",
                    "params": {"cwd": "/", "mcpServers": []},
                },
                {
                    "jsonrpc": "2.0",
                    "id": "b",
                    "method": "session/new",
                    "params": {"cwd": "/", "mcpServers": []},
                },
            ]
        )
        answers = await client.until(lambda frame: isinstance(frame, list))
    assert [(a["id"], a["result"]["sessionId"]) for a in answers] == [("a", "s-1"), ("b", "s-2")]
