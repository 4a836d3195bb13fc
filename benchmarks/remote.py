"""ACP over WebSocket and Streamable HTTP against stdio, acpio and the TypeScript SDK side by side.

    python benchmarks/remote.py                 # 1000 round trips, 20000 updates, 3 rounds
    python benchmarks/remote.py --quick         # small sizes, to check the script runs

Every pairing of a client and an agent, acpio's and the official TypeScript SDK's (2.4.0, its
experimental ``AcpServer`` and remote clients; installed by ``peers/install.py``, left out with the
reason when it cannot be), over each transport: stdio (the client spawns the agent), WebSocket and
Streamable HTTP (one server process per implementation, ``--listen``). The clients and agents are
the benchmark peers of ``benchmarks/run.py`` (``benchmarks/peers``), each client a process of its own:

* round trips: sequential ``session/set_mode`` requests, one in flight: requests/s;
* streaming: one turn of ``stream N`` (N typed ``agent_message_chunk`` updates), each read by the
  client: updates/s; and the cost per update against the same pairing over stdio.

Each figure is the median of --repeat rounds, every pairing run once per round; the load average is
printed at the start and the end.

    python benchmarks/remote.py --connections 1000

instead opens that many WebSocket connections to one server process, at once: the server's RSS
growth per idle connection (after ``initialize`` and ``session/new``), then every connection runs a
streamed turn (``stream 100``) and a round trip at the same time: the completion time of all, and
the p50 and p99 of the round trips.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import locate  # noqa: E402  (benchmarks/run.py: the peers, installed and found)

SERVE = """
import asyncio, sys
from acpio.agents.testy import testy_agent
from acpio.remote import RemoteServer, Limits

async def main() -> None:
    limits = Limits(idle_timeout=3600, max_connections=5000)
    async with RemoteServer(testy_agent(), port=0, limits=limits, uvicorn={"backlog": 4096}) as server:
        print(server.url, flush=True)
        await server.wait_closed()

asyncio.run(main())
"""


TRANSPORTS = ("stdio", "websocket", "http+sse")


def implementations(names: set[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """The benchmark clients and agents by implementation, found as ``benchmarks/run.py`` finds them."""
    found, missing = locate(names, lambda line: print(line, file=sys.stderr))
    for name, reason in missing.items():
        print(f"{name} is not measured: {reason}", file=sys.stderr)
    clients = {n: i.client for n, i in found.items() if i.client is not None}
    return clients, {n: i.agent for n, i in found.items()}


@contextlib.asynccontextmanager
async def listening(agent: list[str]) -> AsyncIterator[str]:
    """The agent served over WebSocket and Streamable HTTP (``--listen 0``) by a process; yields its URL."""
    server = await asyncio.create_subprocess_exec(
        *agent, "--listen", "0", stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
    )
    assert server.stdout is not None
    try:
        line = (await asyncio.wait_for(server.stdout.readline(), 60)).decode()
        if not line.startswith("listening on "):
            raise RuntimeError(f"{agent}: expected 'listening on URL', got {line!r}")
        yield line.split()[-1]
    finally:
        server.terminate()
        await server.communicate()


async def measure(client: list[str], target: list[str], args: argparse.Namespace) -> tuple[float, float]:
    """Round trips/s and updates/s of one client run (``--agent`` or ``--url``, see peers/_harness.py)."""
    argv = [
        *client,
        *target,
        "--requests",
        str(args.requests),
        "--warmup-requests",
        str(args.requests // 10),
        "--updates",
        str(args.updates),
        "--warmup-updates",
        str(args.updates // 10),
    ]
    process = await asyncio.create_subprocess_exec(
        *argv, stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL, cwd=ROOT
    )
    out, _ = await asyncio.wait_for(process.communicate(), 600)
    if process.returncode != 0:
        raise RuntimeError(f"{argv} exited with {process.returncode}")
    figures = json.loads(out.decode().strip().splitlines()[-1])
    return figures["req_per_s"], figures["msgs_per_s"]


async def run(args: argparse.Namespace) -> None:
    clients, agents = implementations({"acpio", *args.impls.split(",")})
    results: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    print(f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    async with contextlib.AsyncExitStack() as stack:
        urls = {name: await stack.enter_async_context(listening(agent)) for name, agent in agents.items()}
        for _ in range(args.repeat):  # rounds, so that a disturbance spreads over every pairing
            for client_name, client in clients.items():
                for agent_name, agent in agents.items():
                    url = urls[agent_name]
                    targets = {
                        "stdio": ["--agent", json.dumps(agent)],
                        "websocket": ["--url", url.replace("http", "ws", 1)],
                        "http+sse": ["--url", url],
                    }
                    for transport, target in targets.items():
                        figures = await measure(client, target, args)
                        results.setdefault((client_name, agent_name, transport), []).append(figures)
                        print(
                            f"  {client_name} -> {agent_name} {transport}: "
                            f"{figures[0]:,.0f} req/s, {figures[1]:,.0f} updates/s",
                            file=sys.stderr,
                        )
    print(f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    columns = f"{'client -> agent':<18}{'transport':<12}{'round trips/s':>15}{'updates/s':>12}"
    print(f"{columns}{'cost/update vs stdio':>22}")
    medians = {
        key: (statistics.median(r for r, _ in runs), statistics.median(u for _, u in runs))
        for key, runs in results.items()
    }
    for (client_name, agent_name, transport), (rps, ups) in medians.items():
        stdio = medians[(client_name, agent_name, "stdio")][1]
        pair = f"{client_name} -> {agent_name}"
        print(f"{pair:<18}{transport:<12}{rps:>15,.0f}{ups:>12,.0f}{stdio / ups:>21.2f}x")
    ws = medians[("acpio", "acpio", "stdio")][1] / medians[("acpio", "acpio", "websocket")][1]
    print(f"target: acpio over WebSocket within 1.5x of stdio's cost per update: {ws:.2f}x")


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


async def many(args: argparse.Namespace) -> None:
    import orjson
    import websockets

    server = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SERVE, stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
    )
    assert server.stdout is not None
    url = (await server.stdout.readline()).decode().strip().replace("http", "ws", 1)

    async def call(socket: Any, request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        await socket.send(
            orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        )
        while True:
            message = orjson.loads(await socket.recv())
            if message.get("id") == request_id and "method" not in message:
                return message  # type: ignore[no-any-return]

    try:
        before = rss_kb(server.pid)
        sockets: list[Any] = []
        sessions: list[str] = []
        started = time.perf_counter()
        for start in range(0, args.connections, 100):  # in waves: the listen backlog is finite
            opened = await asyncio.gather(
                *(
                    websockets.connect(url, max_queue=None)
                    for _ in range(start, min(start + 100, args.connections))
                )
            )
            sockets += opened
            for socket in opened:
                await call(socket, 0, "initialize", {"protocolVersion": 1})
                new = await call(socket, 1, "session/new", {"cwd": "/tmp", "mcpServers": []})
                sessions.append(new["result"]["sessionId"])
        opened_in = time.perf_counter() - started
        await asyncio.sleep(1)
        idle = rss_kb(server.pid)
        latencies: list[float] = []

        async def turn(socket: Any, session: str) -> None:
            await call(
                socket,
                2,
                "session/prompt",
                {"sessionId": session, "prompt": [{"type": "text", "text": "stream 100"}]},
            )
            sent = time.perf_counter()
            await call(socket, 3, "session/set_mode", {"sessionId": session, "modeId": "plan"})
            latencies.append(time.perf_counter() - sent)

        started = time.perf_counter()
        await asyncio.gather(
            *(turn(socket, session) for socket, session in zip(sockets, sessions, strict=True))
        )
        took = time.perf_counter() - started
        await asyncio.gather(*(socket.close() for socket in sockets))
    finally:
        server.terminate()
        await server.wait()
    latencies.sort()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} cores")
    print(f"{args.connections} WebSocket connections opened and initialized in {opened_in:.1f} s")
    print(
        f"server RSS: {before / 1024:.1f} MB before, {idle / 1024:.1f} MB with them idle: "
        f"{(idle - before) / args.connections:.0f} KB per idle connection"
    )
    print(f"a streamed turn (100 updates) and a round trip on every connection at once: {took:.2f} s")
    print(
        f"round trip during that: p50 {latencies[len(latencies) // 2] * 1000:.0f} ms, "
        f"p99 {latencies[int(len(latencies) * 0.99)] * 1000:.0f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--updates", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--impls", default="acpio,ts", help="acpio, or acpio,ts (the TypeScript SDK too)")
    parser.add_argument("--quick", action="store_true", help="100 round trips, 1000 updates, one run")
    parser.add_argument("--connections", type=int, help="N concurrent WebSocket connections instead")
    args = parser.parse_args()
    if args.connections:
        asyncio.run(many(args))
        return
    if args.quick:
        args.requests, args.updates, args.repeat = 100, 1000, 1
    asyncio.run(run(args))


if __name__ == "__main__":
    main()
