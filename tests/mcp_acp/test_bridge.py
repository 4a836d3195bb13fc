"""The polyfill: `acp` servers reach an agent that only speaks HTTP MCP, through `mcp_http_bridge`.

testy without `--mcp-acp` advertises HTTP MCP only; in front of it the bridge advertises `acp`,
rewrites the declarations into loopback `http` ones and relays each HTTP MCP request as
`mcp/message`. testy's `mcp` command then reaches the tool with the `mcp` package's Streamable
HTTP client.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
from mcp.server.mcpserver import Context, MCPServer

from acpio.agents.testy import testy_agent
from acpio.conductor import Chain
from acpio.jsonrpc import Connection
from acpio.mcp import McpServer
from acpio.mcp.bridge import mcp_http_bridge
from acpio.roles import Agent, Client
from acpio.schema import (
    AgentCapabilities,
    InitializeRequest,
    InitializeResponse,
    McpCapabilities,
    NewSessionRequest,
    NewSessionResponse,
)
from acpio.transports import Channel

from ._support import META, TIMEOUT, Gate, check, notes_server
from .test_end_to_end import _check, _tool_call_texts, _tools_proxy


async def _run(chain: Chain, main: Any) -> Any:
    ours, theirs = Channel.duplex()
    served = asyncio.create_task(chain.serve(ours))
    try:
        async with asyncio.timeout(TIMEOUT):
            return await Client.builder(unstable=True).connect_with(theirs, main)
    finally:
        await theirs.aclose()
        async with asyncio.timeout(TIMEOUT):
            await served


async def test_a_client_hosted_tool_reaches_an_http_only_agent(tmp_path: Path) -> None:
    chain = Chain.agent("conductor", [mcp_http_bridge(), testy_agent()])

    async def main(cx: Connection) -> Any:
        return await _tool_call_texts(cx, tmp_path, McpServer(notes_server()))

    _check(await _run(chain, main))


async def test_the_seed_proxy_behind_the_bridge(tmp_path: Path) -> None:
    chain = Chain.agent("conductor", [_tools_proxy(), mcp_http_bridge(), testy_agent()])

    async def main(cx: Connection) -> Any:
        return await _tool_call_texts(cx, tmp_path)

    _check(await _run(chain, main))


def _http_only_agent(declared: asyncio.Future[list[Any]]) -> Any:
    """An agent taking HTTP MCP servers only, recording the declarations it is given."""
    agent = Agent.builder(name="http-only")

    @agent.on_request
    async def initialize(req: InitializeRequest) -> InitializeResponse:
        capabilities = AgentCapabilities(mcp_capabilities=McpCapabilities(http=True))
        return InitializeResponse(protocol_version=1, agent_capabilities=capabilities)

    @agent.on_request
    async def new_session(req: NewSessionRequest) -> NewSessionResponse:
        declared.set_result([server.to_wire() for server in req.mcp_servers])
        return NewSessionResponse(session_id="s1")

    return agent


def _call(request_id: Any, name: str, **extra: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": extra, "_meta": META}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


async def test_the_declaration_the_limits_and_the_http_errors(tmp_path: Path) -> None:
    declared: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
    gate = Gate()
    bridge = mcp_http_bridge(max_body_bytes=4096, max_active_requests=2)
    chain = Chain.agent("conductor", [bridge, _http_only_agent(declared)])

    async def main(cx: Connection) -> None:
        initialized = await cx.send_request(InitializeRequest(protocol_version=1))
        mcp = initialized.agent_capabilities.mcp_capabilities
        assert (mcp.http, mcp.acp) == (True, True)  # the bridge advertises acp upstream
        async with (
            await cx.build_session(tmp_path).with_mcp_server(McpServer(notes_server(gate))).start_session()
        ):
            [server] = await declared
            check("McpServer", server)
            assert server["type"] == "http"
            assert server["name"] == "notes"
            assert server["url"].startswith("http://127.0.0.1:")
            [auth] = server["headers"]
            token = auth["value"].removeprefix("Bearer ")
            assert auth["name"] == "Authorization"
            assert token not in server["url"]
            headers = {**HEADERS, "authorization": auth["value"]}
            async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
                url = server["url"]
                ok = await http.post(url, json=_call(1, "add", a=1, b=2), headers=headers)
                assert ok.status_code == 200
                assert ok.json()["result"]["structuredContent"] == {"result": 3}
                assert (await http.post(url, json=_call(2, "add"), headers=HEADERS)).status_code == 401
                wrong = {**headers, "authorization": "Bearer nope"}
                assert (await http.post(url, json=_call(2, "add"), headers=wrong)).status_code == 401
                assert (await http.post(url + "x", json=_call(2, "add"), headers=headers)).status_code == 404
                assert (await http.get(url, headers=headers)).status_code == 405
                big = _call(3, "add", padding="x" * 5000)
                too_big = await http.post(url, json=big, headers=headers)
                assert too_big.status_code == 413
                assert too_big.json()["error"]["code"] == -33000
            # two slow calls fill the limit; the third is refused; closing one cancels its mcp/message
            async with (
                httpx2.AsyncClient(timeout=TIMEOUT) as first,
                httpx2.AsyncClient(timeout=TIMEOUT) as other,
            ):
                slow = [
                    asyncio.ensure_future(c.post(url, json=_call(n, "slow"), headers=headers))
                    for n, c in enumerate((first, other))
                ]
                await gate.started.wait()
                await asyncio.sleep(0.1)
                refused = await http_post(url, _call(9, "add", a=1, b=1), headers)
                assert refused.status_code == 429
                assert refused.json()["error"]["code"] == -33000
                slow[0].cancel()
                await first.aclose()  # the agent gives up on one call: the tool is cancelled
                await asyncio.wait_for(gate.cancelled.wait(), TIMEOUT)
                gate.release.set()
                done = await slow[1]
                assert done.json()["result"]["content"][0]["text"] == "done"

    await _run(chain, main)


async def http_post(url: str, body: Any, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
        return await http.post(url, json=body, headers=headers)


async def test_progress_turns_the_response_into_an_event_stream(tmp_path: Path) -> None:
    tools = MCPServer("notes")

    async def count(ctx: Context) -> str:
        """Reports progress twice."""
        await ctx.report_progress(1, 2)
        await ctx.report_progress(2, 2)
        return "counted"

    tools.tool()(count)
    declared: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
    chain = Chain.agent("conductor", [mcp_http_bridge(), _http_only_agent(declared)])

    async def main(cx: Connection) -> list[Any]:
        await cx.send_request(InitializeRequest(protocol_version=1))
        async with await cx.build_session(tmp_path).with_mcp_server(McpServer(tools)).start_session():
            [server] = await declared
            headers = {**HEADERS, "authorization": server["headers"][0]["value"]}
            body = _call(1, "count")
            body["params"]["_meta"] = {**META, "progressToken": "p"}
            async with httpx2.AsyncClient(timeout=TIMEOUT) as http:
                response = await http.post(server["url"], json=body, headers=headers)
            assert response.headers["content-type"] == "text/event-stream"
            return [
                json.loads(line.removeprefix("data: "))
                for line in response.text.splitlines()
                if line.startswith("data: ")
            ]

    events = await _run(chain, main)
    assert [event.get("method") for event in events] == [
        "notifications/progress",
        "notifications/progress",
        None,
    ]
    assert [event["params"]["progress"] for event in events[:2]] == [1, 2]
    assert events[2]["result"]["content"][0]["text"] == "counted"


async def test_a_handshake_era_http_client_gets_a_session(tmp_path: Path) -> None:
    """The mcp package's client in legacy mode: initialize, initialized, then calls, with Mcp-Session-Id."""
    from mcp import Client as McpClient
    from mcp.client.streamable_http import streamable_http_client

    declared: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
    chain = Chain.agent("conductor", [mcp_http_bridge(), _http_only_agent(declared)])

    async def main(cx: Connection) -> Any:
        await cx.send_request(InitializeRequest(protocol_version=1))
        async with (
            await cx.build_session(tmp_path).with_mcp_server(McpServer(notes_server())).start_session()
        ):
            [server] = await declared
            headers = {server["headers"][0]["name"]: server["headers"][0]["value"]}
            async with (
                httpx2.AsyncClient(headers=headers, timeout=TIMEOUT) as http,
                McpClient(streamable_http_client(server["url"], http_client=http), mode="legacy") as client,
            ):
                assert client.session.protocol_version == "2025-11-25"
                listed = await client.list_tools()
                added = await client.call_tool("add", {"a": 20, "b": 22})
            return [tool.name for tool in listed.tools], added.structured_content

    assert await _run(chain, main) == (["add", "fail", "slow"], {"result": 42})
