"""Fixtures of the inspector's tests: ``acpio inspect`` as a real process, and a headless chromium."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.trace.conftest import driver  # noqa: F401  (the viewer's headless chromium, one per module)

REPO = Path(__file__).resolve().parents[2]

#: ``acpio inspect`` started with these arguments (before its own ``--url-file``): returns the page's URL.
StartInspect = Callable[..., str]


@pytest.fixture
def start_inspect(tmp_path: Path) -> Iterator[StartInspect]:
    """Start ``acpio inspect ARGS`` (ended with SIGINT afterwards); wait for its page; return the URL."""
    processes: list[subprocess.Popen[bytes]] = []

    def start(*args: str, stdin: int | None = subprocess.DEVNULL, stdout: int | None = None) -> str:
        url_file = tmp_path / f"url-{len(processes)}"
        command = [sys.executable, "-m", "acpio", "inspect", "--url-file", str(url_file), *args]
        process = subprocess.Popen(command, stdin=stdin, stdout=stdout, cwd=tmp_path)
        processes.append(process)
        deadline = time.monotonic() + 30
        while not (url_file.exists() and url_file.read_text().endswith("\n")):
            if process.poll() is not None:
                raise AssertionError(f"acpio inspect ended with {process.returncode} before serving its page")
            if time.monotonic() > deadline:
                raise AssertionError("acpio inspect did not serve its page within 30 s")
            time.sleep(0.05)
        return url_file.read_text().strip()

    start.processes = processes  # type: ignore[attr-defined]
    yield start
    for process in processes:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    for process in processes:
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()


def artifacts_dir() -> Path:
    """Where screenshots go: ``$ACPIO_TEST_ARTIFACTS`` (default ``.cache/test-artifacts``)."""
    directory = Path(os.environ.get("ACPIO_TEST_ARTIFACTS") or REPO / ".cache" / "test-artifacts")
    directory.mkdir(parents=True, exist_ok=True)
    return directory
