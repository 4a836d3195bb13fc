"""What one ``turn.say`` and one tool call update of an ``AgentApp`` cost, in instructions (callgrind).

    python benchmarks/app_instructions.py                 # v1 (and v2 when the app serves it)
    python benchmarks/app_instructions.py --protocol 1    # v1 only: compare two versions of acpio
    python benchmarks/app_instructions.py --quick         # fewer updates, to check the script runs

An app whose prompt function says ``N`` chunks, or reports ``N`` updates of one tool call, is
served in-process to a raw-frame client that reads them; the figure is the median over
``--repeat`` runs of the difference between a turn of ``2N`` and one of ``N``, divided by ``N``
(both ends counted; start-up, imports and the session's set-up cancel out). Run it with
``PYTHONPATH`` on another checkout's ``src`` to compare the v1 path before and after a change.
Needs ``valgrind``; a few minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
from typing import Any

from _callgrind import collected

INIT: dict[str, dict[str, Any]] = {
    "1": {"protocolVersion": 1, "clientCapabilities": {}},
    "2": {"protocolVersion": 2, "info": {"name": "bench", "version": "1"}, "capabilities": {}},
}


async def one_turn(protocol: str, verb: str, updates: int) -> None:
    """The measured process: a turn of ``updates`` ``verb`` updates (``say`` or ``tool``), read to its end."""
    from acpio import AgentApp, StopReasonName, Turn
    from acpio.testing import serving

    app = AgentApp("bench") if protocol == "1" else AgentApp("bench", protocols=(2,))  # type: ignore[call-arg]

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        if verb == "say":
            for _ in range(updates):
                await turn.say("chunk")
        else:
            async with turn.tool_call("Work") as call:
                for _ in range(updates):
                    await call.update(text="progress")
        return "end_turn"

    async with serving(app.builder(), timeout=600) as peer:
        await peer.response_to(peer.request("initialize", INIT[protocol]))
        new = await peer.response_to(peer.request("session/new", {"cwd": "/bench", "mcpServers": []}))
        session_id = new["result"]["sessionId"]
        asked = peer.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "go"}]}
        )
        if protocol == "1":
            await peer.response_to(asked)
        else:
            await peer.until(lambda f: f.get("params", {}).get("update", {}).get("state") == "idle")


def instructions(protocol: str, verb: str, updates: int) -> int:
    """The instructions of a whole run of this script in ``--turn`` mode, under callgrind."""
    argv = [sys.executable, __file__, "--turn", protocol, verb, str(updates)]
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        capture_output=True,
        text=True,
        check=True,
    )
    return collected(done.stderr)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="200 and 400 updates instead of 2,000 and 4,000")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (the median is shown)")
    parser.add_argument("--protocol", choices=["1", "2"], action="append", help="the version(s) to measure")
    parser.add_argument("--turn", nargs=3, metavar=("PROTOCOL", "VERB", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.turn:
        protocol, verb, updates = args.turn
        asyncio.run(one_turn(protocol, verb, int(updates)))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("app_instructions.py needs valgrind (Debian: apt-get install valgrind)")
    n = 200 if args.quick else 2000
    for protocol in args.protocol or ["1", "2"]:
        for verb in ("say", "tool"):
            extra = [
                instructions(protocol, verb, 2 * n) - instructions(protocol, verb, n)
                for _ in range(args.repeat)
            ]
            label = "turn.say" if verb == "say" else "call.update"
            print(f"v{protocol} {label:12}: {statistics.median(extra) / n:9,.0f} instructions/update")


if __name__ == "__main__":
    main()
