"""What recording costs a streamed update, in instructions (valgrind's callgrind), with and without a store.

    python benchmarks/store_instructions.py            # typed and dict updates; none, memory, SQLite
    python benchmarks/store_instructions.py --quick    # fewer updates, to check the script runs

Each figure is the difference between a turn of N and of 2N updates (``benchmarks/store.py``'s
streaming agent and in-process client, both counted), divided by N: start-up, imports and the
session's set-up cancel out. The agent sends its updates in bursts of 256 without yielding to the
event loop, and yields after each: SQLite commits once a burst (its updates in one transaction),
so the count of commits is fixed, not left to when the reader wakes, and Python's hash seed is
fixed (``PYTHONHASHSEED=0``). SQLite's cost is also given apart: what one commit costs (from turns
of bursts of 16 against bursts of 256) and what an update costs beside the commits. The median of
``--repeat`` runs is shown. Needs ``valgrind`` (Debian's package); several minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _callgrind import collected
from store import BURST

HERE = Path(__file__).resolve().parent


#: The bursts of the turns that tell SQLite's commits from its updates: few updates to a commit.
SMALL_BURST = 16


async def one_turn(kind: str, typed: bool, updates: int, burst: int) -> None:
    """The measured process: a warm-up turn, then one turn of ``updates`` (recorded unless ``none``)."""
    sys.path.insert(0, str(HERE))
    import store as bench  # benchmarks/store.py

    from acpio.store import open_store

    await bench.stream_seconds(None, 200, typed)  # imports, caches, the first connection
    if kind == "none":
        await bench.stream_seconds(None, updates, typed, burst)
        return
    url = "memory:" if kind == "memory" else f"sqlite:///{tempfile.mkdtemp()}/sessions.db"
    async with open_store(url) as store:
        await bench.stream_seconds(store, updates, typed, burst)


def instructions(kind: str, typed: bool, updates: int, burst: int = BURST) -> int:
    """The instructions of a whole run of this script in ``--turn`` mode, under callgrind."""
    argv = [sys.executable, __file__, "--turn", kind, "typed" if typed else "dict", str(updates), str(burst)]
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    return collected(done.stderr)


def per_update(kind: str, typed: bool, n: int, repeat: int) -> float:
    """Instructions an update: a turn of ``2n`` against one of ``n`` (the median of ``repeat``)."""
    extra = [instructions(kind, typed, 2 * n) - instructions(kind, typed, n) for _ in range(repeat)]
    return statistics.median(extra) / n


def per_commit(typed: bool, n: int, repeat: int) -> float:
    """Instructions a SQLite commit: ``n`` updates in bursts of :data:`SMALL_BURST` against :data:`BURST`."""
    extra = [
        instructions("sqlite", typed, n, SMALL_BURST) - instructions("sqlite", typed, n)
        for _ in range(repeat)
    ]
    return statistics.median(extra) / (n // SMALL_BURST - n // BURST)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--quick", action="store_true", help="512 and 1,024 updates instead of 2,048 and 4,096"
    )
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure (the median is shown)")
    parser.add_argument("--turn", nargs=4, metavar=("KIND", "TYPED", "N", "BURST"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.turn:
        kind, typed, updates, burst = args.turn
        asyncio.run(one_turn(kind, typed == "typed", int(updates), int(burst)))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("store_instructions.py needs valgrind (Debian: apt-get install valgrind)")
    n = 2 * BURST if args.quick else 8 * BURST
    for typed in (True, False):
        label = "typed" if typed else "dict"
        base = per_update("none", typed, n, args.repeat)
        print(f"{label:5} updates, none  : {base:9,.0f} instructions/update")
        for kind in ("memory", "sqlite"):
            cost = per_update(kind, typed, n, args.repeat)
            line = f"{label:5} updates, {kind:6}: {cost:9,.0f} instructions/update, {cost / base - 1:+.0%}"
            if kind == "sqlite":
                commit = per_commit(typed, 2 * n, args.repeat)
                line += (
                    f" ({commit:,.0f} a commit of {BURST}, {cost - commit / BURST:,.0f} an update beside it)"
                )
            print(line)


if __name__ == "__main__":
    main()
