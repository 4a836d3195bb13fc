"""The provider side on the wire: an `mcp` server served over `mcp/message`, shapes checked by the schema.

The raw peer plays the agent (the consumer); acpio's client connection serves the official `mcp`
package's servers as sessions declare them.
"""

from __future__ import annotations

import asyncio
from typing import Any

import mcp_types as types
import pytest
from mcp.server import Server, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

from acpio.mcp import McpServer
from acpio.session import (
    ActiveSession,
    build_session,
    build_session_fork,
    build_session_load,
    build_session_resume,
)
from acpio.testing import WirePeer

from ._support import META, TIMEOUT, Gate, check, client_connection, mcp_request, notes_server


async def _start(
    cx: Any, peer: WirePeer, server: McpServer, method: str = "session/new"
) -> tuple[ActiveSession, str]:
    builders = {
        "session/new": lambda: build_session(cx, "/work"),
        "session/load": lambda: build_session_load(cx, "s1", "/work"),
        "session/resume": lambda: build_session_resume(cx, "s1", "/work"),
        "session/fork": lambda: build_session_fork(cx, "s1", "/work"),
    }
    starting = asyncio.ensure_future(builders[method]().with_mcp_server(server).start_session())
    request = await peer.expect(method)
    declared = request["params"]["mcpServers"]
    assert len(declared) == 1
    check("McpServer", declared[0])
    assert declared[0]["type"] == "acp"
    assert declared[0]["name"] == "notes"
    peer.respond(request, {"sessionId": "s1"} if method in ("session/new", "session/fork") else {})
    async with asyncio.timeout(TIMEOUT):
        session = await starting
    return session, declared[0]["serverId"]


async def _call(peer: WirePeer, message: dict[str, Any]) -> Any:
    request_id = peer.request("mcp/message", message)
    return await peer.response_to(request_id)


def _outcome(response: dict[str, Any]) -> dict[str, Any]:
    assert "result" in response, response
    outcome: dict[str, Any] = response["result"]
    check("MessageMcpResponse", outcome)
    assert ("result" in outcome) != ("error" in outcome), outcome
    return outcome


def _outer_error(response: dict[str, Any], code: int) -> dict[str, Any]:
    assert "error" in response, response
    error: dict[str, Any] = response["error"]
    check("Error", error)
    assert error["code"] == code, error
    return error


@pytest.mark.parametrize("method", ["session/new", "session/load", "session/resume", "session/fork"])
async def test_each_setup_method_declares_a_fresh_server_and_serves_it(method: str) -> None:
    server = McpServer(notes_server())
    async with client_connection() as (cx, peer):
        _, first = await _start(cx, peer, server, method)
        _, second = await _start(cx, peer, server, method)
        assert first != second  # generated, never reused
        for server_id in (first, second):
            outcome = _outcome(await _call(peer, mcp_request(server_id, "r1", "tools/list")))
            names = [tool["name"] for tool in outcome["result"]["tools"]]
            assert names == ["add", "fail", "slow"]


async def test_a_tool_call_returns_the_mcp_result_in_the_result_carrier() -> None:
    async with client_connection() as (cx, peer):
        _, server_id = await _start(cx, peer, McpServer(notes_server()))
        call = {"name": "add", "arguments": {"a": 2, "b": 40}}
        outcome = _outcome(await _call(peer, mcp_request(server_id, "r1", "tools/call", call)))
        result = outcome["result"]
        assert result["isError"] is False
        assert result["content"] == [{"type": "text", "text": "42"}]
        assert result["structuredContent"] == {"result": 42}


async def test_a_tool_that_raises_is_an_mcp_result_with_is_error() -> None:
    async with client_connection() as (cx, peer):
        _, server_id = await _start(cx, peer, McpServer(notes_server()))
        outcome = _outcome(await _call(peer, mcp_request(server_id, "r1", "tools/call", {"name": "fail"})))
        assert outcome["result"]["isError"] is True


def _lowlevel_server() -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="echo", input_schema={"type": "object"})])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if params.name != "echo":
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        return types.CallToolResult(content=[types.TextContent(type="text", text=str(params.arguments))])

    return Server("notes", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_an_unknown_tool_of_a_lowlevel_server_is_an_inner_error() -> None:
    async with client_connection() as (cx, peer):
        _, server_id = await _start(cx, peer, McpServer(_lowlevel_server()))
        outcome = _outcome(await _call(peer, mcp_request(server_id, "r1", "tools/call", {"name": "nope"})))
        check("McpError", outcome["error"])
        assert outcome["error"]["code"] == types.INVALID_PARAMS
        assert "nope" in outcome["error"]["message"]
        outcome = _outcome(await _call(peer, mcp_request(server_id, "r2", "tools/call", {"name": "echo"})))
        assert outcome["result"]["content"][0]["type"] == "text"


async def test_an_unknown_method_and_a_missing_envelope_are_inner_errors() -> None:
    async with client_connection() as (cx, peer):
        _, server_id = await _start(cx, peer, McpServer(notes_server()))
        outcome = _outcome(await _call(peer, mcp_request(server_id, "r1", "prompts/nothing")))
        assert outcome["error"]["code"] == types.METHOD_NOT_FOUND
        bare = {"serverId": server_id, "requestId": "r2", "method": "tools/list"}
        outcome = _outcome(await _call(peer, bare))
        assert outcome["error"]["code"] == types.INVALID_PARAMS
        assert "io.modelcontextprotocol/protocolVersion" in outcome["error"]["message"]


async def test_binding_errors_on_the_outer_response() -> None:
    async with client_connection() as (cx, peer):
        _, server_id = await _start(cx, peer, McpServer(notes_server()))
        error = _outer_error(await _call(peer, mcp_request("elsewhere:1", "r1", "tools/list")), -33001)
        assert error["data"] == {"serverId": "elsewhere:1"}
        _outer_error(
            await _call(peer, {"serverId": server_id, "requestId": 7, "method": "tools/list"}), -32602
        )
        _outer_error(
            await _call(peer, {"serverId": server_id, "requestId": "r", "method": "x", "params": [1]}), -32602
        )


async def test_a_duplicate_request_id_and_the_concurrency_limit() -> None:
    gate = Gate()
    async with client_connection() as (cx, peer):
        _, server_id = await _start(cx, peer, McpServer(notes_server(gate), max_active_requests=2))
        slow = [
            peer.request("mcp/message", mcp_request(server_id, f"r{n}", "tools/call", {"name": "slow"}))
            for n in (1, 2)
        ]
        await gate.started.wait()
        error = _outer_error(await _call(peer, mcp_request(server_id, "r1", "tools/list")), -32602)
        assert error["data"] == {"serverId": server_id, "requestId": "r1"}
        error = _outer_error(await _call(peer, mcp_request(server_id, "r3", "tools/list")), -33000)
        assert error["data"]["maxActiveRequests"] == 2
        gate.release.set()
        for request_id in slow:
            assert _outcome(await peer.response_to(request_id))["result"]["content"][0]["text"] == "done"
        # a slot is free again, and so is the request id
        assert "result" in _outcome(await _call(peer, mcp_request(server_id, "r1", "tools/list")))


async def test_cancel_request_cancels_a_slow_tool_call() -> None:
    gate = Gate()
    async with client_connection() as (cx, peer):
        _, server_id = await _start(cx, peer, McpServer(notes_server(gate)))
        request_id = peer.request("mcp/message", mcp_request(server_id, "r1", "tools/call", {"name": "slow"}))
        await gate.started.wait()
        peer.notify("$/cancel_request", {"requestId": request_id})
        _outer_error(await peer.response_to(request_id), -32800)
        await asyncio.wait_for(gate.cancelled.wait(), TIMEOUT)


async def test_a_session_closed_while_a_call_is_in_flight() -> None:
    gate = Gate()
    async with client_connection() as (cx, peer):
        session, server_id = await _start(cx, peer, McpServer(notes_server(gate)))
        request_id = peer.request("mcp/message", mcp_request(server_id, "r1", "tools/call", {"name": "slow"}))
        await gate.started.wait()
        session.close()
        error = _outer_error(await peer.response_to(request_id), -32800)
        assert "session" in error["message"]
        await asyncio.wait_for(gate.cancelled.wait(), TIMEOUT)
        # the server is gone with its session: its id is unavailable from now on
        _outer_error(await _call(peer, mcp_request(server_id, "r2", "tools/list")), -33001)


async def test_progress_goes_back_as_mcp_message_notifications() -> None:
    app = MCPServer("notes")

    @app.tool()
    async def count(ctx: Context) -> str:
        """Reports progress twice."""
        await ctx.report_progress(1, 2, "half")
        await ctx.report_progress(2, 2, "all")
        return "counted"

    async with client_connection() as (cx, peer):
        _, server_id = await _start(cx, peer, McpServer(app))
        params = {"name": "count", "_meta": {**META, "progressToken": "p1"}}
        message = {"serverId": server_id, "requestId": "r1", "method": "tools/call", "params": params}
        request_id = peer.request("mcp/message", message)
        seen: list[Any] = []
        response = await peer.response_to(request_id, seen)
        assert _outcome(response)["result"]["content"][0]["text"] == "counted"
        assert len(seen) == 2
        for frame, (progress, text) in zip(seen, [(1, "half"), (2, "all")], strict=True):
            assert frame["method"] == "mcp/message"
            assert "id" not in frame
            check("MessageMcpNotification", frame["params"])
            assert frame["params"]["serverId"] == server_id
            assert frame["params"]["requestId"] == "r1"
            assert frame["params"]["method"] == "notifications/progress"
            inner = frame["params"]["params"]
            assert (inner["progressToken"], inner["progress"], inner["message"]) == ("p1", progress, text)
