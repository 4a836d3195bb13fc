"""Profile acpio with py-spy, client and agent side: where the time per message goes.

    .venv/bin/python -m pip install py-spy        # once: a sampling profiler, not a dependency of acpio
    .venv/bin/python benchmarks/profile.py [--scenario stream|roundtrip] [--count N]
                                           [--client acpio|bare] [--agent acpio|bare] [--top 20] [--rate 1000]

It runs the benchmark client against the benchmark agent (``benchmarks/peers/``, acpio on both sides by
default; ``bare`` swaps one side for the asyncio+orjson floor, so the other side has a core of its own)
under ``py-spy record --subprocesses``, for one scenario: ``stream`` (``--count`` updates in one prompt,
100,000 by default) or ``roundtrip`` (``--count`` sequential ``session/set_mode`` requests, 20,000 by
default), each after a warm-up of a tenth. It then prints, for each acpio process, the CPU time per
message and the functions with the most samples: *self* (the function's own code, including the C
functions it calls, such as pydantic's validator or orjson) and *inclusive* (with its callees). Samples
taken while importing or waiting in epoll are left out. The raw stacks are kept in
``benchmarks/results/profile-<timestamp>.txt`` (collapsed format: flamegraph.pl or speedscope read it).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEERS = HERE / "peers"
RESULTS = HERE / "results"

#: Leaf functions that are a thread blocked in a system call, which py-spy does not always see as idle.
WAITING = ("EpollSelector.select (", "ThreadedChildWatcher._do_waitpid (")
#: The files whose functions are listed by inclusive time (the rest is the event loop and the runtime).
OWN_CODE = ("(acpio/", "_agent.py)", "_client.py)")
_PROCESS = re.compile(r'^process \d+:".*"$')


def main() -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/profile.py", description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", choices=("stream", "roundtrip"), default="stream")
    parser.add_argument("--count", type=int, help="updates (default 100000) or round trips (default 20000)")
    parser.add_argument("--client", choices=("acpio", "bare"), default="acpio")
    parser.add_argument("--agent", choices=("acpio", "bare"), default="acpio")
    parser.add_argument("--top", type=int, default=20, help="functions listed per table")
    parser.add_argument("--rate", type=int, default=1000, help="samples per second")
    args = parser.parse_args()
    spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if spy is None:
        print(
            "benchmarks/profile.py: error: py-spy is not installed; install it with "
            f"`{sys.executable} -m pip install py-spy`",
            file=sys.stderr,
        )
        return 2
    if "acpio" not in (args.client, args.agent):
        parser.error("at least one side must be acpio: there is nothing of acpio to profile otherwise")
    RESULTS.mkdir(exist_ok=True)
    stacks = RESULTS / f"profile-{datetime.datetime.now():%Y%m%d-%H%M%S}.txt"
    agent = [sys.executable, str(PEERS / f"{args.agent}_agent.py")]
    count = args.count or (100_000 if args.scenario == "stream" else 20_000)
    warmup = max(count // 10, 100)
    option, figure, unit = {
        "stream": ("updates", "msgs_per_s", "msgs/s"),
        "roundtrip": ("requests", "req_per_s", "req/s"),
    }[args.scenario]
    command = [
        *(
            spy,
            "record",
            "--subprocesses",
            "--rate",
            str(args.rate),
            "--format",
            "raw",
            "--output",
            str(stacks),
        ),
        *("--", sys.executable, str(PEERS / f"{args.client}_client.py"), "--agent", json.dumps(agent)),
        *(f"--{option}", str(count), f"--warmup-{option}", str(warmup)),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    reports = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not reports or not stacks.exists():
        print(
            f"benchmarks/profile.py: error: the profiled run failed:\n{done.stdout}{done.stderr}",
            file=sys.stderr,
        )
        return 1
    figures = json.loads(reports[-1])
    print(f"{args.client} client -> {args.agent} agent: {figures[figure]:,.0f} {unit} under py-spy")
    print(f"{count:,} {option} (+{warmup:,} warm-up); raw stacks: {stacks}\n")
    processes = split_by_process(stacks.read_text().splitlines())
    for side, implementation in (("agent", args.agent), ("client", args.client)):
        if implementation == "acpio":
            print(summary(f"acpio {side}", processes[side], count + warmup, args.rate, args.top))
    return 0


def split_by_process(lines: Iterable[str]) -> dict[str, list[tuple[list[str], int]]]:
    """The samples of the client (py-spy's child) and of its agent (the client's child): (frames, count)."""
    processes: dict[str, list[tuple[list[str], int]]] = collections.defaultdict(list)
    for line in lines:
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        depth = 0
        while frames and _PROCESS.match(frames[0]):
            depth += 1
            frames = frames[1:]
        processes["client" if depth <= 1 else "agent"].append((frames, int(count)))
    return processes


def _name(frame: str) -> str:
    function, _, where = frame.partition(" (")
    path = where.rstrip(")").rpartition(":")[0]
    short = path.split("site-packages/")[-1].split("/src/")[-1].split("/benchmarks/")[-1]
    return f"{function} ({short})"


def summary(title: str, samples: list[tuple[list[str], int]], messages: int, rate: int, top: int) -> str:
    """Per-message CPU time and the top functions of one process, imports and waiting left out."""
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = waiting = 0
    for frames, count in samples:
        if not frames or any("importlib._bootstrap" in frame for frame in frames):
            continue
        names = [_name(frame) for frame in frames]
        if names[-1].startswith(WAITING):
            waiting += count
            continue
        total += count
        own[names[-1]] += count
        for name in set(names):
            if any(part in name for part in OWN_CODE):
                inclusive[name] += count
    if not total:
        return f"{title}: no samples"
    per_message = total / rate / messages * 1e6
    lines = [
        f"{title}: {total:,} samples, {per_message:.1f} us of CPU per message, all of its work "
        f"(not counted: {waiting:,} samples waiting in epoll or waitpid)"
    ]
    for label, counter in (("self", own), ("inclusive, acpio and the peer only", inclusive)):
        lines.append(f"  top {top}, {label}:")
        for name, count in counter.most_common(top):
            lines.append(f"    {100 * count / total:5.1f}%  {count / rate / messages * 1e6:5.2f} us  {name}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
