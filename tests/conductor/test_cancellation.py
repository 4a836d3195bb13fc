"""Cancellation through the chain: re-issued hop by hop with each hop's own id, never tunnelled raw."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from acpio import Proxy, RequestCancelled
from acpio import schema as acp
from acpio.conductor import Chain
from acpio.jsonrpc import Connection

from ._support import TIMEOUT, RawComponent, Recorded, prompt_text, raw_client, run_client, successor
from .scripted_agent import ScriptedAgent

CANCEL = "$/cancel_request"


async def test_a_client_cancellation_reaches_the_agent_once_with_its_own_id() -> None:
    agent = ScriptedAgent()
    proxy = Recorded(Proxy.builder(name="passthrough"), "passthrough")
    recorded_agent = Recorded(agent.builder(), "agent")

    async def main(cx: Connection) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        new = await cx.send_request(acp.NewSessionRequest(cwd="/", mcp_servers=[]))
        prompt = acp.PromptRequest(session_id=new.session_id, prompt=[acp.TextContent(text="sleep 30")])
        sent = cx.send_request(prompt)
        await agent.sleeping.wait()
        sent.cancel()
        with pytest.raises(RequestCancelled):
            await sent
        return await prompt_text(cx, "greet")  # the chain still works

    assert await run_client(Chain.agent("conductor", [proxy, recorded_agent]), main) == "Hello, world!"
    [prompt_frame, _] = recorded_agent.frames_to("session/prompt")
    [cancel] = recorded_agent.frames_to(CANCEL)
    assert cancel["params"] == {"requestId": prompt_frame["id"]}
    # Hop by hop: the proxy cancelled its own envelope request, the conductor re-issued that downstream.
    [wrapped_prompt] = [
        f for f in proxy.frames_from("proxy/successor") if f["params"]["method"] == "session/prompt"
    ][:1]
    assert proxy.frames_from(CANCEL) == [
        {"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": wrapped_prompt["id"]}}
    ]
    [to_proxy_prompt, _] = proxy.frames_to("session/prompt")
    assert proxy.frames_to(CANCEL) == [
        {"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": to_proxy_prompt["id"]}}
    ]


async def test_an_agent_cancellation_reaches_the_client_once_with_the_clients_id() -> None:
    agent = ScriptedAgent()
    chain = Chain.agent("conductor", [Proxy.builder(), Proxy.builder(), agent.builder()])
    async with raw_client(chain) as client:
        client.request("initialize", {"protocolVersion": 1})
        await client.response_to(1)
        client.request("session/new", {"cwd": "/", "mcpServers": []})
        session = (await client.response_to(2))["result"]["sessionId"]
        client.request(
            "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "ask-withdraw"}]}
        )
        asked = await client.message_for("session/request_permission")
        seen: list[Any] = []
        cancel = await client.message_for(CANCEL, seen)
        assert cancel["params"] == {"requestId": asked["id"]}
        client.send(
            {"jsonrpc": "2.0", "id": asked["id"], "error": {"code": -32800, "message": "Request cancelled"}}
        )
        frames: list[Any] = []
        done = await client.response_to(3, frames)
        assert done["result"]["stopReason"] == "end_turn"
    texts = [
        f["params"]["update"]["content"]["text"] for f in seen + frames if f.get("method") == "session/update"
    ]
    assert texts == ["error -32800"]
    assert [f for f in frames if f.get("method") == CANCEL] == []


async def test_a_wrapped_cancellation_from_a_proxy_cancels_what_its_request_was_forwarded_as() -> None:
    """A proxy that wraps `$/cancel_request` in `_proxy/successor` (as the Rust SDK does) is understood."""
    agent = ScriptedAgent()
    recorded_agent = Recorded(agent.builder(), "agent")
    proxy = RawComponent()
    async with raw_client(Chain.agent("conductor", [proxy, recorded_agent])) as client:
        client.request("initialize", {"protocolVersion": 1})
        me = await proxy.wait_peer()
        await me.recv()
        me.request("_proxy/successor", successor("session/new", {"cwd": "/", "mcpServers": []}), request_id=1)
        session = (await me.response_to(1))["result"]["sessionId"]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "sleep 30"}]}
        me.request("_proxy/successor", successor("session/prompt", prompt), request_id=2)
        async with asyncio.timeout(TIMEOUT):
            await agent.sleeping.wait()
        me.notify("_proxy/successor", successor(CANCEL, {"requestId": 2}))
        answer = await me.response_to(2)
        assert answer["error"]["code"] == -32800
    [prompt_frame] = recorded_agent.frames_to("session/prompt")
    assert recorded_agent.frames_to(CANCEL) == [
        {"jsonrpc": "2.0", "method": CANCEL, "params": {"requestId": prompt_frame["id"]}}
    ]


async def test_session_cancel_travels_as_a_notification_and_ends_the_turn() -> None:
    agent = ScriptedAgent()

    async def main(cx: Connection) -> Any:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session("/").start_session() as session:  # type: ignore[attr-defined]
            session.send_prompt("sleep 30")
            first = await session.read_update()
            session.cancel()
            end = await session.read_update()
            return first.text, end.stop_reason

    chain = Chain.agent("conductor", [Proxy.builder(), agent.builder()])
    assert await run_client(chain, main) == ("zzz", "cancelled")
