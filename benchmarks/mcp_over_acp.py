"""MCP over ACP: tool calls per second through acpio's binding, against a direct in-process `mcp` client.

    python benchmarks/mcp_over_acp.py              # 2,000 calls a run, 5 runs
    python benchmarks/mcp_over_acp.py --quick      # small sizes, to check the script runs

The tool is an official `mcp` package ``MCPServer`` tool adding two integers; every call is
``call_tool("add", {"a": i, "b": 1})`` and its structured result is checked. What is measured (each
figure the median of --repeat runs):

* ``direct``: ``mcp.Client(server)``, the `mcp` package's own in-process path (its modern
  per-request pipeline over a direct dispatcher: no JSON, no transport), the floor;
* ``acp``: the same ``mcp.Client`` in an acpio agent (:func:`acpio.mcp.connect`) calling the server an
  acpio client serves to the session (:class:`acpio.mcp.McpServer`), both connections in one process
  on an in-process channel: every call is one ``mcp/message`` request, JSON both ways;
* ``acp raw``: the agent sends the ``mcp/message`` requests itself (no `mcp` client), which leaves the
  provider's cost;

each sequentially (one call in flight) and with 16 calls in flight. ``make bench`` runs it after the
SDK comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mcp import Client as McpClient
from mcp.server.mcpserver import MCPServer

from acpio.jsonrpc import Connection
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

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}

Calls = Callable[[int, int], Awaitable[None]]


def tools() -> MCPServer:
    app = MCPServer("bench")

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    return app


async def _run_calls(call: Callable[[int], Awaitable[None]], count: int, in_flight: int) -> float:
    """Seconds for ``count`` calls, ``in_flight`` at a time."""
    started = time.perf_counter()
    if in_flight == 1:
        for i in range(count):
            await call(i)
    else:
        next_call = iter(range(count))

        async def worker() -> None:
            for i in next_call:
                await call(i)

        await asyncio.gather(*(worker() for _ in range(in_flight)))
    return time.perf_counter() - started


def _check(result: Any, i: int) -> None:
    if result.structured_content != {"result": i + 1}:
        raise AssertionError(f"add({i}, 1) returned {result!r}")


async def direct(count: int, in_flight: int) -> float:
    async with McpClient(tools()) as client:

        async def call(i: int) -> None:
            _check(await client.call_tool("add", {"a": i, "b": 1}), i)

        await call(-1)  # warm up: the tool's models are built on first use
        return await _run_calls(call, count, in_flight)


async def _through_acp(work: Callable[[Connection, McpServerAcp], Awaitable[float]]) -> float:
    """An acpio client serving the tools to a session; ``work`` runs on the acpio agent."""
    declared: asyncio.Future[McpServerAcp] = asyncio.get_running_loop().create_future()
    agent = Agent.builder(name="bench-agent", unstable=True)

    @agent.on_request
    async def initialize(req: InitializeRequest) -> InitializeResponse:
        capabilities = AgentCapabilities(mcp_capabilities=McpCapabilities(acp=True))
        return InitializeResponse(protocol_version=1, agent_capabilities=capabilities)

    @agent.on_request
    async def new_session(req: NewSessionRequest) -> NewSessionResponse:
        declared.set_result(acp_servers(req.mcp_servers)[0])
        return NewSessionResponse(session_id="bench")

    done = asyncio.Event()

    async def client_main(cx: Connection) -> None:
        await cx.send_request(InitializeRequest(protocol_version=1))
        async with await build_session(cx, os.getcwd()).with_mcp_server(McpServer(tools())).start_session():
            await done.wait()

    async def agent_main(cx: Connection) -> float:
        try:
            return await work(cx, await declared)
        finally:
            done.set()

    ours, theirs = Channel.duplex()
    client = asyncio.create_task(Client.builder(unstable=True).connect_with(theirs, client_main))
    try:
        return await agent.connect_with(ours, agent_main)
    finally:
        await client


async def acp(count: int, in_flight: int) -> float:
    async def work(cx: Connection, server: McpServerAcp) -> float:
        async with connect(cx, server) as client:

            async def call(i: int) -> None:
                _check(await client.call_tool("add", {"a": i, "b": 1}), i)

            await call(-1)
            return await _run_calls(call, count, in_flight)

    return await _through_acp(work)


async def acp_raw(count: int, in_flight: int) -> float:
    async def work(cx: Connection, server: McpServerAcp) -> float:
        async def call(i: int) -> None:
            params = {"name": "add", "arguments": {"a": i, "b": 1}, "_meta": META}
            message = {
                "serverId": server.server_id,
                "requestId": f"r{i}",
                "method": "tools/call",
                "params": params,
            }
            outcome = await cx.send_request("mcp/message", message)
            if outcome["result"]["structuredContent"] != {"result": i + 1}:
                raise AssertionError(f"add({i}, 1) returned {outcome!r}")

        await call(-1)
        return await _run_calls(call, count, in_flight)

    return await _through_acp(work)


PATHS: dict[str, Calls] = {"direct": direct, "acp": acp, "acp raw": acp_raw}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=2000, help="tool calls per run (default 2000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure; the median is reported")
    parser.add_argument("--quick", action="store_true", help="100 calls, 1 run: checks the script runs")
    args = parser.parse_args(argv)
    count, repeat = (100, 1) if args.quick else (args.calls, args.repeat)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"MCP over ACP: tool calls/s, median of {repeat} runs of {count} calls (load average {load:.2f})")
    print(f"{'path':<10} {'in flight':>9} {'calls/s':>10} {'vs direct':>10}")
    for in_flight in (1, 16):
        rates: dict[str, float] = {}
        for name, path in PATHS.items():
            runs = [count / asyncio.run(path(count, in_flight)) for _ in range(repeat)]
            rates[name] = statistics.median(runs)
            ratio = rates[name] / rates["direct"]
            print(f"{name:<10} {in_flight:>9} {rates[name]:>10.0f} {ratio:>9.2f}x", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
