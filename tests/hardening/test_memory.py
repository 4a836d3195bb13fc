"""Memory stays proportional to sane limits, not to what a hostile or slow peer sends.

Peak memory is read from the child's ``VmHWM`` (Linux); each test drives a real ``acpio testy``
process or measures this process around one operation.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from acpio.transports import Lines

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")


def _status_kib(pid: int | str, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _testy(stderr: int) -> subprocess.Popen[bytes]:
    """``acpio testy`` as a child speaking on pipes."""
    return subprocess.Popen(
        [sys.executable, "-m", "acpio", "testy"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
    )


def test_a_huge_batch_of_scalars_keeps_the_agent_small() -> None:
    """A 1 MB line of 500,000 scalars grew agents to 2.4 GB; now the batch is refused with one error."""
    agent = _testy(subprocess.PIPE)
    assert agent.stdin is not None
    assert agent.stdout is not None
    try:
        agent.stdin.write(b"[" + b",".join([b"0"] * 500_000) + b"]\n")
        agent.stdin.flush()
        answer = orjson.loads(agent.stdout.readline())
        peak_mib = _status_kib(agent.pid, "VmHWM") / 1024
    finally:
        agent.stdin.close()
        agent.wait(timeout=20)
    assert answer["id"] is None
    assert answer["error"]["data"] == {"reason": "batch too large", "entries": 500_000, "limit": 1000}
    assert peak_mib < 200, f"testy peaked at {peak_mib:.0f} MiB"
    assert agent.stderr is not None
    assert len(agent.stderr.read().splitlines()) < 10  # a line per batch, not a million


def test_refusing_a_huge_batch_of_requests_answers_every_id_and_keeps_the_agent_small() -> None:
    """Each request of a batch over the cap is answered under its id: 200,000 of them, one frame each
    from orjson, took testy to 958 MiB (200 MiB now): the answer is built in one buffer."""
    count = 200_000
    agent = _testy(subprocess.PIPE)
    assert agent.stdin is not None
    assert agent.stdout is not None
    try:
        entries = b",".join(b'{"jsonrpc":"2.0","id":%d,"method":"x"}' % i for i in range(count))
        agent.stdin.write(b"[" + entries + b"]\n")
        agent.stdin.flush()
        answer = orjson.loads(agent.stdout.readline())
        peak_mib = _status_kib(agent.pid, "VmHWM") / 1024
    finally:
        agent.stdin.close()
        agent.wait(timeout=20)
    assert [a["id"] for a in answer] == list(range(count))
    assert answer[0]["error"]["data"] == {"reason": "batch too large", "entries": count, "limit": 1000}
    assert peak_mib < 300, f"testy peaked at {peak_mib:.0f} MiB"


async def test_queued_frames_cost_their_size_not_orjson_buffers() -> None:
    """200,000 small frames waiting for a stalled reader held 786 MB as orjson's own bytes objects."""
    stalled = asyncio.Event()

    async def never_written(data: bytes) -> None:
        await stalled.wait()

    async def no_input() -> bytes:
        await stalled.wait()
        return b""

    transport = Lines(no_input, never_written)
    before = _status_kib("self", "VmRSS")
    for i in range(200_000):
        transport.send(orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {"n": i}}))
    grown_mib = (_status_kib("self", "VmRSS") - before) / 1024  # before the writer task first runs
    stalled.set()
    await transport.aclose()
    assert grown_mib < 150, f"200,000 queued frames took {grown_mib:.0f} MiB"


def _send(agent: subprocess.Popen[bytes], message: dict[str, object]) -> None:
    assert agent.stdin is not None
    agent.stdin.write(orjson.dumps(message) + b"\n")
    agent.stdin.flush()


def _read_until_id(agent: subprocess.Popen[bytes], request_id: int) -> dict[str, object]:
    assert agent.stdout is not None
    while True:
        message: dict[str, object] = orjson.loads(agent.stdout.readline())
        if message.get("id") == request_id:
            return message


def test_a_stalled_client_does_not_grow_a_streaming_agent() -> None:
    """The client stalls while testy streams: testy grew to 8.7 GB; now it waits for the reader."""
    agent = _testy(subprocess.DEVNULL)
    try:
        _send(agent, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        _read_until_id(agent, 1)
        _send(
            agent,
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}},
        )
        session = _read_until_id(agent, 2)["result"]["sessionId"]  # type: ignore[index]
        # 150 MB of updates in large ones: what an unbounded sender would hold, in few messages.
        text = f"stream 100000 {'x' * 1500}"
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
        _send(agent, {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt})
        time.sleep(3)  # the client reads nothing meanwhile
        stalled_mib = _status_kib(agent.pid, "VmRSS") / 1024
        answer = _read_until_id(agent, 3)  # then reads everything: nothing was lost
        assert answer["result"] == {"stopReason": "end_turn"}
    finally:
        assert agent.stdin is not None
        agent.stdin.close()
        agent.wait(timeout=20)
    assert stalled_mib < 100, f"testy held {stalled_mib:.0f} MiB while its client stalled"
