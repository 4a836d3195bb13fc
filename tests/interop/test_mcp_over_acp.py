"""MCP over ACP against the official TypeScript SDK 2.4.0 (``peers/ts/mcp.mjs``), both ways.

* acpio provides, TypeScript consumes: an acpio client serves an official `mcp` package server; the
  TS agent's ``McpOverAcpCaller`` lists the tools and calls one.
* TypeScript provides, acpio consumes: the TS client's ``McpOverAcpProvider`` serves a tool to
  ``acpio testy --mcp-acp``, whose ``mcp`` command calls it through the `mcp` package's client.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from acpio.jsonrpc import Connection
from acpio.mcp import McpServer
from acpio.roles import Client
from acpio.schema import InitializeRequest
from acpio.transports import AcpAgent

from ._support import PEERS, RUN_TIMEOUT

TS_MCP = PEERS / "ts" / "mcp.mjs"


def _tools() -> MCPServer:
    app = MCPServer("py-tools")

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return app


async def test_a_typescript_agent_lists_and_calls_a_tool_acpio_serves(node: str, tmp_path: Path) -> None:
    async def main(cx: Connection) -> Any:
        await cx.send_request(InitializeRequest(protocol_version=1))
        async with (
            await cx.build_session(tmp_path).with_mcp_server(McpServer(_tools())).start_session() as session
        ):
            session.send_prompt("go")
            return json.loads(await session.read_to_string())

    agent = AcpAgent([node, str(TS_MCP), "consumer"])
    async with asyncio.timeout(RUN_TIMEOUT):
        outcomes = await Client.builder(unstable=True).connect_with(agent, main)
    assert [tool["name"] for tool in outcomes["list"]["result"]["tools"]] == ["add"]
    call = outcomes["call"]["result"]
    assert call["isError"] is False
    assert call["structuredContent"] == {"result": 42}
    # the mcp package's MCPServer reports an unknown tool as a tool error, inside the result carrier
    assert outcomes["unknown"]["result"]["isError"] is True


def test_acpio_testy_calls_a_tool_a_typescript_client_serves(node: str, tmp_path: Path) -> None:
    script = 'mcp ts-tools add {"a": 2, "b": 40}\nmcp ts-tools fail\nmcp ts-tools nope'
    testy = [sys.executable, "-m", "acpio", "testy", "--mcp-acp"]
    run = subprocess.run(
        [node, str(TS_MCP), "provider", *testy],
        cwd=tmp_path,
        env={**os.environ, "MCP_PROMPT": script},
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    ended = [
        (update["status"], [block["content"]["text"] for block in update["content"]])
        for update in summary["updates"]
        if update["sessionUpdate"] == "tool_call_update"
    ]
    assert ended == [
        ("completed", ["tools: add, fail", "42"]),
        ("failed", ["tools: add, fail", "it failed"]),
        ("failed", ["MCP server 'ts-tools' failed: Unknown tool: nope"]),
    ]
    assert summary["stopReason"] == "end_turn"
    # stateless 2026-07-28 straight away (no initialize), one fresh requestId per inner request
    assert {request["protocolVersion"] for request in summary["requests"]} == {"2026-07-28"}
    assert [request["method"] for request in summary["requests"]] == ["tools/list", "tools/call"] * 3
    assert len({request["requestId"] for request in summary["requests"]}) == 6
