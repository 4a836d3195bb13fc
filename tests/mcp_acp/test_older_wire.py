"""The older wire (mcp/connect, mcp/message with a connectionId, mcp/disconnect), as Rust SDK 2.x sends it.

The raw peer plays such an agent: it connects to the declared server, runs the MCP handshake
(`initialize`, `notifications/initialized`) and calls tools; the outer response is the inner result,
an inner error the outer error.
"""

from __future__ import annotations

import asyncio
from typing import Any

from acpio.mcp import McpServer
from acpio.session import build_session
from acpio.testing import WirePeer

from ._support import TIMEOUT, Gate, client_connection, notes_server


async def _call(peer: WirePeer, method: str, params: dict[str, Any]) -> Any:
    return await peer.response_to(peer.request(method, params))


async def _connected(peer: WirePeer, server_id: str) -> str:
    connected = await _call(peer, "mcp/connect", {"serverId": server_id})
    connection_id: str = connected["result"]["connectionId"]
    init = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "rust-like", "version": "2"},
    }
    initialized = await _call(
        peer, "mcp/message", {"connectionId": connection_id, "method": "initialize", "params": init}
    )
    assert initialized["result"]["serverInfo"]["name"] == "notes"
    peer.notify("mcp/message", {"connectionId": connection_id, "method": "notifications/initialized"})
    return connection_id


async def test_connect_handshake_call_and_disconnect() -> None:
    async with client_connection() as (cx, peer):
        starting = asyncio.ensure_future(
            build_session(cx, "/work").with_mcp_server(McpServer(notes_server())).start_session()
        )
        request = await peer.expect("session/new")
        server_id = request["params"]["mcpServers"][0]["serverId"]
        peer.respond(request, {"sessionId": "s1"})
        await asyncio.wait_for(starting, TIMEOUT)
        connection_id = await _connected(peer, server_id)

        def message(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
            body: dict[str, Any] = {"connectionId": connection_id, "method": method}
            if params is not None:
                body["params"] = params
            return body

        listed = await _call(peer, "mcp/message", message("tools/list", {}))
        assert [tool["name"] for tool in listed["result"]["tools"]] == ["add", "fail", "slow"]
        added = await _call(
            peer, "mcp/message", message("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        )
        assert added["result"]["structuredContent"] == {"result": 3}
        failed = await _call(peer, "mcp/message", message("tools/call", {"name": "fail", "arguments": {}}))
        assert failed["result"]["isError"] is True
        unknown = await _call(peer, "mcp/message", message("nothing/here", {}))
        assert unknown["error"]["code"] == -32601  # the inner error, as the outer one
        # a second connection to the same server is a connection of its own
        other = await _connected(peer, server_id)
        assert other != connection_id
        assert (await _call(peer, "mcp/disconnect", {"connectionId": connection_id}))["result"] == {}
        gone = await _call(peer, "mcp/message", message("tools/list", {}))
        assert gone["error"]["code"] == -32602
        assert gone["error"]["data"] == {"connectionId": connection_id}


async def test_cancel_and_a_session_ending_under_an_open_connection() -> None:
    gate = Gate()
    async with client_connection() as (cx, peer):
        starting = asyncio.ensure_future(
            build_session(cx, "/work").with_mcp_server(McpServer(notes_server(gate))).start_session()
        )
        request = await peer.expect("session/new")
        server_id = request["params"]["mcpServers"][0]["serverId"]
        peer.respond(request, {"sessionId": "s1"})
        session = await asyncio.wait_for(starting, TIMEOUT)
        connection_id = await _connected(peer, server_id)
        call = {
            "connectionId": connection_id,
            "method": "tools/call",
            "params": {"name": "slow", "arguments": {}},
        }
        first = peer.request("mcp/message", call)
        await gate.started.wait()
        peer.notify("$/cancel_request", {"requestId": first})
        assert (await peer.response_to(first))["error"]["code"] == -32800
        await asyncio.wait_for(gate.cancelled.wait(), TIMEOUT)
        gate.started.clear()
        gate.cancelled.clear()
        second = peer.request("mcp/message", call)
        await gate.started.wait()
        session.close()
        assert (await peer.response_to(second))["error"]["code"] == -32800
        assert (await _call(peer, "mcp/connect", {"serverId": server_id}))["error"]["code"] == -33001
