"""How acpio's cost grows: message size, sessions per connection, proxy chain length; a slow reader.

    .venv/bin/python benchmarks/scale.py [--quick] [--repeat 3] [--scenarios size,sessions,chain,slow]
                                         [--plot] [--output FILE]

acpio only, always real processes over stdio pipes: an acpio client (``Client.builder()``) spawns
``peers/acpio_agent.py``, directly or behind ``acpio conductor`` with pass-through proxies
(``peers/acpio_proxy.py``). Each point runs in a fresh client process (this script with ``--worker``), so
that its peak memory is its own. The scenarios:

* ``size``: updates whose text is 1 KB ... 50 MB, each built as a typed object and received by a typed
  handler: time per message (linear in the size: time per MB stays flat) and each side's peak memory
  above its idle memory, as a multiple of the message size;
* ``sessions``: 1 ... 10,000 sessions on one connection, each opened with ``start_session()`` (one
  dynamic handler per session), all streaming at once in prompts of 20 updates (so that a prompt's
  own round trip weighs the same at every point), 20,000 updates in all (200,000 for 10,000
  sessions): updates per second (flat: no per-message cost that grows with the sessions or the
  handlers);
* ``chain``: 0 ... 5 pass-through proxies in a conductor between the client and the agent, and one
  proxy with ``--trace`` on: updates per second (direct is the agent without a conductor);
* ``slow``: 100,000 updates to a client that reads its pipe slowly (8 KiB every millisecond): the
  agent's peak RSS against its idle RSS, held by ``await cx.drain()``.

The table goes to stdout, the figures and the load to ``results/scale-<timestamp>.json``; ``--plot``
draws them into PNG files beside it (matplotlib: ``pip install -e '.[bench]'``). Medians of
``--repeat`` runs, points interleaved within each repetition.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from run import compile_acpio  # benchmarks/run.py, beside this script

from acpio import Client, SessionConnection
from acpio import schema as acp
from acpio.jsonrpc import Connection
from acpio.transports import AcpAgent

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PEERS = HERE / "peers"
RESULTS = HERE / "results"
SCENARIOS = ("size", "sessions", "chain", "slow")

#: Message sizes (text bytes per update), their update counts in a normal and a quick run.
SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000, 50_000_000)
QUICK_SIZES = (1_000, 100_000, 10_000_000)
#: Bytes streamed per size point (at least 3 updates, at most 5,000).
SIZE_VOLUME = 100_000_000
SESSION_COUNTS = (1, 10, 100, 1_000, 10_000)
#: The fewest updates each session streams.
SESSION_SHARE = 20
QUICK_SESSION_COUNTS = (1, 100, 1_000)
CHAIN_LENGTHS = (0, 1, 2, 3, 4, 5)
QUICK_CHAIN_LENGTHS = (0, 1, 2)
#: How the slow reader reads: this many bytes, then a pause of SLOW_PAUSE seconds.
SLOW_READ = 8 * 1024
SLOW_PAUSE = 0.001


def agent_command(proxies: int | None, trace: Path | None = None) -> list[str]:
    """The agent alone (``proxies=None``), or behind a conductor with ``proxies`` pass-through proxies."""
    python = sys.executable
    agent = [python, str(PEERS / "acpio_agent.py")]
    if proxies is None:
        return agent
    conductor = [python, "-m", "acpio", "conductor"]
    if trace is not None:
        conductor += ["--trace", str(trace)]
    proxy = f"{python} {PEERS / 'acpio_proxy.py'}"
    return [*conductor, "agent", *([proxy] * proxies), " ".join(agent)]


def memory_mb(pid: int | str, field: str) -> float:
    """``VmRSS`` or ``VmHWM`` of process ``pid`` (``"self"``) in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return int(value.split()[0]) * 1024 / 1e6
    raise RuntimeError(f"/proc/{pid}/status has no {field} line")


def tree_memory_mb(pid: int, field: str) -> float:
    """``field`` summed over ``pid`` and its descendants (a conductor and its components)."""
    total = 0.0
    pending = [pid]
    while pending:
        current = pending.pop()
        with contextlib.suppress(OSError, RuntimeError):
            total += memory_mb(current, field)
        with contextlib.suppress(OSError):
            for task in Path(f"/proc/{current}/task").iterdir():
                children = (task / "children").read_text().split()
                pending.extend(int(child) for child in children)
    return total


# --- one point, in a fresh process ------------------------------------------------------------------


async def stream_point(point: dict[str, Any]) -> dict[str, float]:
    """Stream ``updates`` updates of ``size`` bytes over ``sessions`` sessions through ``proxies`` proxies."""
    sessions, updates, size = point["sessions"], point["updates"], point["size"]
    trace = Path(point["trace"]) if point.get("trace") else None
    agent = AcpAgent(agent_command(point["proxies"], trace))
    received = 0
    app = Client.builder(name="scale-client")

    async def on_update(note: acp.SessionNotification, cx: Connection) -> None:
        nonlocal received
        if isinstance(note.update, acp.AgentMessageChunk):
            received += 1

    session_builder = sessions > 1 or point.get("session_builder", False)
    if not session_builder:  # a builder handler would take the updates before the sessions' handlers
        app.on_notification(on_update)

    async def typed(cx: SessionConnection) -> float:
        # One session, a typed handler: what the size and chain points measure.
        session = await cx.send_request(acp.NewSessionRequest(cwd=str(ROOT), mcp_servers=[]))
        # Warm-up with small updates: the idle memory then holds no large message yet.
        prompt = acp.TextContent(text=f"stream {min(max(updates // 10, 100), 1_000)}")
        await cx.send_request(acp.PromptRequest(session_id=session.session_id, prompt=[prompt]))
        figures["client_idle_mb"] = memory_mb("self", "VmRSS")
        figures["agent_idle_mb"] = tree_memory_mb(pid, "VmRSS")
        nonlocal received
        received = 0
        prompt = acp.TextContent(text=f"stream {updates} {size}")
        start = time.perf_counter()
        await cx.send_request(acp.PromptRequest(session_id=session.session_id, prompt=[prompt]))
        elapsed = time.perf_counter() - start
        if received != updates:
            raise RuntimeError(f"received {received} updates, expected {updates}")
        return elapsed

    async def many(cx: SessionConnection) -> float:
        # Sessions opened with start_session(): one dynamic handler each, reading its own messages.
        async with contextlib.AsyncExitStack() as stack:
            opened = [
                await stack.enter_async_context(cx.build_session(ROOT).start_session())
                for _ in range(sessions)
            ]
            figures["client_idle_mb"] = memory_mb("self", "VmRSS")
            figures["agent_idle_mb"] = tree_memory_mb(pid, "VmRSS")
            # Every session streams prompts of SESSION_SHARE updates: the same prompt overhead per
            # update at every point, whatever the number of sessions.
            rounds = max(1, updates // (sessions * SESSION_SHARE))

            async def turn(session: Any) -> int:
                count = 0
                for _ in range(rounds):
                    session.send_prompt(f"stream {SESSION_SHARE}")
                    count += sum([1 async for _ in session])
                return count

            start = time.perf_counter()
            counts = await asyncio.gather(*(turn(session) for session in opened))
            elapsed = time.perf_counter() - start
        if sum(counts) != rounds * SESSION_SHARE * sessions:
            raise RuntimeError(
                f"received {sum(counts)} updates, expected {rounds * SESSION_SHARE * sessions}"
            )
        return elapsed

    figures: dict[str, float] = {}
    pid = 0

    async def main(cx: SessionConnection) -> float:
        nonlocal pid
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        assert agent.pid is not None
        pid = agent.pid
        elapsed = await (many(cx) if session_builder else typed(cx))
        figures["agent_peak_mb"] = tree_memory_mb(pid, "VmHWM")
        return elapsed

    elapsed = await app.connect_with(agent, main)
    count = (
        updates
        if not session_builder
        else max(1, updates // (sessions * SESSION_SHARE)) * SESSION_SHARE * sessions
    )
    figures.update(
        seconds=elapsed,
        msgs_per_s=count / elapsed,
        ms_per_msg=elapsed / count * 1e3,
        client_peak_mb=memory_mb("self", "VmHWM"),
    )
    return figures


def slow_point(point: dict[str, Any]) -> dict[str, float]:
    """The agent streams ``updates`` to a reader that takes SLOW_READ bytes per SLOW_PAUSE."""
    agent = subprocess.Popen(
        agent_command(None), stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
    )
    assert agent.stdin is not None
    assert agent.stdout is not None
    try:

        def send(message_id: int, method: str, params: dict[str, Any]) -> None:
            line = {"jsonrpc": "2.0", "id": message_id, "method": method, "params": params}
            agent.stdin.write(json.dumps(line).encode() + b"\n")  # type: ignore[union-attr]
            agent.stdin.flush()  # type: ignore[union-attr]

        send(1, "initialize", {"protocolVersion": 1})
        agent.stdout.readline()
        send(2, "session/new", {"cwd": str(ROOT), "mcpServers": []})
        session_id = json.loads(agent.stdout.readline())["result"]["sessionId"]
        time.sleep(0.2)
        idle = memory_mb(agent.pid, "VmRSS")
        text = {"type": "text", "text": f"stream {point['updates']}"}
        send(3, "session/prompt", {"sessionId": session_id, "prompt": [text]})
        start = time.perf_counter()
        tail = b""
        read = os.read
        fd = agent.stdout.fileno()
        while b'"id":3' not in tail:
            chunk = read(fd, SLOW_READ)
            if not chunk:
                raise RuntimeError("the agent ended its output before answering the prompt")
            tail = (tail + chunk)[-200:]
            time.sleep(SLOW_PAUSE)
        elapsed = time.perf_counter() - start
        return {"agent_idle_mb": idle, "agent_peak_mb": memory_mb(agent.pid, "VmHWM"), "seconds": elapsed}
    finally:
        agent.kill()
        agent.wait()


def worker(point: dict[str, Any]) -> dict[str, float]:
    """Measure one point (in this fresh process)."""
    if point["kind"] == "slow":
        return slow_point(point)
    return asyncio.run(stream_point(point))


# --- the driver -------------------------------------------------------------------------------------


def points(scenario: str, quick: bool, tmp: Path) -> list[dict[str, Any]]:
    """Every point of ``scenario``."""
    if scenario == "size":
        return [
            {
                "scenario": "size",
                "kind": "stream",
                "x": size,
                "size": size,
                "updates": max(3, min(5_000, SIZE_VOLUME // (20 if quick else 1) // size)),
                "sessions": 1,
                "proxies": None,
            }
            for size in (QUICK_SIZES if quick else SIZES)
        ]
    if scenario == "sessions":
        total = 5_000 if quick else 20_000
        return [
            {
                "scenario": "sessions",
                "kind": "stream",
                "x": count,
                "size": 0,
                "updates": max(total, SESSION_SHARE * count),
                "sessions": count,
                "session_builder": True,
                "proxies": None,
            }
            for count in (QUICK_SESSION_COUNTS if quick else SESSION_COUNTS)
        ]
    if scenario == "chain":
        updates = 5_000 if quick else 30_000
        chain: list[dict[str, Any]] = [
            {"scenario": "chain", "kind": "stream", "x": "direct", "proxies": None},
            *({"scenario": "chain", "kind": "stream", "x": n, "proxies": n} for n in QUICK_CHAIN_LENGTHS),
        ]
        if not quick:
            chain += [
                {"scenario": "chain", "kind": "stream", "x": n, "proxies": n} for n in CHAIN_LENGTHS[3:]
            ]
        chain.append(
            {
                "scenario": "chain",
                "kind": "stream",
                "x": "1 traced",
                "proxies": 1,
                "trace": str(tmp / "trace.jsons"),
            }
        )
        for point in chain:
            point.update(size=0, updates=updates, sessions=1)
        return chain
    return [{"scenario": "slow", "kind": "slow", "x": "slow reader", "updates": 20_000 if quick else 100_000}]


def run_point(point: dict[str, Any], timeout: float) -> dict[str, float]:
    """Run one point in a fresh process; its figures."""
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(point)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-4:])
        raise RuntimeError(f"exit status {done.returncode}: {tail}")
    figures: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def medians(runs: list[dict[str, float]]) -> dict[str, float]:
    """The median of every figure over the runs."""
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


def table(results: list[dict[str, Any]]) -> str:
    """One table per scenario, with what each point means next to it."""
    out: list[str] = []
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        by_scenario.setdefault(result["scenario"], []).append(result)
    for scenario, rows in by_scenario.items():
        ok = [row for row in rows if row.get("medians")]
        if scenario == "size":
            out.append(
                "message size     updates  ms/message  ms/MB   client peak-idle  agent peak-idle (x message)"
            )
            for row in ok:
                m, size = row["medians"], row["x"]
                out.append(
                    f"{_bytes(size):>12}  {row['updates']:>10,}  {m['ms_per_msg']:>10.3f}  "
                    f"{m['ms_per_msg'] / (size / 1e6):>6.2f}  {_times(m, 'client', size):>16}  "
                    f"{_times(m, 'agent', size):>15}"
                )
        elif scenario == "sessions":
            first = ok[0]["medians"]["msgs_per_s"] if ok else 0
            out.append("sessions   updates/s  vs 1 session  client idle MB")
            for row in ok:
                m = row["medians"]
                out.append(
                    f"{row['x']:>8,}  {m['msgs_per_s']:>10,.0f}  {m['msgs_per_s'] / first:>11.2f}x  "
                    f"{m['client_idle_mb']:>14.1f}"
                )
        elif scenario == "chain":
            direct = next((row["medians"]["msgs_per_s"] for row in ok if row["x"] == "direct"), 0)
            out.append("proxies      updates/s  vs direct  processes' peak MB")
            for row in ok:
                m = row["medians"]
                out.append(
                    f"{row['x']!s:>8}  {m['msgs_per_s']:>12,.0f}  {m['msgs_per_s'] / direct:>8.2f}x  "
                    f"{m['agent_peak_mb']:>18.1f}"
                )
        else:
            out.append("slow reader            agent idle MB  agent peak MB  peak / idle  seconds")
            for row in ok:
                m = row["medians"]
                out.append(
                    f"{row['updates']:>9,} updates  {m['agent_idle_mb']:>16.1f}  "
                    f"{m['agent_peak_mb']:>13.1f}  "
                    f"{m['agent_peak_mb'] / m['agent_idle_mb']:>10.2f}x  {m['seconds']:>7.1f}"
                )
        for row in rows:
            if row.get("errors"):
                out.append(f"{row['x']}: FAILED: {row['errors'][-1]}")
        out.append("")
    return "\n".join(out)


def _bytes(size: int) -> str:
    return f"{size / 1e6:g} MB" if size >= 1_000_000 else f"{size / 1e3:g} KB"


def _times(m: dict[str, float], side: str, size: int) -> str:
    grown = m[f"{side}_peak_mb"] - m[f"{side}_idle_mb"]
    return f"{grown:.1f} MB ({max(grown, 0) * 1e6 / size:.1f}x)"


def plot(results: list[dict[str, Any]], stem: Path) -> list[Path]:
    """Draw each scenario's curve into ``<stem>-<scenario>.png``; the files written."""
    try:
        import matplotlib
    except ImportError as error:
        raise SystemExit(
            "benchmarks/scale.py: error: --plot needs matplotlib: "
            ".venv/bin/python -m pip install -e '.[bench]'"
        ) from error
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    by_scenario: dict[str, list[dict[str, Any]]] = {}
    for result in results:
        if result.get("medians"):
            by_scenario.setdefault(result["scenario"], []).append(result)
    for scenario, rows in by_scenario.items():
        if scenario == "slow":
            continue
        fig, axes = plt.subplots(
            1, 2 if scenario == "size" else 1, figsize=(11 if scenario == "size" else 6, 4)
        )
        if scenario == "size":
            left, right = axes
            xs = [row["x"] for row in rows]
            ms = [row["medians"]["ms_per_msg"] for row in rows]
            left.loglog(xs, ms, "o-", label="acpio -> acpio")
            linear = [ms[-1] * x / xs[-1] for x in xs]
            left.loglog(xs, linear, "--", color="grey", label="linear (through the largest)")
            left.set(xlabel="message size (bytes)", ylabel="ms per message", title="time per message")
            left.legend()
            # Below 1 MB a message is lost in the noise of the processes' own memory.
            big = [row for row in rows if row["x"] >= 1_000_000]
            for side in ("client", "agent"):
                grown = [
                    max(row["medians"][f"{side}_peak_mb"] - row["medians"][f"{side}_idle_mb"], 0)
                    * 1e6
                    / row["x"]
                    for row in big
                ]
                right.semilogx(
                    [row["x"] for row in big], grown, "o-", label=f"{side} (peak - idle) / message"
                )
            right.axhline(2, color="grey", linestyle="--", label="2x the message")
            right.set(
                xlabel="message size (bytes)",
                ylabel="x message size",
                title="memory per message (1 MB and up)",
            )
            right.legend()
        elif scenario == "sessions":
            xs = [row["x"] for row in rows]
            axes.semilogx(xs, [row["medians"]["msgs_per_s"] for row in rows], "o-")
            axes.set_ylim(bottom=0)
            axes.set(xlabel="sessions on one connection", ylabel="updates/s", title="concurrent sessions")
        else:
            labels = [str(row["x"]) for row in rows]
            axes.bar(labels, [row["medians"]["msgs_per_s"] for row in rows])
            axes.set(xlabel="proxies in the conductor", ylabel="updates/s", title="proxy chain length")
        fig.tight_layout()
        path = Path(f"{stem}-{scenario}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scenarios; print the tables; write the JSON (and the charts)."""
    parser = argparse.ArgumentParser(prog="benchmarks/scale.py", description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"from {', '.join(SCENARIOS)}")
    parser.add_argument("--quick", action="store_true", help="fewer, smaller points, one repetition")
    parser.add_argument("--repeat", type=int, help="repetitions of every point (default 3; --quick: 1)")
    parser.add_argument("--plot", action="store_true", help="write PNG charts beside the JSON (matplotlib)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds one point may take")
    parser.add_argument("--output", type=Path, help="the JSON file (default: results/scale-<timestamp>.json)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    scenarios = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = set(scenarios) - set(SCENARIOS)
    if unknown or not scenarios:
        parser.error(
            f"unknown scenario {', '.join(sorted(unknown)) or repr(args.scenarios)}: "
            f"choose from {', '.join(SCENARIOS)}"
        )
    compile_acpio()
    repeat = args.repeat or (1 if args.quick else 3)
    started = datetime.datetime.now(datetime.UTC)
    load = os.getloadavg()
    output = args.output or RESULTS / f"scale-{started.strftime('%Y%m%d-%H%M%S')}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    with contextlib.ExitStack() as stack:
        import tempfile

        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="acpio-scale-")))
        for scenario in scenarios:
            results.extend({**point, "runs": [], "errors": []} for point in points(scenario, args.quick, tmp))
        for rep in range(1, repeat + 1):
            for result in results:
                point = {k: v for k, v in result.items() if k not in ("runs", "errors")}
                try:
                    figures = run_point(point, args.timeout)
                except (RuntimeError, subprocess.TimeoutExpired) as error:
                    result["errors"].append(f"run {rep}: {error}")
                    print(
                        f"[{rep}/{repeat}] {result['scenario']} {result['x']}: FAILED: {error}",
                        file=sys.stderr,
                    )
                    continue
                result["runs"].append(figures)
                rate = f"{figures['msgs_per_s']:,.0f} msgs/s" if "msgs_per_s" in figures else ""
                print(
                    f"[{rep}/{repeat}] {result['scenario']} {result['x']}: {rate} "
                    f"{figures['seconds']:.2f} s, agent peak {figures['agent_peak_mb']:.1f} MB",
                    file=sys.stderr,
                    flush=True,
                )
    for result in results:
        result["medians"] = medians(result["runs"]) if result["runs"] else None
    document = {
        "started": started.isoformat(timespec="seconds"),
        "command": sys.argv,
        "repeat": repeat,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "loadavg_start": list(load),
            "loadavg_end": list(os.getloadavg()),
        },
        "results": results,
    }
    output.write_text(json.dumps(document, indent=2) + "\n")
    print(table(results))
    print(
        f"medians of {repeat} run{'s' if repeat > 1 else ''}; machine: {os.cpu_count()} CPUs, load average "
        f"{load[0]:.2f} at the start and {os.getloadavg()[0]:.2f} at the end"
    )
    print(f"all runs: {output}")
    if args.plot:
        for path in plot(results, output.with_suffix("")):
            print(f"chart: {path}")
    return 1 if any(result["errors"] for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
