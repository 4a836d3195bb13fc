"""The benchmark driver (``benchmarks/run.py``) still runs: a quick acpio-only run prints its table, issue
34's targets and the interpreter, and writes its JSON; the AgentApp agent and the pinned round trips run.
Timing is not checked, only that every figure is measured, reported and judged from the run's figures."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "benchmarks" / "run.py"

FIGURES = {
    "req_per_s": "round trips (req/s)",
    "p50_us": "round trip p50 (us)",
    "p99_us": "round trip p99 (us)",
    "pinned_req_per_s": "round trips pinned to one CPU (req/s)",
    "pinned_p50_us": "round trip p50 pinned (us)",
    "msgs_per_s": "streaming (msgs/s)",
    "spawn_ms": "spawn -> initialize (ms)",
    "idle_rss_mb": "agent idle RSS (MB)",
    "peak_rss_mb": "agent peak RSS (MB)",
}
HEADER = ["figure", "client -> agent", "median", "vs official", "vs TS", "vs floor"]


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(RUN), *args], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.split("  ") if cell.strip()]


def table_rows(stdout: str, pair: str) -> list[str]:
    """The main table's rows of ``pair`` (the table ends at the first empty line)."""
    table = stdout.split("\n\n")[0].splitlines()
    return [line for line in table[2:] if pair in line]


def target_row(stdout: str, figure: str) -> list[str]:
    [row] = [line for line in stdout.splitlines() if line.startswith(f"| {figure} |")]
    return [cell.strip() for cell in row.strip("|").split("|")]


@pytest.mark.slow  # 20-40 s on a loaded 2-core machine
def test_a_quick_acpio_run_prints_one_table_and_writes_the_json(tmp_path: Path) -> None:
    output = tmp_path / "results.json"
    done = run("--quick", "--impls", "acpio", "--output", str(output))
    assert done.returncode == 0, done.stderr

    assert cells(done.stdout.splitlines()[0]) == HEADER
    rows = table_rows(done.stdout, "acpio -> acpio")
    assert [row.split(",")[0] for row in rows] == list(FIGURES.values())
    # No other pair ran, so there is nothing to compare with: every ratio is "-".
    assert all(cells(row)[-3:] == ["-", "-", "-"] for row in rows)
    assert f"all runs: {output}" in done.stdout
    # The targets that need another pairing say so; none is judged on acpio -> acpio alone.
    assert target_row(done.stdout, "acpio -> acpio typed streaming")[2:] == [
        "-",
        ">= 2.5x TS (ts -> ts)",
        "not measured",
        "-",  # the typed floor did not run either
    ]
    # The interpreter the peers ran on, and whether it is optimised, stated for each implementation.
    assert "driver: CPython " in done.stdout
    assert "acpio: acpio, builder style" in done.stdout

    document = json.loads(output.read_text())
    [result] = document["results"]
    assert (result["client"], result["agent"]) == ("acpio", "acpio")
    assert result["errors"] == []
    assert set(result["medians"]) == {*FIGURES, "pinned_p99_us"}
    assert all(value > 0 for value in result["medians"].values())
    assert result["ratios_to_floor"] == {}
    assert len(result["spawn_ms_samples"]) == 2
    assert document["settings"]["repeat"] == 1
    assert document["settings"]["scenarios"] == ["roundtrip", "pinned", "stream", "spawn"]
    described = document["interpreter"]
    assert described["executable"] == sys.executable
    assert described["optimised"] in (True, False)
    assert document["implementations"]["acpio"]["interpreter"]["version"] == described["version"]
    assert all(target["verdict"] == "not measured" for target in document["targets"])


@pytest.mark.slow  # 20-40 s on a loaded 2-core machine
def test_the_agentapp_agent_is_measured_pinned_and_judged_against_the_floor(tmp_path: Path) -> None:
    # The AgentApp agent and the typed floor (agents only) against the floor's client, pinned to one CPU.
    output = tmp_path / "results.json"
    done = run(
        "--pairs",
        "bare:acpio_app,bare:bare,bare:pydantic",
        "--scenarios",
        "pinned,stream",
        "--repeat",
        "2",
        "--requests",
        "50",
        "--updates",
        "300",
        "--cpu",
        "0",
        "--output",
        str(output),
    )
    assert done.returncode == 0, done.stderr
    assert "as many pinned to CPU 0" in done.stdout
    assert "acpio_app: acpio's AgentApp" in done.stdout

    document = json.loads(output.read_text())
    app, floor, typed_floor = (result["medians"] for result in document["results"])
    assert set(app) == {
        "pinned_req_per_s",
        "pinned_p50_us",
        "pinned_p99_us",
        "msgs_per_s",
        "idle_rss_mb",
        "peak_rss_mb",
    }
    assert len(document["results"][0]["runs"]["pinned_req_per_s"]) == 2
    assert document["results"][0]["run_repetitions"]["pinned_req_per_s"] == [1, 2]
    ratio = app["msgs_per_s"] / floor["msgs_per_s"]
    assert document["results"][0]["ratios_to_floor"]["msgs_per_s"] == ratio
    assert document["results"][1]["ratios_to_floor"]["msgs_per_s"] == 1.0

    # Judged within the run: the AgentApp's streaming against the floor, its peak RSS against its idle RSS.
    streaming = target_row(done.stdout, "AgentApp agent (acpio_app) streaming `say` to a bare client")
    assert streaming[2] == f"{app['msgs_per_s']:,.0f} msgs/s ({ratio:.2f}x)"
    assert streaming[4] == ("met" if ratio >= 0.4 else "missed")
    [judged] = [
        t for t in document["targets"] if t["key"] == "msgs_per_s" and t["pair"] == ["bare", "acpio_app"]
    ]
    assert judged["ratios"] == [ratio]
    peak = target_row(done.stdout, "AgentApp peak RSS streaming 100k updates in one turn (bare -> acpio_app)")
    assert peak[4] == ("met" if app["peak_rss_mb"] <= 1.2 * app["idle_rss_mb"] else "missed")

    # The typed floor (the floor's agent with pydantic models) beside the builder agent's targets.
    assert "pydantic: the floor's agent with pydantic models" in done.stdout
    typed_idle = typed_floor["idle_rss_mb"] / floor["idle_rss_mb"]
    idle = target_row(done.stdout, "idle RSS, builder agent (bare -> acpio)")
    assert (idle[4], idle[5]) == ("not measured", f"{typed_idle:.2f}x")  # the builder agent did not run
    [judged_idle] = [t for t in document["targets"] if t["figure"] == idle[0]]
    assert judged_idle["typed_floor_ratio"] == typed_idle
    assert target_row(done.stdout, "idle RSS, AgentApp (bare -> acpio_app)")[5] == "-"


def test_only_the_chosen_scenario_runs(tmp_path: Path) -> None:
    output = tmp_path / "results.json"
    done = run("--quick", "--impls", "acpio", "--scenarios", "spawn", "--output", str(output))
    assert done.returncode == 0, done.stderr
    rows = table_rows(done.stdout, "acpio -> acpio")
    assert [row.split(",")[0] for row in rows] == ["spawn -> initialize (ms)"]
    [result] = json.loads(output.read_text())["results"]
    assert set(result["medians"]) == {"spawn_ms"}


def test_a_mistake_on_the_command_line_is_one_line_not_a_traceback() -> None:
    done = run("--pairs", "acpio:rust")
    assert done.returncode == 2
    assert (
        "unknown implementation rust: choose from acpio, acpio_app, acpio_uvloop, official, ts, bare"
        in done.stderr
    )
    assert "Traceback" not in done.stderr


def test_the_agentapp_agent_has_no_client_and_the_pinned_cpu_must_be_ours() -> None:
    done = run("--pairs", "acpio_app:acpio")
    assert done.returncode == 2
    assert (
        "acpio_app is an agent only (it has no benchmark client): pair it as CLIENT:acpio_app" in done.stderr
    )
    done = run("--cpu", "4096")
    assert done.returncode == 2
    assert "--cpu 4096 is not a CPU this process may run on: choose from" in done.stderr
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


def test_make_bench_skips_the_optimised_run_when_there_is_no_such_interpreter(tmp_path: Path) -> None:
    missing = tmp_path / "python3"
    done = subprocess.run(
        ["make", "--no-print-directory", "bench-optimised", f"OPT_PYTHON={missing}"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert f"make bench-optimised: skipped: {missing} is not an optimised CPython" in done.stdout


def test_interpreter_py_describes_this_python_and_refuses_a_missing_one(tmp_path: Path) -> None:
    script = str(ROOT / "benchmarks" / "interpreter.py")
    done = subprocess.run(
        [sys.executable, script, "--json", sys.executable], capture_output=True, text=True, timeout=60
    )
    described = json.loads(done.stdout)
    assert described["executable"] == sys.executable
    assert described["version"] == ".".join(map(str, sys.version_info[:3]))
    # The exit status says whether it is optimised (the Makefile's test), and so does "build".
    assert done.returncode == (0 if described["optimised"] else 1)
    assert (described["build"] in ("PGO", "PGO+LTO")) == described["optimised"]

    done = subprocess.run(
        [sys.executable, script, str(tmp_path / "python3")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert f"interpreter.py: {tmp_path / 'python3'} cannot be run:" in done.stderr
