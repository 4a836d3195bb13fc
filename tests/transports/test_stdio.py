"""Stdio, exercised in a child process with stdin and stdout wired to pipes, files, /dev/null and a pty."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import acpio.transports

SRC = str(Path(acpio.transports.__file__).resolve().parents[2])

# Sends a burst, echoes every frame upper-cased until end of input, then reports and checks that
# stdout is back once the transport is closed.
CHILD = r"""
import asyncio, sys
from acpio.transports import Stdio

async def main(burst):
    transport = Stdio()
    try:
        Stdio()
    except RuntimeError as exc:
        print("second Stdio refused:", exc, file=sys.stderr)
    print("stray print: must land on stderr")
    sys.stdout.flush()
    for i in range(burst):
        transport.send(b'{"burst":%d}' % i)
    while (frame := await transport.receive()) is not None:
        transport.send(frame.upper())
    await transport.drain()
    writes = transport.statistics()["writes"]
    await transport.aclose()
    print(f"writes={writes}", file=sys.stderr)
    print("after close")

asyncio.run(main(int(sys.argv[1])))
"""

INPUT = b'{"a":1}\n\n{"b":2}\r\n{"c":3}\n'
ECHOES = [b'{"A":1}', b'{"B":2}', b'{"C":3}']


def child_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": SRC}


def burst(n: int) -> list[bytes]:
    return [b'{"burst":%d}' % i for i in range(n)]


def check_stderr(stderr: bytes, max_writes: int) -> None:
    assert b"stray print: must land on stderr" in stderr
    assert b"second Stdio refused: A Stdio transport is already open" in stderr
    writes = int(stderr.split(b"writes=")[1].split()[0])
    assert 1 <= writes <= max_writes


def test_stdout_a_pipe() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, "500"], input=INPUT, capture_output=True, env=child_env(), timeout=20
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.splitlines() == [*burst(500), *ECHOES, b"after close"]
    check_stderr(result.stderr, max_writes=10)  # 503 frames, not 503 writes


def test_stdin_and_stdout_regular_files(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_bytes(INPUT)
    with open(tmp_path / "in.jsonl", "rb") as stdin, open(tmp_path / "out.jsonl", "wb") as stdout:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, "500"],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=child_env(),
            timeout=20,
        )
    assert result.returncode == 0, result.stderr.decode()
    assert (tmp_path / "out.jsonl").read_bytes().splitlines() == [*burst(500), *ECHOES, b"after close"]
    check_stderr(result.stderr, max_writes=10)


def test_stdin_a_pipe_stdout_a_file(tmp_path: Path) -> None:
    with open(tmp_path / "out.jsonl", "wb") as stdout:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, "3"],
            input=INPUT,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=child_env(),
            timeout=20,
        )
    assert result.returncode == 0, result.stderr.decode()
    assert (tmp_path / "out.jsonl").read_bytes().splitlines() == [*burst(3), *ECHOES, b"after close"]


def test_stdin_dev_null() -> None:
    result = subprocess.run(
        [sys.executable, "-c", CHILD, "2"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=child_env(),
        timeout=20,
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.splitlines() == [*burst(2), b"after close"]


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="needs a pty")
def test_stdout_a_terminal() -> None:
    controller, terminal = pty.openpty()
    output = bytearray()

    def collect() -> None:
        while True:
            try:
                data = os.read(controller, 65536)
            except OSError:  # EIO once the child and we closed the terminal side
                return
            if not data:
                return
            output.extend(data)

    reader = threading.Thread(target=collect, daemon=True)
    reader.start()
    try:
        result = subprocess.run(
            [sys.executable, "-c", CHILD, "50"],
            input=INPUT,
            stdout=terminal,
            stderr=subprocess.PIPE,
            env=child_env(),
            timeout=20,
        )
    finally:
        os.close(terminal)
    reader.join(timeout=10)
    os.close(controller)
    assert result.returncode == 0, result.stderr.decode()
    lines = [line.rstrip(b"\r") for line in bytes(output).splitlines()]
    assert lines == [*burst(50), *ECHOES, b"after close"]


# Reads one frame, then idles while more input waits unread, then reads to the end and idles again:
# it reports the CPU time of each idle second (the loop must not spin on a ready descriptor).
IDLE_CHILD = r"""
import asyncio, sys, time
from acpio.transports import Stdio

async def idle():
    start = time.process_time()
    await asyncio.sleep(1)
    return time.process_time() - start

async def main():
    transport = Stdio()
    await transport.receive()
    unread = await idle()
    while await transport.receive() is not None:
        pass
    after_end = await idle()
    await transport.aclose()
    print(f"unread={unread:.3f} after_end={after_end:.3f}", file=sys.stderr)

asyncio.run(main())
"""


def test_an_idle_reader_does_not_spin_on_pending_input_or_after_end_of_input() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", IDLE_CHILD],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=child_env(),
    )
    assert child.stdin is not None
    time.sleep(0.5)  # the child waits for input: its reader is registered with the loop
    child.stdin.write(b'{"a":1}\n')
    child.stdin.flush()
    time.sleep(0.2)
    child.stdin.write(b'{"b":2}\n' * 10)  # arrives while the child idles without reading
    child.stdin.flush()
    time.sleep(1.2)
    child.stdin.close()  # end of input, then the child idles again
    assert child.wait(timeout=30) == 0
    assert child.stderr is not None
    stderr = child.stderr.read()
    report = dict(item.split("=") for item in stderr.decode().split()[-2:])
    assert float(report["unread"]) < 0.3, report
    assert float(report["after_end"]) < 0.3, report


# A receive() cancelled after the loop's callback read its chunk, before the task resumed: the chunk
# is not lost, the next receive() returns it. The task waits with its reader watched, the parent
# writes, and the cancel lands in the pass after the callback ran (asyncio runs callbacks in order).
CANCELLED_CHILD = r"""
import asyncio, select, sys
from acpio.transports import Stdio

async def main():
    transport = Stdio()
    waiting = asyncio.create_task(transport.receive())
    await asyncio.sleep(0)  # receive() finds nothing to read: it waits on the watched descriptor
    print("waiting", file=sys.stderr, flush=True)
    select.select([0], [], [], 10)  # the parent wrote: the next pass of the loop reads it
    await asyncio.sleep(0)  # the pass in which the callback reads the chunk for the waiting task
    await asyncio.sleep(0)  # resumed before that task: it has the chunk and has not run yet
    waiting.cancel()
    try:
        await waiting
    except asyncio.CancelledError:
        print("cancelled", file=sys.stderr)
    while (frame := await transport.receive()) is not None:
        transport.send(frame)
    await transport.aclose()

asyncio.run(main())
"""


def test_a_receive_cancelled_after_its_chunk_was_read_loses_nothing() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", CANCELLED_CHILD],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=child_env(),
    )
    assert child.stderr is not None
    assert child.stderr.readline() == b"waiting\n"
    stdout, stderr = child.communicate(b'{"a":1}\n{"b":2}\n', timeout=30)
    assert child.returncode == 0, stderr.decode()
    assert b"cancelled" in stderr
    assert stdout.splitlines() == [b'{"a":1}', b'{"b":2}']
