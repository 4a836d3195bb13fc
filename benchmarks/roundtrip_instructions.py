"""What one sequential round trip costs each side, in instructions (callgrind): the figure load does not move.

    python benchmarks/roundtrip_instructions.py                  # both sides, asyncio and uvloop
    python benchmarks/roundtrip_instructions.py --loop asyncio   # one event loop
    python benchmarks/roundtrip_instructions.py --quick          # fewer round trips, to check it runs
    python benchmarks/roundtrip_instructions.py --loop asyncio --pair bare-bare --pair acpio-bare
                                                                 # the floor, and each side against it

The benchmark client (typed ``session/set_mode`` requests, one in flight, as ``run.py``'s ``roundtrip``
scenario sends them) spawns the benchmark agent (``peers/acpio_agent.py``) over real pipes; one of the
two runs under ``valgrind --tool=callgrind``. ``--pair CLIENT-AGENT`` swaps either end for the floor
(``bare``: ``peers/bare_client.py``'s loop, ``peers/bare_agent.py``, plain asyncio and orjson), to tell
how far each acpio side is from it (the bare pair runs on asyncio only). The figure is the median over
``--repeat`` runs of the difference between a run of ``2N`` round trips and one of ``N``, divided by
``N``: start-up, imports and the session's set-up cancel out. Run it with ``PYTHONPATH`` on another
checkout's ``src`` to compare two versions of acpio. Needs ``valgrind``; a few minutes.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PEERS = Path(__file__).parent / "peers"
AGENTS = {"asyncio": PEERS / "acpio_agent.py", "uvloop": PEERS / "acpio_uvloop_agent.py"}
BARE_AGENT = PEERS / "bare_agent.py"
PAIRS = ("acpio-acpio", "acpio-bare", "bare-acpio", "bare-bare")


def client_run(loop: str, round_trips: int, agent: list[str]) -> None:
    """The measured client: ``initialize``, ``session/new``, then ``round_trips`` ``session/set_mode``."""
    import acpio
    from acpio import Client
    from acpio import schema as acp
    from acpio.jsonrpc import Connection
    from acpio.running import EVENT_LOOP_VARIABLE
    from acpio.transports import AcpAgent

    os.environ[EVENT_LOOP_VARIABLE] = loop

    async def main(cx: Connection) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        session = await cx.send_request(acp.NewSessionRequest(cwd="/bench", mcp_servers=[]))
        for _ in range(round_trips):
            await cx.send_request(acp.SetSessionModeRequest(session_id=session.session_id, mode_id="bench"))

    # A long grace: the agent under callgrind exits on its own at the end of its input, never killed
    # before its counts are written.
    acpio.run(Client.builder(name="bench-client").connect_with(AcpAgent(agent, grace_period=300), main))


def bare_client_run(round_trips: int, agent: list[str]) -> None:
    """The floor's client (``peers/bare_client.py``'s ``Peer``) making the same requests, untimed."""
    import asyncio

    sys.path.insert(0, str(PEERS))
    from bare_client import Peer

    async def main() -> None:
        peer = await Peer.spawn(agent)
        try:
            await peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            session = await peer.request("session/new", {"cwd": "/bench", "mcpServers": []})
            params = {"sessionId": session["sessionId"], "modeId": "bench"}
            for _ in range(round_trips):
                await peer.request("session/set_mode", params)
        finally:
            await peer.close()

    asyncio.run(main())


def instructions(side: str, loop: str, round_trips: int, pair: str = "acpio-acpio") -> int:
    """Instructions of one whole run of ``side`` (``client`` or ``agent``) making ``round_trips``."""
    client_kind, agent_kind = pair.split("-")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        valgrind = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        agent = [sys.executable, str(AGENTS[loop] if agent_kind == "acpio" else BARE_AGENT)]
        run_as = loop if client_kind == "acpio" else "bare"
        client = [sys.executable, __file__, "--client", run_as, str(round_trips), "--", *agent]
        if side == "client":
            command = [*valgrind, *client]
        else:
            client[client.index("--") + 1 :] = [*valgrind, *agent]
            command = client
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        if found is None:
            raise RuntimeError(f"callgrind wrote no total to {out}")
        return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="200 and 400 round trips instead of 1,000 and 2,000"
    )
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is shown)")
    parser.add_argument(
        "--loop", choices=sorted(AGENTS), action="append", help="the event loop(s) to measure"
    )
    parser.add_argument("--side", choices=["client", "agent"], action="append", help="the side(s) to measure")
    parser.add_argument(
        "--pair", choices=PAIRS, action="append", help="client-agent, either end acpio or the floor (bare)"
    )
    parser.add_argument("--client", nargs=2, metavar=("LOOP", "N"), help=argparse.SUPPRESS)
    args, agent = parser.parse_known_args()
    if args.client:
        loop, round_trips = args.client
        agent = agent[1:] if agent[:1] == ["--"] else agent
        if loop == "bare":
            bare_client_run(int(round_trips), agent)
        else:
            client_run(loop, int(round_trips), agent)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("roundtrip_instructions.py needs valgrind (Debian: apt-get install valgrind)")
    n = 200 if args.quick else 1000
    for pair in args.pair or ["acpio-acpio"]:
        for loop in ["asyncio"] if pair == "bare-bare" else args.loop or ["asyncio", "uvloop"]:
            for side in args.side or ["client", "agent"]:
                extra = [
                    instructions(side, loop, 2 * n, pair) - instructions(side, loop, n, pair)
                    for _ in range(args.repeat)
                ]
                label = f"{pair:11} {loop:8} {side:7}"
                print(f"{label}: {statistics.median(extra) / n:9,.0f} instructions/round trip", flush=True)


if __name__ == "__main__":
    main()
