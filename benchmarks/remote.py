"""ACP over WebSocket and Streamable HTTP against stdio: round trips/s and streamed updates/s.

    python benchmarks/remote.py                 # 2000 round trips, 20000 updates, 3 runs each
    python benchmarks/remote.py --quick         # small sizes, to check the script runs

The agent is ``acpio testy`` in a process of its own: on stdio (spawned by the client), and served by
``RemoteServer`` (uvicorn, one process) for WebSocket and HTTP. The client is acpio's, in this process:

* round trips: sequential ``session/set_mode`` requests, one in flight: requests/s;
* streaming: one turn of ``stream N`` (N ``agent_message_chunk`` updates), each read by the client:
  updates/s.

Each figure is the median of --repeat runs, transports interleaved; the load average is printed with
them. The TypeScript SDK's remote transports are not measured here (its benchmark peers speak stdio).

    python benchmarks/remote.py --connections 1000

instead opens that many WebSocket connections to one server process, at once: the server's RSS
growth per idle connection (after ``initialize`` and ``session/new``), then every connection runs a
streamed turn (``stream 100``) and a round trip at the same time: the completion time of all, and
the p50 and p99 of the round trips.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from acpio import Client, SessionConnection
from acpio import schema as acp
from acpio.remote import RemoteAgent
from acpio.transports import AcpAgent, Component

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


async def measure(component: Component, requests: int, updates: int) -> tuple[float, float]:
    figures: list[float] = []

    async def main(cx: SessionConnection) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path.cwd()).start_session() as session:
            started = time.perf_counter()
            for i in range(requests):
                await cx.send_request(
                    acp.SetSessionModeRequest(
                        session_id=session.session_id, mode_id="plan" if i % 2 else "chat"
                    )
                )
            figures.append(requests / (time.perf_counter() - started))
            started = time.perf_counter()
            session.send_prompt(f"stream {updates}")
            text = await session.read_to_string()
            figures.append(updates / (time.perf_counter() - started))
            assert len(text) == updates, (len(text), updates)

    await Client.builder().connect_with(component, main)
    return figures[0], figures[1]


async def run(args: argparse.Namespace) -> None:
    server = await asyncio.create_subprocess_exec(
        sys.executable, "-c", SERVE, stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
    )
    assert server.stdout is not None
    url = (await server.stdout.readline()).decode().strip()
    try:
        makers = {
            "stdio": lambda: AcpAgent([sys.executable, "-m", "acpio", "testy"]),
            "websocket": lambda: RemoteAgent(url.replace("http", "ws", 1)),
            "http+sse": lambda: RemoteAgent(url),
        }
        results: dict[str, list[tuple[float, float]]] = {name: [] for name in makers}
        for _ in range(args.repeat):
            for name, make in makers.items():
                results[name].append(await measure(make(), args.requests, args.updates))
                print(
                    f"  {name}: {results[name][-1][0]:,.0f} req/s, {results[name][-1][1]:,.0f} updates/s",
                    file=sys.stderr,
                )
    finally:
        server.terminate()
        await server.wait()
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}; {os.cpu_count()} cores")
    print(f"{'transport':<12}{'round trips/s':>16}{'updates/s':>14}{'cost/msg vs stdio':>20}")
    base = statistics.median(u for _, u in results["stdio"])
    for name, runs in results.items():
        rps = statistics.median(r for r, _ in runs)
        ups = statistics.median(u for _, u in runs)
        print(f"{name:<12}{rps:>16,.0f}{ups:>14,.0f}{base / ups:>19.2f}x")


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
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--updates", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
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
