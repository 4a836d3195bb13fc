"""benchmarks/balancer.py still runs: a quick run prints every figure (timing is not checked)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ._balancer import MISSING, ROOT, haproxy_path, load_postgres


@pytest.mark.slow
def test_a_quick_run_prints_every_figure() -> None:
    if haproxy_path() is None:
        pytest.skip(MISSING)
    with load_postgres().cluster() as running:
        if isinstance(running, str):
            pytest.skip(running)
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "balancer.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=400,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for figure in (
        "updates/s WebSocket: direct",
        "updates/s HTTP + SSE: direct",
        "failover ws: backend killed -> next prompt answered",
        "failover http: backend killed -> next prompt answered",
        "memory: a backend idle",
        "memory: 2 connections of one session",
        "memory: one connection of 5 sessions",
    ):
        assert any(line.startswith(figure) for line in lines), (figure, done.stdout)
