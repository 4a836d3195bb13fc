"""``acpio serve -- COMMAND`` as a real process: an agent process per connection; ``prompt --agent URL``."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from .test_remote import echo_turn

ACPIO = [sys.executable, "-m", "acpio"]


@asynccontextmanager
async def gateway(*options: str) -> AsyncIterator[tuple[str, int]]:
    """``acpio serve --port 0 OPTIONS -- acpio testy``; yields its URL and its process id."""
    process = await asyncio.create_subprocess_exec(
        *ACPIO,
        "serve",
        "--port",
        "0",
        *options,
        "--",
        *ACPIO,
        "testy",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line.startswith(b"listening on http://127.0.0.1:"), line
        yield line.split()[2].decode(), process.pid
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 15)
        except TimeoutError:
            process.kill()
            raise AssertionError("acpio serve did not stop within 15 s of SIGTERM") from None
    assert process.returncode == 0


def count_testy_processes(gateway_pid: int) -> int:
    """The ``acpio testy`` processes the gateway ``gateway_pid`` started (its children).

    Only its own: the other tests running beside this one (pytest-xdist) start testy processes too.
    """
    found = 0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            words = (entry / "cmdline").read_bytes().split(b"\0")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state, past the name
        if parent == gateway_pid and b"testy" in words:
            found += 1
    return found


@pytest.mark.parametrize("scheme", ["http", "ws"])
async def test_the_gateway_serves_a_stdio_agent_one_process_per_connection(scheme: str) -> None:
    async with gateway() as (url, pid):
        url = url.replace("http", scheme, 1)
        before = count_testy_processes(pid)
        assert await echo_turn(url) == "hello there\n"
        assert await echo_turn(url, "echo again") == "again\n"
        # each connection's agent process ended with it
        for _ in range(50):
            if count_testy_processes(pid) <= before:
                break
            await asyncio.sleep(0.1)
        assert count_testy_processes(pid) <= before


def test_the_gateway_needs_a_token_off_loopback() -> None:
    done = subprocess.run(
        [*ACPIO, "serve", "--host", "0.0.0.0", "--", *ACPIO, "testy"],
        capture_output=True,
        text=True,
        timeout=30,
        env={k: v for k, v in os.environ.items() if k != "ACPIO_TOKEN"},
    )
    assert done.returncode == 2
    assert "token" in done.stderr
    assert "Traceback" not in done.stderr


async def test_prompt_reaches_a_remote_agent(tmp_path: Path) -> None:
    async with gateway("--token", "s3cret") as (url, _):
        ws = url.replace("http", "ws", 1)
        process = await asyncio.create_subprocess_exec(
            *ACPIO,
            "prompt",
            "--agent",
            ws,
            "--cwd",
            str(tmp_path),
            "echo over the wire",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "ACPIO_TOKEN": "s3cret"},
        )
        out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    assert "over the wire" in out.decode()
