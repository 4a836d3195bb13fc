"""The floor: a client on a plain asyncio + orjson loop, no ACP library and no validation.

It speaks the benchmark's four requests as raw JSON-RPC, reads the agent's output in chunks, parses every
line and counts the ``session/update`` notifications; see ``_harness.py`` for the command line and report.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import orjson
from _harness import (
    IDLE_SETTLE,
    MODE_ID,
    check_received,
    main,
    memory_mb,
    round_trip_figures,
    stream_prompt,
)


class Peer:
    """The agent process, as lines in and out, with a counter of the updates read."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._lines: list[bytes] = []
        self._rest = b""
        self._next_id = 0
        self.updates = 0

    @classmethod
    async def spawn(cls, argv: list[str]) -> Peer:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
        )
        return cls(process)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """Send a request; read (and count) what comes before its answer; return its result."""
        self._next_id += 1
        request_id = self._next_id
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        self._stdin.write(orjson.dumps(frame) + b"\n")
        while True:
            while self._lines:
                message = orjson.loads(self._lines.pop())
                if message.get("method") == "session/update":
                    self.updates += 1
                elif message.get("id") == request_id:
                    if "error" in message:
                        raise RuntimeError(f"{method} failed: {message['error']}")
                    return message.get("result")
            chunk = await self._stdout.read(1 << 16)
            if not chunk:
                raise RuntimeError(f"the agent closed its output before answering {method}")
            lines = (self._rest + chunk).split(b"\n")
            self._rest = lines.pop()
            lines.reverse()
            self._lines = [line for line in lines if line]

    async def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        await self.process.wait()


async def session_run(argv: list[str], args: Any) -> dict[str, object]:
    """One session: idle memory, round trips, streaming, peak memory."""
    peer = await Peer.spawn(argv)
    try:
        await peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        session_id = (await peer.request("session/new", {"cwd": args.cwd, "mcpServers": []}))["sessionId"]
        await asyncio.sleep(IDLE_SETTLE)
        figures: dict[str, object] = {"idle_rss_mb": memory_mb(peer.process.pid, "VmRSS")}
        if args.requests:
            params = {"sessionId": session_id, "modeId": MODE_ID}
            for _ in range(args.warmup_requests):
                await peer.request("session/set_mode", params)
            latencies = []
            start = time.perf_counter()
            for _ in range(args.requests):
                t0 = time.perf_counter()
                await peer.request("session/set_mode", params)
                latencies.append(time.perf_counter() - t0)
            figures.update(round_trip_figures(latencies, time.perf_counter() - start))

        async def stream(updates: int) -> float:
            peer.updates = 0
            prompt = [{"type": "text", "text": stream_prompt(updates)}]
            start = time.perf_counter()
            await peer.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
            elapsed = time.perf_counter() - start
            check_received(peer.updates, updates)
            return elapsed

        if args.updates:
            if args.warmup_updates:
                await stream(args.warmup_updates)
            figures["msgs_per_s"] = args.updates / await stream(args.updates)
            figures["peak_rss_mb"] = memory_mb(peer.process.pid, "VmHWM")
        return figures
    finally:
        await peer.close()


async def spawn_run(argv: list[str], spawns: int) -> dict[str, object]:
    """Time ``spawns`` fresh agents from spawn to the initialize reply."""
    times = []
    for _ in range(spawns):
        start = time.perf_counter()
        peer = await Peer.spawn(argv)
        await peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        times.append((time.perf_counter() - start) * 1e3)
        await peer.close()
    return {"spawn_ms": times}


if __name__ == "__main__":
    main(__doc__.splitlines()[0], spawn_run, session_run)
