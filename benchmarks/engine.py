"""Engine throughput between two processes over a socket pair (not a test; prints medians).

    python benchmarks/engine.py [--repeat 3] [--requests 20000] [--notifications 100000]

Scenarios, each over ByteStreams between a parent and a forked child:
* sequential typed request round trips (req/s, p50, p99);
* typed ``session/update`` notifications streamed child -> parent, validated on receipt (msgs/s).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import time
from typing import Any

from acpio.jsonrpc import Connection, UntypedRole
from acpio.schema import AgentMessageChunk, SessionNotification, SetSessionModeRequest, TextContent
from acpio.transports import ByteStreams


async def _streams(sock: socket.socket) -> ByteStreams:
    reader, writer = await asyncio.open_connection(sock=sock)
    return ByteStreams(reader, writer)


def serve(sock: socket.socket, notifications: int) -> None:
    async def run() -> None:
        app = UntypedRole.builder(name="bench-server")

        @app.on_request
        async def set_mode(req: SetSessionModeRequest, responder: Any, cx: Connection) -> dict[str, Any]:
            if req.mode_id == "stream":
                note = SessionNotification(
                    session_id=req.session_id, update=AgentMessageChunk(content=TextContent(text="chunk"))
                )
                for _ in range(notifications):
                    cx.send_notification(note)
            return {}

        await app.serve(await _streams(sock))

    asyncio.run(run())


async def measure(sock: socket.socket, requests: int, notifications: int) -> dict[str, float]:
    received = 0
    done = asyncio.Event()
    client = UntypedRole.builder(name="bench-client")

    @client.on_notification
    async def on_update(note: SessionNotification, cx: Connection) -> None:
        nonlocal received
        received += 1
        if received == notifications:
            done.set()

    async def main(cx: Connection) -> dict[str, float]:
        latencies = []
        request = SetSessionModeRequest(session_id="s", mode_id="echo")
        start = time.perf_counter()
        for _ in range(requests):
            t0 = time.perf_counter()
            await cx.send_request("session/set_mode", request.to_wire())
            latencies.append(time.perf_counter() - t0)
        elapsed = time.perf_counter() - start
        latencies.sort()
        t0 = time.perf_counter()
        await cx.send_request("session/set_mode", {"sessionId": "s", "modeId": "stream"})
        await done.wait()
        streamed = time.perf_counter() - t0
        return {
            "req_per_s": requests / elapsed,
            "p50_us": latencies[len(latencies) // 2] * 1e6,
            "p99_us": latencies[int(len(latencies) * 0.99)] * 1e6,
            "msgs_per_s": notifications / streamed,
        }

    return await client.connect_with(await _streams(sock), main)


def one_run(requests: int, notifications: int) -> dict[str, float]:
    parent, child = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        parent.close()
        try:
            serve(child, notifications)
        finally:
            os._exit(0)
    child.close()
    try:
        return asyncio.run(measure(parent, requests, notifications))
    finally:
        parent.close()
        os.waitpid(pid, 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--notifications", type=int, default=100_000)
    args = parser.parse_args()
    runs = [one_run(args.requests, args.notifications) for _ in range(args.repeat)]
    print(f"{'figure':<28}{'median':>12}   (runs: {args.repeat})")
    for key, label in [
        ("req_per_s", "round trips (req/s)"),
        ("p50_us", "round trip p50 (us)"),
        ("p99_us", "round trip p99 (us)"),
        ("msgs_per_s", "streamed updates (msgs/s)"),
    ]:
        print(f"{label:<28}{statistics.median(r[key] for r in runs):>12,.0f}")


if __name__ == "__main__":
    main()
