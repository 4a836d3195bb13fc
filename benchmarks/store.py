"""Session stores: append throughput, the cost of recording to a streaming agent, load and list times.

    python benchmarks/store.py                      # memory and SQLite
    python benchmarks/store.py --postgres URL       # and PostgreSQL at URL
    python benchmarks/store.py --postgres throwaway # and a throwaway cluster (tests/store/_postgres.py)
    python benchmarks/store.py --quick              # small sizes, to check the script runs

What is measured (each figure the median of --repeat runs), against the targets of issue 15:

* append: ``store.append_soon`` of one ``agent_message_chunk`` update, then ``flush()``: updates/s;
* streaming: an agent (an Agent builder served in-process) streams N updates in one turn to a client
  that reads them all, without a store and with ``serve_sessions`` recording each one, alternately;
  the updates are typed objects (as an agent builds them) or plain dicts. The slowdown (least CPU
  time against least CPU time: agent and client both run in this process, so the CPU time it spends
  is the work, which other load on a shared machine does not inflate as it does wall time) is the
  recording's cost (target: under 20 %);
* load: ``session/load`` of a session of 100,000 updates, over the wire: time until the client has
  the last replayed update (target under 2 s with SQLite), and the agent's memory growth meanwhile
  (resident set, sampled every 10 ms: bounded, the history is streamed);
* list: ``session/list`` over 10,000 sessions: the first page, a page 100 sessions deep (through the
  cursors) and a page filtered by cwd (target: under 50 ms a page).

Measured on this project's machine (2 cores shared with other work, load average about 2; the command
above with ``--postgres throwaway``): see docs/sessions.md, "How fast", and the final report of issue 15.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from acpio import Agent
from acpio.jsonrpc import Builder, Connection
from acpio.schema import (
    AgentMessageChunk,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    StopReason,
    TextContent,
)
from acpio.store import SessionStore, open_store, serve_sessions
from acpio.testing import WirePeer, serving

ROOT = Path(__file__).resolve().parents[1]
KINDS = {True: "typed updates", False: "dict updates"}
INIT = {"protocolVersion": 1, "clientCapabilities": {}}
#: Updates the streaming agent sends between two yields to the event loop (SQLite's burst at most).
BURST = 256


def chunk(session_id: str, n: int) -> dict[str, Any]:
    text = f"word{n} "
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return {"sessionId": session_id, "update": update}


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@contextlib.asynccontextmanager
async def rss_peak() -> AsyncIterator[list[float]]:
    """Yields ``[baseline, peak]`` in MB, the peak sampled every 10 ms until the block ends."""
    figures = [rss_mb(), rss_mb()]

    async def sample() -> None:
        while True:
            figures[1] = max(figures[1], rss_mb())
            await asyncio.sleep(0.01)

    task = asyncio.create_task(sample())
    try:
        yield figures
    finally:
        task.cancel()
        figures[1] = max(figures[1], rss_mb())


def typed_chunk(session_id: str, n: int) -> SessionNotification:
    return SessionNotification(
        session_id=session_id, update=AgentMessageChunk(content=TextContent(text=f"word{n} "))
    )


def streaming_agent(
    store: SessionStore | None, updates: int, typed: bool, burst: int = BURST
) -> Builder[Connection]:
    """Streams ``updates`` updates a turn, in bursts of ``burst`` sent without yielding to the event loop.

    After each burst the agent yields once (a store that commits what a burst gave it, SQLite, does
    it then: one commit a burst, whatever the reader does), then waits while the client is behind.
    """
    app = Agent.builder(name="streamer")
    if store is not None:
        serve_sessions(app, store)
    else:

        @app.on_request
        async def new(req: NewSessionRequest) -> NewSessionResponse:
            return NewSessionResponse(session_id="bare")

    @app.on_request
    async def prompt(req: PromptRequest, cx: Connection) -> PromptResponse:
        for n in range(updates):
            if typed:
                cx.send_notification(typed_chunk(req.session_id, n))
            else:
                cx.send_notification("session/update", chunk(req.session_id, n))
            if n % burst == burst - 1:
                await asyncio.sleep(0)
                await cx.drain()
        return PromptResponse(stop_reason=StopReason.END_TURN)

    return app


async def frames_until_answer(peer: WirePeer, request: int) -> AsyncIterator[Any]:
    """The decoded frames up to the answer to ``request``, read as a client in another process would.

    One deadline for the lot: ``WirePeer.recv`` arms a timeout per frame, which costs the in-process
    client more than the agent spends on a frame and would hide the agent's own cost.
    """
    async with asyncio.timeout(120):
        while True:
            raw = await peer.end.receive()
            assert isinstance(raw, bytes), f"the agent closed its output or sent an oversized frame: {raw!r}"
            frame = orjson.loads(raw)
            yield frame
            if frame.get("id") == request and "method" not in frame:
                return


async def call(peer: WirePeer, method: str, params: Any) -> Any:
    return await peer.response_to(peer.request(method, params))


async def stream_seconds(store: SessionStore | None, updates: int, typed: bool, burst: int = BURST) -> float:
    """CPU seconds of the turn (this process runs both ends)."""
    async with serving(streaming_agent(store, updates, typed, burst), timeout=120) as peer:
        await call(peer, "initialize", INIT)
        sid = (await call(peer, "session/new", {"cwd": "/bench", "mcpServers": []}))["result"]["sessionId"]
        started = time.process_time()
        request = peer.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "go"}]}
        )
        async for _ in frames_until_answer(peer, request):
            pass
        return time.process_time() - started


async def append_rate(store: SessionStore, updates: int) -> float:
    record = await store.create("/bench")
    bodies = [orjson.dumps(chunk(record.session_id, n)) for n in range(updates)]
    started = time.perf_counter()
    for body in bodies:
        store.append_soon(record.session_id, body)
    await store.flush()
    return updates / (time.perf_counter() - started)


async def load_figures(store: SessionStore, updates: int) -> tuple[float, float]:
    """Seconds to the last replayed update, and the agent's memory growth in MB."""
    record = await store.create("/bench")
    for n in range(updates):
        store.append_soon(record.session_id, orjson.dumps(chunk(record.session_id, n)))
    await store.flush()
    app = Agent.builder(name="loader")
    serve_sessions(app, store)
    async with serving(app, timeout=120) as peer:
        await call(peer, "initialize", INIT)
        async with rss_peak() as memory:
            started = time.perf_counter()
            request = peer.request(
                "session/load", {"sessionId": record.session_id, "cwd": "/bench", "mcpServers": []}
            )
            replayed = 0
            async for frame in frames_until_answer(peer, request):
                if frame.get("method") == "session/update":
                    replayed += 1
                    last = time.perf_counter()
        assert replayed == updates, (replayed, updates)
        return last - started, memory[1] - memory[0]


async def list_figures(store: SessionStore, sessions: int) -> dict[str, float]:
    """Milliseconds per session/list page: the first, one 100 sessions deep, one filtered by cwd."""
    for n in range(sessions):
        await store.create(f"/bench/{n % 10}", title=f"session {n}")
    app = Agent.builder(name="lister")
    serve_sessions(app, store)
    figures: dict[str, list[float]] = {"first page": [], "page 3 (100 deep)": [], "cwd filter": []}
    async with serving(app, timeout=120) as peer:
        await call(peer, "initialize", INIT)
        for _ in range(5):
            started = time.perf_counter()
            first = (await call(peer, "session/list", {}))["result"]
            figures["first page"].append(time.perf_counter() - started)
            second = (await call(peer, "session/list", {"cursor": first["nextCursor"]}))["result"]
            started = time.perf_counter()
            third = (await call(peer, "session/list", {"cursor": second["nextCursor"]}))["result"]
            figures["page 3 (100 deep)"].append(time.perf_counter() - started)
            assert len(third["sessions"]) == 50
            started = time.perf_counter()
            await call(peer, "session/list", {"cwd": "/bench/7"})
            figures["cwd filter"].append(time.perf_counter() - started)
    return {name: statistics.median(values) * 1000 for name, values in figures.items()}


@contextlib.contextmanager
def store_urls(postgres: str | None) -> Iterator[dict[str, Callable[[], str]]]:
    """Factories of empty stores' URLs, by kind."""
    directory = Path(tempfile.mkdtemp(prefix="acpio-bench-"))
    counter = iter(range(1_000_000))
    urls: dict[str, Callable[[], str]] = {
        "memory": lambda: "memory:",
        "sqlite": lambda: f"sqlite:///{directory / f'{next(counter)}.db'}",
    }
    with contextlib.ExitStack() as stack:
        if postgres == "throwaway":
            sys.path.insert(0, str(ROOT))
            from tests.store._postgres import Cluster, cluster

            running = stack.enter_context(cluster())
            if isinstance(running, Cluster):
                urls["postgres"] = running.new_database
            else:
                print(f"no PostgreSQL: {running}", file=sys.stderr)
        elif postgres is not None:
            urls["postgres"] = lambda: postgres
        yield urls


async def with_store(url: str, work: Callable[[SessionStore], Awaitable[Any]]) -> Any:
    async with open_store(url) as store:
        return await work(store)


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--postgres", metavar="URL", help="also a PostgreSQL store (URL, or 'throwaway')")
    parser.add_argument("--quick", action="store_true", help="small sizes: checks the script runs")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is shown)")
    args = parser.parse_args()
    quick = args.quick
    appends, streamed = (2_000, 2_000) if quick else (20_000, 20_000)
    history, sessions = (2_000, 200) if quick else (100_000, 10_000)
    repeat = 1 if quick else args.repeat

    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores, python {sys.version.split()[0]}")
    for typed in (True, False):
        bare = statistics.median([await stream_seconds(None, streamed, typed) for _ in range(repeat)])
        print(f"streaming {streamed:,} {KINDS[typed]}, no store: {streamed / bare:,.0f} updates/CPU-s")
    with store_urls(args.postgres) as urls:
        for kind, new_url in urls.items():
            rate = statistics.median(
                [await with_store(new_url(), lambda s: append_rate(s, appends)) for _ in range(repeat)]
            )
            # Runs with and without a store alternate, and the fastest of each counts: the machine is
            # shared, and the fastest run is the one least disturbed by other work.
            print(f"{kind:8} append: {rate:,.0f} updates/s")
            for typed in (True, False):
                alone, recorded = [], []
                for _ in range(repeat * 3):
                    alone.append(await stream_seconds(None, streamed, typed))
                    recorded.append(
                        await with_store(new_url(), lambda s, t=typed: stream_seconds(s, streamed, t))
                    )
                slowdown = min(recorded) / min(alone)
                print(
                    f"{kind:8} streaming {KINDS[typed]} while recording: {streamed / min(recorded):,.0f} "
                    f"updates/CPU-s, {(slowdown - 1) * 100:+.0f} % CPU time (target under +20 %)"
                )
            seconds, grown = await with_store(new_url(), lambda s: load_figures(s, history))
            print(
                f"{kind:8} session/load of {history:,} updates: {seconds:.2f} s to the last one, "
                f"agent memory +{grown:.0f} MB"
            )
            pages = await with_store(new_url(), lambda s: list_figures(s, sessions))
            shown = ", ".join(f"{name} {ms:.1f} ms" for name, ms in pages.items())
            print(f"{kind:8} session/list over {sessions:,} sessions: {shown}")


if __name__ == "__main__":
    asyncio.run(main())
