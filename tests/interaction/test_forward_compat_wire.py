"""A newer peer's surprises on the wire: nothing is dropped, and a proxy passes them on unchanged.

Each kind of value a newer schema can bring (an unknown ``sessionUpdate`` kind, content block
``type``, enum value, field, or a known kind with a field the current schema refuses) is sent
through an acpio client, an acpio agent and an acpio proxy under the acpio conductor.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from acpio import Agent, Client, Proxy, SessionConnection
from acpio import schema as acp
from acpio.conductor import Chain
from acpio.conductor.components import Named
from acpio.jsonrpc import Connection
from acpio.session import SessionMessage, TurnEnded
from acpio.testing import WirePeer, serving
from acpio.transports import Channel

TIMEOUT = 10

#: session/update payloads a newer agent may send, each with what an acpio client must see.
UPDATES: list[tuple[dict[str, Any], type]] = [
    # an unknown update kind
    (
        {"sessionUpdate": "weather_report", "sky": "clear", "nested": {"a": [1, None]}},
        acp.UnknownSessionUpdate,
    ),
    # a known kind the current schema refuses (other SDKs' clients failed on this one)
    ({"sessionUpdate": "usage_update", "used": None, "size": 1000}, acp.UnknownSessionUpdate),
    # unknown enum values and an unknown field on a known kind
    (
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "t1",
            "title": "Teleport",
            "kind": "teleport",
            "status": "paused",
            "futureField": {"x": 1},
        },
        acp.ToolCall,
    ),
    # an unknown content block inside a known update
    (
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "hologram", "frames": 3}},
        acp.AgentMessageChunk,
    ),
    # a plan entry whose priority and status are new values
    (
        {
            "sessionUpdate": "plan",
            "entries": [{"content": "x", "priority": "urgent", "status": "blocked"}],
        },
        acp.Plan,
    ),
]

#: A prompt a newer client may send: an unknown block type, unknown fields, a new annotation role.
PROMPT: list[dict[str, Any]] = [
    {"type": "text", "text": "hi", "annotations": {"audience": ["user", "robot"]}, "color": "blue"},
    {"type": "hologram", "frames": 3},
]

#: The answer of a newer agent: a stop reason this schema does not know, and a new field.
PROMPT_RESULT = {"stopReason": "error", "elapsedMs": 12}


async def test_client_keeps_every_unknown_value_of_a_newer_agent() -> None:
    agent_end, client_end = Channel.duplex()
    agent = WirePeer(agent_end, timeout=TIMEOUT)
    seen: list[SessionMessage] = []

    async def main(cx: SessionConnection) -> TurnEnded:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path.cwd()).start_session() as session:
            session.send_prompt("go")
            while True:
                item = await session.read_update()
                if isinstance(item, TurnEnded):
                    return item
                seen.append(item)

    async def play_agent() -> None:
        agent.respond(await agent.expect("initialize"), {"protocolVersion": 1})
        agent.respond(await agent.expect("session/new"), {"sessionId": "s1"})
        prompt = await agent.expect("session/prompt")
        for update, _ in UPDATES:
            params = {"sessionId": "s1", "update": update}
            agent.send({"jsonrpc": "2.0", "method": "session/update", "params": params})
        agent.respond(prompt, PROMPT_RESULT)

    async with asyncio.timeout(TIMEOUT):
        played = asyncio.create_task(play_agent())
        ended = await Client.builder().connect_with(client_end, main)
        await played
        await agent.close()

    assert [type(m.update) for m in seen] == [kind for _, kind in UPDATES]
    for message, (update, _) in zip(seen, UPDATES, strict=True):
        assert message.update is not None
        assert message.update.to_wire() == update  # every field, known or not, as it was sent
    tool_call = seen[2].update
    assert isinstance(tool_call, acp.ToolCall)
    assert (tool_call.kind, tool_call.status) == ("teleport", "paused")  # unknown enum values kept
    assert tool_call.model_extra == {"futureField": {"x": 1}}
    chunk = seen[3].update
    assert isinstance(chunk, acp.AgentMessageChunk)
    assert isinstance(chunk.content, acp.UnknownContentBlock)
    assert chunk.content.type == "hologram"
    assert ended.stop_reason == "error"
    assert ended.response.to_wire() == PROMPT_RESULT


async def test_agent_keeps_every_unknown_value_of_a_newer_client() -> None:
    received: list[acp.PromptRequest] = []
    app = Agent.builder(name="newer-client-test")

    @app.on_request
    async def prompt(req: acp.PromptRequest, responder: Any, cx: Connection) -> acp.PromptResponse:
        received.append(req)
        return acp.PromptResponse(stop_reason=acp.StopReason.END_TURN)

    async with serving(app, timeout=TIMEOUT) as client:
        params = {"sessionId": "s1", "prompt": PROMPT, "futureTopLevel": True}
        client.send({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": params})
        answer = await client.recv()

    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}
    (req,) = received
    text, hologram = req.prompt
    assert isinstance(text, acp.TextContent)
    assert text.annotations is not None
    assert text.annotations.audience == ["user", "robot"]  # an unknown Role value is kept
    assert isinstance(hologram, acp.UnknownContentBlock)
    assert req.to_wire() == params


async def test_proxy_passes_every_unknown_value_on_unchanged() -> None:
    """Client -> acpio conductor -> acpio proxy -> agent and back: each payload arrives as it was sent."""
    client_end, chain_end = Channel.duplex()
    agent_end, agent_side = Channel.duplex()
    client = WirePeer(client_end, timeout=TIMEOUT)
    agent = WirePeer(agent_side, timeout=TIMEOUT)
    chain = Chain.agent("forward-compat", [Proxy.builder(name="passthrough"), Named("raw-agent", agent_end)])

    async def request(method: str, params: dict[str, Any], request_id: int) -> dict[str, Any]:
        client.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        seen = await agent.expect(method)
        assert seen["params"] == params
        return seen

    async with asyncio.timeout(TIMEOUT):
        served = asyncio.create_task(chain.serve(chain_end))
        initialize = await request("initialize", {"protocolVersion": 1, "futureCapability": {"x": 1}}, 1)
        init_result = {"protocolVersion": 1, "agentCapabilities": {"futureThing": True}}
        agent.respond(initialize, init_result)
        assert (await client.recv())["result"] == init_result

        new = await request("session/new", {"cwd": "/w", "mcpServers": [], "futureOption": [1]}, 2)
        agent.respond(new, {"sessionId": "s1", "futureResult": "r"})
        assert (await client.recv())["result"] == {"sessionId": "s1", "futureResult": "r"}

        prompt = await request("session/prompt", {"sessionId": "s1", "prompt": PROMPT, "futureTop": 1}, 3)
        for update, _ in UPDATES:
            params = {"sessionId": "s1", "update": update, "_meta": {"hop": "kept"}}
            agent.send({"jsonrpc": "2.0", "method": "session/update", "params": params})
            forwarded = await client.recv()
            assert forwarded == {"jsonrpc": "2.0", "method": "session/update", "params": params}
        agent.respond(prompt, PROMPT_RESULT)
        assert await client.recv() == {"jsonrpc": "2.0", "id": 3, "result": PROMPT_RESULT}

        await client.close()
        await served
        await agent.close()
