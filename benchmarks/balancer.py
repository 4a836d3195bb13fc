"""``acpio serve`` behind HAProxy: what the balancer costs, how long a failover takes, memory per session.

::

    python benchmarks/balancer.py            # the figures of docs/deploy.md, "How fast"
    python benchmarks/balancer.py --quick    # every figure once, small (test_balancer_benchmark.py)

Three ``acpio serve -- acpio testy --store postgresql://...`` behind HAProxy with the configuration
of ``examples/deploy/haproxy.cfg`` (started as the tests start it: ``tests/remote/_balancer.py``, a
throwaway PostgreSQL cluster from ``tests/store/_postgres.py``). Needs HAProxy and PostgreSQL.

* **updates/s**: a turn streaming N updates (testy's ``stream N``) read by acpio's client, through
  the balancer and straight to a backend, over WebSocket and Streamable HTTP (median of rounds);
* **failover**: a backend SIGKILLed with its agents, then the client's next prompt: from the kill
  to its answer, the client reconnecting (``reconnect=True``) through the balancer and resuming the
  session on another backend (median of rounds; the killed backend is restarted between rounds);
* **memory**: a backend's proportional set size (the server and its agent processes) idle, with C
  connections of one session, and with one connection of S sessions: the cost of a connection
  (an agent process) and of a session in it, and so sessions per GiB each way.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acpio import Client, SessionConnection  # noqa: E402
from acpio import schema as acp  # noqa: E402
from acpio.errors import RequestError  # noqa: E402
from acpio.remote import RemoteAgent  # noqa: E402
from tests.remote._balancer import Backend, Balancer, balancer, start_backend  # noqa: E402
from tests.store._postgres import Cluster, cluster  # noqa: E402


async def stream_rate(url: str, updates: int) -> float:
    """Updates per second of one turn streaming ``updates`` chunks to acpio's client at ``url``."""

    async def main(cx: SessionConnection) -> float:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path("/tmp")).start_session() as session:
            session.send_prompt("echo warm")
            await session.read_to_string()
            began = time.perf_counter()
            session.send_prompt(f"stream {updates} word")
            count = 0
            async for message in session:
                if message.text is not None:
                    count += 1
            elapsed = time.perf_counter() - began
            assert count >= updates, count
            return updates / elapsed

    return await Client.builder().connect_with(RemoteAgent(url), main)


async def throughput(lb: Balancer, updates: int, rounds: int) -> None:
    direct = lb.backends["a"].url
    for transport, through, straight in (
        ("WebSocket", lb.ws_url, direct.replace("http", "ws", 1)),
        ("HTTP + SSE", lb.url, direct),
    ):
        rates: dict[str, list[float]] = {"balancer": [], "direct": []}
        for _ in range(rounds):
            rates["direct"].append(await stream_rate(straight, updates))
            rates["balancer"].append(await stream_rate(through, updates))
        lb_rate, direct_rate = statistics.median(rates["balancer"]), statistics.median(rates["direct"])
        print(
            f"updates/s {transport}: direct {direct_rate:,.0f}, through HAProxy {lb_rate:,.0f} "
            f"({direct_rate / lb_rate:.2f}x the cost per update)"
        )


async def failover(lb: Balancer, store: str, directory: Path, scheme: str, rounds: int) -> None:
    times: list[float] = []
    retried: list[int] = []
    for _ in range(rounds):
        times.append(await failover_once(lb, store, directory, scheme, retried))
        await asyncio.sleep(2.5)  # HAProxy sees the restarted backend up (rise 2, inter 1s)
    print(
        f"failover {scheme}: backend killed -> next prompt answered: median {statistics.median(times):.2f} s "
        f"(min {min(times):.2f}, max {max(times):.2f}, {rounds} rounds; the prompt was sent again "
        f"{len(retried)} times: it went into the dead connection before the client saw it die)"
    )


async def failover_once(lb: Balancer, store: str, directory: Path, scheme: str, retried: list[int]) -> float:
    """Kill the client's backend, time its next prompt; the backend is restarted on its port."""
    agent = RemoteAgent(f"{scheme}://127.0.0.1:{lb.port}", reconnect=True)

    async def main(cx: SessionConnection) -> float:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path("/tmp")).start_session() as session:
            session.send_prompt("echo before")
            await session.read_to_string()
            victim = lb.backends[agent.cookies["acpio-server"]]
            victim.kill()
            began = time.perf_counter()
            said = ""
            for _ in range(3):
                session.send_prompt("echo after")
                try:
                    said = await session.read_to_string()
                    break
                except RequestError:  # sent into the dead connection before the client saw it die
                    retried.append(1)
            elapsed = time.perf_counter() - began
            assert said == "after\n", said
            await victim.process.wait()
            port = victim.address.rsplit(":", 1)[1]
            lb.backends[victim.name] = await start_backend(victim.name, store, directory, "--port", port)
            return elapsed

    return await Client.builder().connect_with(agent, main)


def pss_kib(pid: int) -> int:
    """The proportional set size of ``pid`` and its children (the agents), in KiB."""
    total = 0
    for each in [pid, *children(pid)]:
        try:
            for line in Path(f"/proc/{each}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found.extend(int(child) for child in (task / "children").read_text().split())
        except OSError:
            continue
    return found


async def hold(url: str, sessions: int, opened: asyncio.Event, release: asyncio.Event) -> None:
    async def main(cx: SessionConnection) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        started = [cx.build_session(Path("/tmp")).start_session() for _ in range(sessions)]
        active = [await each.__aenter__() for each in started]
        for session in active:
            session.send_prompt("echo hello")
        for session in active:
            await session.read_to_string()
        opened.set()
        await release.wait()
        for each in started:
            await each.__aexit__(None, None, None)

    await Client.builder().connect_with(RemoteAgent(url.replace("http", "ws", 1)), main)


async def held_pss(backend: Backend, connections: int, sessions: int) -> int:
    """The backend's PSS while ``connections`` clients hold ``sessions`` sessions each."""
    release = asyncio.Event()
    opened = [asyncio.Event() for _ in range(connections)]
    tasks = [asyncio.ensure_future(hold(backend.url, sessions, each, release)) for each in opened]
    await asyncio.gather(*(each.wait() for each in opened))
    await asyncio.sleep(0.5)
    pss = pss_kib(backend.process.pid)
    release.set()
    await asyncio.gather(*tasks)
    await asyncio.sleep(1.0)  # the agents end with their connections
    return pss


async def memory(lb: Balancer, connections: int, sessions: int) -> None:
    backend = lb.backends["c"]
    idle = pss_kib(backend.process.pid)
    per_connection_total = await held_pss(backend, connections, 1)
    per_session_total = await held_pss(backend, 1, sessions)
    connection_kib = (per_connection_total - idle) / connections
    one_connection = per_session_total - idle
    session_kib = (one_connection - connection_kib) / max(sessions - 1, 1)
    print(f"memory: a backend idle {idle / 1024:.1f} MiB (PSS, the server process)")
    print(
        f"memory: {connections} connections of one session: {connection_kib / 1024:.1f} MiB each "
        f"(an agent process): {1024 * 1024 / connection_kib:,.0f} sessions per GiB"
    )
    print(
        f"memory: one connection of {sessions} sessions: {one_connection / 1024:.1f} MiB, "
        f"{session_kib:.0f} KiB per session beyond the first: "
        f"{1024 * 1024 * sessions / one_connection:,.0f} sessions per GiB"
    )


async def run(args: argparse.Namespace, pg: Cluster, directory: Path) -> None:
    store = pg.new_database()
    async with balancer(directory, store) as lb:
        await throughput(lb, args.updates, args.rounds)
        for scheme in ("ws", "http"):
            await failover(lb, store, directory, scheme, args.rounds)
        await memory(lb, args.connections, args.sessions)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="every figure once, small")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=20_000)
    parser.add_argument("--connections", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.updates, args.connections, args.sessions = 1, 500, 2, 5
    print(f"python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}")
    with cluster() as pg, tempfile.TemporaryDirectory(prefix="acpio-balancer-") as directory:
        if isinstance(pg, str):
            raise SystemExit(f"needs PostgreSQL: {pg}")
        asyncio.run(run(args, pg, Path(directory)))
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    main()
