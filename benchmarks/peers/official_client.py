"""The benchmark client on the official Python SDK (``agent-client-protocol``, module ``acp``).

A ``Client`` class whose ``session_update`` receives each update as an SDK model (validated by the SDK),
connected with ``acp.spawn_agent_process``. Runs in the official SDK's own virtualenv; see ``_harness.py``
for the command line and the report.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

import acp
from _harness import (
    IDLE_SETTLE,
    MODE_ID,
    check_received,
    main,
    memory_mb,
    round_trip_figures,
    stream_prompt,
)
from acp.schema import AgentMessageChunk


class BenchClient(acp.Client):
    """Counts the agent's message chunks."""

    def __init__(self) -> None:
        self.received = 0

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        if isinstance(update, AgentMessageChunk):
            self.received += 1


def _spawn(client: BenchClient, argv: list[str]) -> Any:
    # stderr=None: the agent's stderr goes to ours instead of a pipe nobody reads.
    return acp.spawn_agent_process(client, argv[0], *argv[1:], transport_kwargs={"stderr": None})


async def session_run(argv: list[str], args: Any) -> dict[str, object]:
    """One session: idle memory, round trips, streaming, peak memory."""
    client = BenchClient()
    async with _spawn(client, argv) as (conn, process):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=args.cwd, mcp_servers=[])
        await asyncio.sleep(IDLE_SETTLE)
        figures: dict[str, object] = {"idle_rss_mb": memory_mb(process.pid, "VmRSS")}
        if args.requests:
            for _ in range(args.warmup_requests):
                await conn.set_session_mode(session_id=session.session_id, mode_id=MODE_ID)
            latencies = []
            start = time.perf_counter()
            for _ in range(args.requests):
                t0 = time.perf_counter()
                await conn.set_session_mode(session_id=session.session_id, mode_id=MODE_ID)
                latencies.append(time.perf_counter() - t0)
            figures.update(round_trip_figures(latencies, time.perf_counter() - start))

        async def stream(updates: int) -> float:
            client.received = 0
            start = time.perf_counter()
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block(stream_prompt(updates))])
            elapsed = time.perf_counter() - start
            check_received(client.received, updates)
            return elapsed

        if args.updates:
            if args.warmup_updates:
                await stream(args.warmup_updates)
            figures["msgs_per_s"] = args.updates / await stream(args.updates)
            figures["peak_rss_mb"] = memory_mb(process.pid, "VmHWM")
        return figures


async def spawn_run(argv: list[str], spawns: int) -> dict[str, object]:
    """Time ``spawns`` fresh agents from spawn to the initialize reply."""
    times = []
    for _ in range(spawns):
        start = time.perf_counter()
        async with _spawn(BenchClient(), argv) as (conn, _process):
            await conn.initialize(protocol_version=1)
            times.append((time.perf_counter() - start) * 1e3)
    return {"spawn_ms": times}


if __name__ == "__main__":
    main(__doc__.splitlines()[0], spawn_run, session_run)
