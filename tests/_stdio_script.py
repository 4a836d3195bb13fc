"""Run a Python script as an editor runs an agent: frames on its stdin, then its answers and stderr.

For what a fresh interpreter loads before it answers (the test process has loaded everything).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any


def initialize_and_new_session(cwd: Path | str) -> list[dict[str, Any]]:
    """The two requests an editor sends first: ``initialize`` (id 1) and ``session/new`` (id 2)."""
    return [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(cwd), "mcpServers": []}},
    ]


def answer_on_stdio(
    script: Path, frames: list[dict[str, Any]], *, until: Callable[[dict[str, Any]], bool] | None = None
) -> tuple[list[Any], str]:
    """Run ``script`` with ``frames`` on its stdin (then closed): the JSON lines it wrote, and the
    last line of its stderr (what the script reports about itself).

    With ``until``, stdin is closed only once a line it holds true is read (the end of input ends
    the connection, and would cancel a turn still running); :func:`answer_to` makes one."""
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    killer = threading.Timer(60, os.killpg, (proc.pid, signal.SIGKILL))
    killer.start()
    try:
        data = "".join(json.dumps(f) + "\n" for f in frames).encode()
        lines: list[bytes] = []
        if until is not None:
            assert proc.stdin is not None
            assert proc.stdout is not None
            proc.stdin.write(data)
            proc.stdin.flush()
            data = b""
            while line := proc.stdout.readline():
                lines.append(line)
                if until(json.loads(line)):
                    break
        out, err = proc.communicate(data)
    finally:
        killer.cancel()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err.decode()
    return [json.loads(line) for line in [*lines, *out.splitlines()]], err.decode().splitlines()[-1]


def answer_to(request_id: int) -> Callable[[dict[str, Any]], bool]:
    """An ``until`` of :func:`answer_on_stdio`: the answer to request ``request_id``."""
    return lambda line: line.get("id") == request_id and "method" not in line
