"""The benchmark driver (``benchmarks/run.py``) still runs: a quick acpio-only run prints its table and
writes its JSON. Timing is not checked, only that every figure is measured and reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "benchmarks" / "run.py"

FIGURES = {
    "req_per_s": "round trips (req/s)",
    "p50_us": "round trip p50 (us)",
    "p99_us": "round trip p99 (us)",
    "msgs_per_s": "streaming (msgs/s)",
    "spawn_ms": "spawn -> initialize (ms)",
    "idle_rss_mb": "agent idle RSS (MB)",
    "peak_rss_mb": "agent peak RSS (MB)",
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


def test_a_quick_acpio_run_prints_one_table_and_writes_the_json(tmp_path: Path) -> None:
    output = tmp_path / "results.json"
    done = run("--quick", "--impls", "acpio", "--output", str(output))
    assert done.returncode == 0, done.stderr

    lines = done.stdout.splitlines()
    header = lines[0].split("  ")
    assert [cell.strip() for cell in header if cell.strip()] == [
        "figure",
        "client -> agent",
        "median",
        "vs official",
        "vs TS",
        "vs floor",
        "targets (acpio -> acpio)",
    ]
    rows = [line for line in lines[2:] if "acpio -> acpio" in line]
    assert [row.split(",")[0] for row in rows] == list(FIGURES.values())
    # No other pair ran, so there is nothing to compare with: the targets against the TypeScript SDK and
    # the floor cannot be judged, and say so; peak RSS is judged against acpio's own idle RSS.
    assert all(" - " in row for row in rows)
    assert ">= 1.2x ts -> ts: not measured; >= 0.95x bare -> bare: not measured" in rows[0]
    assert "<= 0.6x ts -> ts: not measured" in rows[4]
    assert "<= 1.4x bare -> bare: not measured" in rows[5]
    assert f"all runs: {output}" in done.stdout

    document = json.loads(output.read_text())
    [result] = document["results"]
    assert (result["client"], result["agent"]) == ("acpio", "acpio")
    assert result["errors"] == []
    assert set(result["medians"]) == set(FIGURES)
    assert all(value > 0 for value in result["medians"].values())
    peak, idle = result["medians"]["peak_rss_mb"], result["medians"]["idle_rss_mb"]
    verdict = "met" if peak <= 1.2 * idle else "missed"
    assert f"<= 1.2x its idle RSS: {verdict} ({peak / idle:.2f}x)" in rows[6]
    assert len(result["spawn_ms_samples"]) == 2
    assert document["settings"]["repeat"] == 1
    assert document["settings"]["scenarios"] == ["roundtrip", "stream", "spawn"]


def test_only_the_chosen_scenario_runs(tmp_path: Path) -> None:
    output = tmp_path / "results.json"
    done = run("--quick", "--impls", "acpio", "--scenarios", "spawn", "--output", str(output))
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines()[2:] if "acpio -> acpio" in line]
    assert [row.split(",")[0] for row in rows] == ["spawn -> initialize (ms)"]
    [result] = json.loads(output.read_text())["results"]
    assert set(result["medians"]) == {"spawn_ms"}


def test_a_mistake_on_the_command_line_is_one_line_not_a_traceback() -> None:
    done = run("--pairs", "acpio:rust")
    assert done.returncode == 2
    assert "unknown implementation rust: choose from acpio, acpio_uvloop, official, ts, bare" in done.stderr
    assert "Traceback" not in done.stderr


def test_scale_slow_reader_keeps_the_agents_memory_near_idle(tmp_path: Path) -> None:
    # benchmarks/scale.py's slow-reader point: real agent process, a client reading 8 KiB a millisecond.
    output = tmp_path / "scale.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "scale.py"),
            "--quick",
            "--scenarios",
            "slow",
            "--output",
            str(output),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "slow reader" in done.stdout
    [result] = json.loads(output.read_text())["results"]
    assert result["errors"] == []
    medians = result["medians"]
    # 20,000 updates (about 3 MB of JSON) sent to a reader that lags: held back by cx.drain()
    assert medians["agent_peak_mb"] <= 1.2 * medians["agent_idle_mb"], medians


def test_scale_refuses_an_unknown_scenario_in_one_line() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "scale.py"), "--scenarios", "size,width"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 2
    assert "unknown scenario width: choose from size, sessions, chain, slow" in done.stderr
    assert "Traceback" not in done.stderr
