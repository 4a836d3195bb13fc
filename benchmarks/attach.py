"""An attach's time to its first live update, straight to the backend and through HAProxy.

::

    python benchmarks/attach.py               # the figures of docs/deploy.md, "Attaching"
    python benchmarks/attach.py --rounds 3    # quicker

Three ``acpio serve --app ... --route acpio-server=NAME`` backends of an AgentApp on one throwaway
PostgreSQL cluster behind HAProxy (``examples/deploy/haproxy.cfg``, started as the tests start it:
``tests/remote/_balancer.py``). A client opens a session through the balancer and prompts a turn
that says a word every 10 ms. Then, round after round, a new client connects (WebSocket),
initializes, attaches as an observer and reads until its first live update; the time is from
before the connection to that update, the replay of the session so far included:

* **direct**: to the backend running the turn, at its own address;
* **balancer, routed**: through HAProxy without a cookie, landing on another backend, refused with
  the route, then through HAProxy again with the route's cookie (two connections);
* **balancer, cookie**: through HAProxy with the affinity cookie from the start.

Needs HAProxy and PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from acpio import Client, ResourceNotFound, SessionConnection  # noqa: E402
from acpio import schema as acp  # noqa: E402
from acpio.remote import RemoteAgent  # noqa: E402
from acpio.session import observe_session, route_cookies  # noqa: E402
from tests.remote._balancer import Balancer, balancer  # noqa: E402
from tests.store._postgres import cluster  # noqa: E402

TICKER = """
import asyncio
import os

from acpio.app import AgentApp, Turn

app = AgentApp("ticker", unstable=True, store=os.environ["ACPIO_TEST_STORE"])


@app.prompt
async def prompt(turn: Turn) -> None:
    n = 0
    while True:
        await turn.say(f"{n} ")
        n += 1
        await asyncio.sleep(0.01)
"""


async def attach_once(url: str, session_id: str, cookies: dict[str, str] | None) -> tuple[float, int, bool]:
    """Seconds from a new connection to the first live update, the replay's length, whether it was routed."""
    began = time.perf_counter()

    async def main(cx: SessionConnection) -> tuple[float, int] | dict[str, str]:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        try:
            watched = await observe_session(cx, session_id)
        except ResourceNotFound as exc:
            route = route_cookies(exc)
            if route is None:
                raise
            return route
        await watched.read()
        return time.perf_counter() - began, len(watched.replay)

    agent = RemoteAgent(url, cookies=httpx.Cookies(cookies) if cookies else None)
    found = await Client.builder().connect_with(agent, main)
    if isinstance(found, dict):
        again = await Client.builder().connect_with(RemoteAgent(url, cookies=httpx.Cookies(found)), main)
        assert isinstance(again, tuple)
        return again[0], again[1], True
    return found[0], found[1], False


async def measure(lb: Balancer, rounds: int) -> None:
    owner_agent = RemoteAgent(lb.ws_url)
    opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    done = asyncio.Event()

    async def owner(cx: SessionConnection) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path("/tmp")).start_session() as session:
            session.send_prompt("tick")
            await session.read_update()
            opened.set_result(session.session_id)
            while not done.is_set():
                await session.read_update()

    owning = asyncio.ensure_future(Client.builder().connect_with(owner_agent, owner))
    session_id = await opened
    holder = owner_agent.cookies["acpio-server"]
    cookie = {"acpio-server": holder}
    direct = lb.backends[holder].url.replace("http", "ws", 1)
    cases: dict[str, list[float]] = {"direct": [], "balancer, routed": [], "balancer, cookie": []}
    replayed: list[int] = []
    for _ in range(rounds):
        for case, url, cookies in (
            ("direct", direct, None),
            ("balancer, routed", lb.ws_url, None),
            ("balancer, cookie", lb.ws_url, cookie),
        ):
            seconds, replay, routed = await attach_once(url, session_id, cookies)
            if case == "balancer, routed" and not routed:
                continue  # HAProxy's round robin sent it to the holder: not this case
            cases[case].append(seconds)
            replayed.append(replay)
    done.set()
    owning.cancel()
    print(f"attach to first live update, {rounds} rounds (replay {min(replayed)}-{max(replayed)} updates)")
    for case, times in cases.items():
        ms = sorted(t * 1000 for t in times)
        p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
        print(f"  {case:18} median {statistics.median(ms):6.1f} ms  p90 {p90:6.1f} ms  (n={len(ms)})")


async def run(rounds: int) -> None:
    with cluster() as pg, tempfile.TemporaryDirectory() as directory:
        if isinstance(pg, str):
            raise SystemExit(f"benchmarks/attach.py: {pg}")
        (Path(directory) / "ticker_app.py").write_text(TICKER)
        async with balancer(Path(directory), pg.new_database(), app="ticker_app:app") as lb:
            await measure(lb, rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=20, help="attaches per case (default 20)")
    args = parser.parse_args()
    print(f"{sys.implementation.name} {sys.version.split()[0]}, load {os.getloadavg()[0]:.2f}")
    asyncio.run(run(args.rounds))


if __name__ == "__main__":
    main()
