"""The consumer side: an acpio agent calls the tools an acpio client serves, through `mcp.Client`.

Both ends are real acpio connections on an in-process channel; the tools are the official `mcp`
package's, and the agent's calls go through that package's `Client` over :class:`acpio.mcp.AcpTransport`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from acpio.jsonrpc import Connection, Dispatch, Unhandled
from acpio.mcp import McpServer, acp_servers, connect
from acpio.roles import Agent, Client
from acpio.schema import (
    AgentCapabilities,
    InitializeRequest,
    InitializeResponse,
    McpCapabilities,
    McpServerAcp,
    NewSessionRequest,
    NewSessionResponse,
)
from acpio.session import build_session
from acpio.transports import Channel

from ._support import TIMEOUT, Gate, check, notes_server

Work = Callable[[Connection, McpServerAcp], Awaitable[Any]]


async def _agent_uses(server: McpServer, work: Work, seen: list[Any] | None = None) -> Any:
    """Serve ``server`` from a client to an agent; run ``work`` on the agent with the declaration.

    ``seen`` gets the params of each ``mcp/message`` the client receives.
    """
    declared: asyncio.Future[McpServerAcp] = asyncio.get_running_loop().create_future()
    agent = Agent.builder(name="consumer", unstable=True)

    @agent.on_request
    async def initialize(req: InitializeRequest) -> InitializeResponse:
        capabilities = AgentCapabilities(mcp_capabilities=McpCapabilities(acp=True))
        return InitializeResponse(protocol_version=1, agent_capabilities=capabilities)

    @agent.on_request
    async def new_session(req: NewSessionRequest) -> NewSessionResponse:
        declared.set_result(acp_servers(req.mcp_servers)[0])
        return NewSessionResponse(session_id="s1")

    async def agent_main(cx: Connection) -> Any:
        return await work(cx, await declared)

    async def client_main(cx: Connection) -> None:
        await cx.send_request(InitializeRequest(protocol_version=1))
        async with await build_session(cx, "/work").with_mcp_server(server).start_session():
            await agent_done.wait()

    agent_done = asyncio.Event()
    ours, theirs = Channel.duplex()
    client_builder = Client.builder(unstable=True)

    @client_builder.on_dispatch
    async def record(message: Dispatch) -> Unhandled:
        if seen is not None and message.method == "mcp/message":
            seen.append(message.params)
        return Unhandled(message)

    client = asyncio.create_task(client_builder.connect_with(theirs, client_main))
    try:
        async with asyncio.timeout(TIMEOUT):
            return await agent.connect_with(ours, agent_main)
    finally:
        agent_done.set()
        async with asyncio.timeout(TIMEOUT):
            await client


async def test_the_agent_lists_and_calls_tools_with_an_mcp_client() -> None:
    sent: list[Any] = []

    async def work(cx: Connection, server: McpServerAcp) -> Any:
        cx.add_send_observer(
            lambda _cx, method, params: sent.append(params) if method == "mcp/message" else None
        )
        async with connect(cx, server) as client:
            tools = await client.list_tools()
            added = await client.call_tool("add", {"a": 20, "b": 22})
            failed = await client.call_tool("fail", {})
        return [tool.name for tool in tools.tools], added, failed

    names, added, failed = await _agent_uses(McpServer(notes_server()), work, seen=sent)
    assert names == ["add", "fail", "slow"]
    assert added.is_error is False
    assert added.structured_content == {"result": 42}
    assert failed.is_error is True
    assert len(sent) == 3  # no initialize: stateless 2026-07-28 from the first request
    for params in sent:
        check("MessageMcpRequest", params)
        assert params["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] == "2026-07-28"
    assert len({params["requestId"] for params in sent}) == 3


async def test_cancelling_a_call_cancels_the_tool_at_the_provider() -> None:
    gate = Gate()

    async def work(cx: Connection, server: McpServerAcp) -> Any:
        async with connect(cx, server) as client:
            with anyio.move_on_after(TIMEOUT) as scope:
                calling = asyncio.ensure_future(client.call_tool("slow", {}))
                await gate.started.wait()
                calling.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await calling
            assert not scope.cancelled_caught
            await asyncio.wait_for(gate.cancelled.wait(), TIMEOUT)
            # the client goes on: the next call works
            return await client.call_tool("add", {"a": 1, "b": 1})

    result = await _agent_uses(McpServer(notes_server(gate)), work)
    assert result.structured_content == {"result": 2}


async def test_a_binding_error_reaches_the_mcp_client_as_an_mcp_error() -> None:
    async def work(cx: Connection, server: McpServerAcp) -> Any:
        async with connect(cx, "nowhere:1") as client:
            with pytest.raises(MCPError) as raised:
                await client.list_tools()
        return raised.value

    error = await _agent_uses(McpServer(notes_server()), work)
    assert error.code == -33001
