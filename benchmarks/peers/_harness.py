"""What the Python benchmark clients share: their command line, the agent's memory, their report.

Every client (``acpio_client.py``, ``official_client.py``, ``bare_client.py``, and ``ts_client.mjs`` in
JavaScript) takes the same arguments and prints the same report, so that ``benchmarks/run.py`` can pair any
client with any agent. This module uses the standard library only: the official SDK's client runs in a
virtualenv of its own, without acpio or orjson.

The command line::

    <client> --agent '["python", "agent.py"]' [--requests N] [--warmup-requests N]
             [--updates N] [--warmup-updates N] [--spawns K] [--cwd DIR]

``--url URL`` instead of ``--agent`` connects to a remote agent over WebSocket or Streamable HTTP
(``benchmarks/remote.py``: acpio's and the TypeScript client; no memory figures, there is no child).

With ``--spawns K`` the client spawns the agent K times and times each spawn up to the ``initialize`` reply.
Otherwise it runs one *session*: spawn, ``initialize``, ``session/new``, the agent's idle memory, then
``--requests`` sequential ``session/set_mode`` round trips, then a ``session/prompt`` asking for ``--updates``
``session/update`` notifications, then the agent's peak memory (each after its warm-up; 0 skips a scenario).

The report is one JSON object on stdout (see :func:`report`): the figures measured, nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any

#: The text of the prompt that asks an agent for ``n`` updates: ``STREAM_PREFIX + str(n)``.
STREAM_PREFIX = "stream "
#: The session mode every round trip asks for (the benchmark agents accept any mode).
MODE_ID = "bench"
#: How long the agent is left alone after ``session/new`` before its idle memory is read, in seconds.
IDLE_SETTLE = 0.2


def parse_args(description: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The client's command line (the same for every implementation, see the module docstring)."""
    parser = argparse.ArgumentParser(description=description)
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--agent", type=_argv, help="the agent's command, as a JSON list")
    target.add_argument(
        "--url", help="a remote agent instead (http:// or ws://; acpio's and the TypeScript client only)"
    )
    parser.add_argument("--requests", type=int, default=0, help="timed session/set_mode round trips")
    parser.add_argument("--warmup-requests", type=int, default=0, help="untimed round trips first")
    parser.add_argument("--updates", type=int, default=0, help="session/update notifications to stream")
    parser.add_argument("--warmup-updates", type=int, default=0, help="updates in an untimed first prompt")
    parser.add_argument("--spawns", type=int, default=0, help="time K spawns to the initialize reply instead")
    parser.add_argument("--cwd", default=str(Path.cwd()), help="the session's working directory")
    return parser.parse_args(argv)


def _argv(text: str) -> list[str]:
    value = json.loads(text)
    if not isinstance(value, list) or not value or not all(isinstance(word, str) for word in value):
        raise argparse.ArgumentTypeError("--agent must be a non-empty JSON list of strings")
    return value


def stream_prompt(updates: int) -> str:
    """The prompt text that asks the benchmark agent for ``updates`` notifications."""
    return f"{STREAM_PREFIX}{updates}"


def memory_mb(pid: int, field: str) -> float:
    """A memory figure of process ``pid`` from ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == field:
            kilobytes = int(value.split()[0])
            return kilobytes * 1024 / 1e6
    raise RuntimeError(f"/proc/{pid}/status has no {field} line")


def round_trip_figures(latencies: list[float], elapsed: float) -> dict[str, float]:
    """Rate and percentiles of sequential round trips (``latencies`` and ``elapsed`` in seconds)."""
    ordered = sorted(latencies)
    return {
        "req_per_s": len(ordered) / elapsed,
        "p50_us": ordered[len(ordered) // 2] * 1e6,
        "p99_us": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1e6,
    }


def check_received(received: int, expected: int) -> None:
    """Fail the run when the client's handler did not see exactly the updates the agent sent."""
    if received != expected:
        raise RuntimeError(
            f"the client's session/update handler counted {received} updates, expected {expected}: "
            "the prompt answered before every update was handled"
        )


def report(figures: dict[str, object]) -> None:
    """Print the figures as one JSON line on stdout (the driver reads only that line)."""
    sys.stdout.write(json.dumps(figures) + "\n")
    sys.stdout.flush()


def main(
    description: str,
    spawn_run: Callable[[list[str], int], Coroutine[Any, Any, dict[str, Any]]],
    session_run: Callable[[list[str], argparse.Namespace], Coroutine[Any, Any, dict[str, Any]]],
    *,
    remote: bool = False,
    run: Callable[[Coroutine[Any, Any, dict[str, Any]]], dict[str, Any]] = asyncio.run,
) -> None:
    """A client's entry point: parse the command line, run spawns or one session, report.

    ``remote``: the client's ``session_run`` honours ``--url`` (it is refused otherwise). ``run``
    runs the main coroutine (acpio's client passes :func:`acpio.run`, which picks the event loop).
    """
    args = parse_args(description)
    if args.url is not None and not remote:
        raise SystemExit(f"{description}: this client does not connect to remote agents (--url)")
    if args.spawns:
        report(run(spawn_run(args.agent, args.spawns)))
    else:
        report(run(session_run(args.agent, args)))
