"""VersionRouter where agents are served: an agent process on stdio, the remote server, a conductor.

The agent behind the router is ``tests/router/router_agent.py``: the v1 echo example for v1
clients, the v2 echo example (``examples/v2_echo_agent.py``) for v2 clients.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from acpio import AcpAgent, Client, SessionConnection, VersionRouter
from acpio import schema as acp
from acpio.conductor import Chain
from acpio.testing import WirePeer

from .router_agent import example, router

ROUTER_AGENT = [sys.executable, str(Path(__file__).with_name("router_agent.py"))]
V2_INITIALIZE = {"protocolVersion": 2, "info": {"name": "wire", "version": "1"}, "capabilities": {}}


async def v2_turn(peer: WirePeer, cwd: str, text: str) -> list[dict[str, Any]]:
    """initialize, session/new and session/prompt sent at once; the updates of the turn, until idle."""
    peer.request("initialize", V2_INITIALIZE, request_id=1)
    peer.request("session/new", {"cwd": cwd}, request_id=2)
    init, new = await peer.response_to(1), await peer.response_to(2)
    assert init["result"]["protocolVersion"] == 2
    assert init["result"]["info"]["name"] == "v2-echo"
    session = new["result"]["sessionId"]
    peer.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}, 3)
    ack = await peer.response_to(3)
    updates = []
    while True:
        update = (await peer.message_for("session/update"))["params"]["update"]
        updates.append(update)
        if update["sessionUpdate"] == "state_update" and update["state"] == "idle":
            break
    assert ack["result"]["messageId"] == updates[0]["messageId"]  # the user message the prompt became
    return updates


def check_v2_turn(updates: list[dict[str, Any]], text: str) -> None:
    assert [u["sessionUpdate"] for u in updates] == [
        "user_message",
        "state_update",
        "agent_message_chunk",
        "state_update",
    ]
    assert updates[1]["state"] == "running"
    assert updates[2]["content"] == {"type": "text", "text": text}
    assert updates[3]["stopReason"] == "end_turn"


async def v1_turn(peer: WirePeer, cwd: str, text: str) -> dict[str, Any]:
    """A v1 client that pipelines initialize, session/new and prompt; the chunk and the prompt's answer."""
    peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}}, request_id=1)
    peer.request("session/new", {"cwd": cwd, "mcpServers": []}, request_id=2)
    init, new = await peer.response_to(1), await peer.response_to(2)
    assert init["result"]["protocolVersion"] == 1
    assert init["result"]["agentInfo"]["name"] == "echo"
    session = new["result"]["sessionId"]
    peer.request("session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}, 3)
    chunk = await peer.message_for("session/update")
    assert (await peer.response_to(3))["result"]["stopReason"] == "end_turn"
    return dict(chunk["params"]["update"])


async def test_an_agent_process_serves_v1_and_v2_clients_on_stdio(tmp_path: Path) -> None:
    v2 = WirePeer(await AcpAgent(ROUTER_AGENT).open(), timeout=20)
    v1 = WirePeer(await AcpAgent(ROUTER_AGENT).open(), timeout=20)
    try:
        check_v2_turn(await v2_turn(v2, str(tmp_path), "hello v2"), "hello v2")
        chunk = await v1_turn(v1, str(tmp_path), "hello v1")
        assert chunk == {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "hello v1"},
        }
    finally:
        await v2.close()
        await v1.close()


async def test_a_v2_client_of_a_v1_only_process_gets_v1_on_stdio(tmp_path: Path) -> None:
    peer = WirePeer(await AcpAgent([*ROUTER_AGENT, "--only", "1"]).open(), timeout=20)
    try:
        peer.request("initialize", V2_INITIALIZE, request_id=1)
        answer = await peer.response_to(1)
        assert answer["result"]["protocolVersion"] == 1
        assert answer["result"]["agentInfo"]["name"] == "echo"
    finally:
        await peer.close()


async def test_the_remote_server_routes_each_connection(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn")
    from acpio.remote import HttpTransport, RemoteServer, WebSocketTransport

    async with RemoteServer(router(), port=0) as server:
        ws_url = server.url.replace("http://", "ws://")
        v2 = WirePeer(await WebSocketTransport.connect(ws_url))
        v1 = WirePeer(HttpTransport(server.url))
        try:
            check_v2_turn(await v2_turn(v2, str(tmp_path), "over websocket"), "over websocket")
            assert (await v1_turn(v1, str(tmp_path), "over http"))["content"]["text"] == "over http"
        finally:
            await v2.close()
            await v1.close()
        refused = WirePeer(await WebSocketTransport.connect(ws_url))
        try:
            refused.request("session/new", {"cwd": str(tmp_path)}, request_id=5)
            assert (await refused.recv())["error"]["code"] == -32600
        finally:
            await refused.close()


async def test_a_conductor_chain_ends_in_a_router(tmp_path: Path) -> None:
    async def main(cx: SessionConnection) -> str:
        init = await cx.send_request(acp.InitializeRequest(protocol_version=1))
        assert init.protocol_version == 1
        async with cx.build_session(tmp_path).start_session() as session:
            session.send_prompt("through the conductor")
            return await session.read_to_string()

    text = await Client.builder().connect_with(Chain.agent("chain", [router()]), main)
    assert text == "through the conductor"


async def test_an_agent_app_behind_a_v1_only_router_serves_a_v2_client_as_a_v1_one(tmp_path: Path) -> None:
    """The wordcount example offers to write only to a client with fs: a v2 client, converted, has none."""
    app = example("wordcount_agent").app
    peer = WirePeer(await VersionRouter({1: app}).open())
    try:
        peer.request("initialize", V2_INITIALIZE, request_id=1)
        peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}, request_id=2)
        assert (await peer.response_to(1))["result"]["agentInfo"]["name"] == "wordcount"
        session = (await peer.response_to(2))["result"]["sessionId"]
        prompt = [{"type": "text", "text": "count these words"}]
        peer.request("session/prompt", {"sessionId": session, "prompt": prompt}, request_id=3)
        seen: list[dict[str, Any]] = []
        answer = await peer.response_to(3, seen)
    finally:
        await peer.close()
    assert answer["result"]["stopReason"] == "end_turn"
    kinds = [m["params"]["update"]["sessionUpdate"] for m in seen if m.get("method") == "session/update"]
    texts = [m["params"]["update"]["content"]["text"] for m in seen if m.get("method") == "session/update"]
    assert texts == ["Your prompt has 3 words."]
    assert "tool_call" not in kinds  # no write offered: a v2 client has no fs/write_text_file
    assert not [m for m in seen if m.get("method", "").startswith("fs/")]
