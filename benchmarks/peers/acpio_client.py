"""The benchmark client on acpio, in the builder style: a typed ``session/update`` handler counts updates.

It spawns the agent with :class:`~acpio.transports.AcpAgent` (or, with ``--url``, connects to a remote one
with :class:`~acpio.remote.RemoteAgent`) and sends typed requests (the generated models); see
``_harness.py`` for the command line and the report. It runs on asyncio's event loop, as the floor does;
``acpio_uvloop_client.py`` runs it on uvloop (``acpio[fast]``).
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

from _harness import (
    IDLE_SETTLE,
    MODE_ID,
    check_received,
    main,
    memory_mb,
    round_trip_figures,
    stream_prompt,
)

import acpio
from acpio import Client
from acpio import schema as acp
from acpio.jsonrpc import Connection
from acpio.running import EVENT_LOOP_VARIABLE
from acpio.transports import AcpAgent, Component


async def session_run(argv: list[str], args: Any) -> dict[str, object]:
    """One session: idle memory, round trips, streaming, peak memory."""
    received = 0
    app = Client.builder(name="bench-client")

    @app.on_notification
    async def on_update(note: acp.SessionNotification, cx: Connection) -> None:
        nonlocal received
        if isinstance(note.update, acp.AgentMessageChunk):
            received += 1

    agent: Component
    if args.url is not None:
        from acpio.remote import RemoteAgent

        agent = RemoteAgent(args.url)
    else:
        agent = AcpAgent(argv)

    async def main(cx: Connection) -> dict[str, object]:
        nonlocal received
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        session = await cx.send_request(acp.NewSessionRequest(cwd=args.cwd, mcp_servers=[]))
        pid = agent.pid if isinstance(agent, AcpAgent) else None
        await asyncio.sleep(IDLE_SETTLE)
        figures: dict[str, object] = {} if pid is None else {"idle_rss_mb": memory_mb(pid, "VmRSS")}

        async def round_trip() -> None:
            await cx.send_request(acp.SetSessionModeRequest(session_id=session.session_id, mode_id=MODE_ID))

        if args.requests:
            for _ in range(args.warmup_requests):
                await round_trip()
            latencies = []
            start = time.perf_counter()
            for _ in range(args.requests):
                t0 = time.perf_counter()
                await round_trip()
                latencies.append(time.perf_counter() - t0)
            figures.update(round_trip_figures(latencies, time.perf_counter() - start))

        async def stream(updates: int) -> float:
            nonlocal received
            received = 0
            text = acp.TextContent(text=stream_prompt(updates))
            start = time.perf_counter()
            await cx.send_request(acp.PromptRequest(session_id=session.session_id, prompt=[text]))
            elapsed = time.perf_counter() - start
            check_received(received, updates)
            return elapsed

        if args.updates:
            if args.warmup_updates:
                await stream(args.warmup_updates)
            figures["msgs_per_s"] = args.updates / await stream(args.updates)
            if pid is not None:
                figures["peak_rss_mb"] = memory_mb(pid, "VmHWM")
        return figures

    result: dict[str, object] = await app.connect_with(agent, main)
    return result


async def spawn_run(argv: list[str], spawns: int) -> dict[str, object]:
    """Time ``spawns`` fresh agents from spawn to the initialize reply."""
    times = []
    for _ in range(spawns):

        async def initialize(cx: Connection) -> float:
            await cx.send_request(acp.InitializeRequest(protocol_version=1))
            return time.perf_counter()

        start = time.perf_counter()
        answered = await Client.builder(name="bench-client").connect_with(AcpAgent(argv), initialize)
        times.append((answered - start) * 1e3)
    return {"spawn_ms": times}


def run_client(loop: str) -> None:
    """The client's main, on the event loop ``loop`` (``asyncio`` or ``uvloop``: see :func:`acpio.run`)."""
    os.environ[EVENT_LOOP_VARIABLE] = loop  # an acpio agent it spawns sets its own again
    main(__doc__.splitlines()[0], spawn_run, session_run, remote=True, run=acpio.run)


if __name__ == "__main__":
    run_client("asyncio")
