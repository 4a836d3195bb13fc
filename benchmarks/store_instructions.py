"""What recording costs a streamed update, in instructions (valgrind's callgrind), with and without a store.

    python benchmarks/store_instructions.py            # typed and dict updates; none, memory, SQLite
    python benchmarks/store_instructions.py --quick    # fewer updates, to check the script runs

Instruction counts move much less with the load of a shared machine than times do, but they do
move: how many frames the transport writes at once depends on when the reader wakes, so one run
can be ~10 % off another. Each figure is the median over ``--repeat`` runs of the difference
between a turn of N and of 2N updates (``benchmarks/store.py``'s streaming agent and in-process
client, both counted), divided by N: start-up, imports and the session's set-up cancel out. Needs
``valgrind`` (Debian's package); several minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _callgrind import collected

HERE = Path(__file__).resolve().parent


async def one_turn(kind: str, typed: bool, updates: int) -> None:
    """The measured process: a warm-up turn, then one turn of ``updates`` (recorded unless ``none``)."""
    sys.path.insert(0, str(HERE))
    import store as bench  # benchmarks/store.py

    from acpio.store import open_store

    await bench.stream_seconds(None, 200, typed)  # imports, caches, the first connection
    if kind == "none":
        await bench.stream_seconds(None, updates, typed)
        return
    url = "memory:" if kind == "memory" else f"sqlite:///{tempfile.mkdtemp()}/sessions.db"
    async with open_store(url) as store:
        await bench.stream_seconds(store, updates, typed)


def instructions(kind: str, typed: bool, updates: int) -> int:
    """The instructions of a whole run of this script in ``--turn`` mode, under callgrind."""
    argv = [sys.executable, __file__, "--turn", kind, "typed" if typed else "dict", str(updates)]
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
    parser.add_argument("--turn", nargs=3, metavar=("KIND", "TYPED", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.turn:
        kind, typed, updates = args.turn
        asyncio.run(one_turn(kind, typed == "typed", int(updates)))
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("store_instructions.py needs valgrind (Debian: apt-get install valgrind)")
    n = 200 if args.quick else 2000
    for typed in (True, False):
        base = 0.0
        for kind in ("none", "memory", "sqlite"):
            extra = [
                instructions(kind, typed, 2 * n) - instructions(kind, typed, n) for _ in range(args.repeat)
            ]
            per_update = statistics.median(extra) / n
            base = base or per_update
            label = "typed" if typed else "dict"
            change = per_update / base - 1
            print(f"{label:5} updates, {kind:6}: {per_update:9,.0f} instructions/update, {change:+.0%}")


if __name__ == "__main__":
    main()
