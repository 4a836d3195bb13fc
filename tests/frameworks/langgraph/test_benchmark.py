"""benchmarks/langgraph_overhead.py still runs: a quick run measures and prints its four ways."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip(
    "langgraph", reason="the langgraph extra is not installed: pip install 'acpio[langgraph]'"
)

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "langgraph_overhead.py"


@pytest.mark.slow  # imports LangGraph in a fresh process and streams four ways: seconds on a loaded machine
def test_a_quick_run_prints_the_cost_per_update_of_each_way() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--quick"], capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "399 chunks a turn" in done.stdout
    for way in ("graph alone", "AgentApp", "GraphStream", "graph_app"):
        assert re.search(rf"^  {way} +\d+\.\d ", done.stdout, re.MULTILINE), done.stdout
    assert re.search(r"adapter overhead \(GraphStream - AgentApp\): -?\d+\.\d us per update", done.stdout)
    assert "load after:" in done.stdout
