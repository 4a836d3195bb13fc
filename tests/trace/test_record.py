"""``TapRecorder``: a connection's frames, recorded by a tap, read back as a trace."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from acpio import Client
from acpio import schema as acp
from acpio.trace import RequestEvent, ResponseEvent, StderrEvent, TapRecorder, read_trace
from acpio.trace.index import TraceIndex
from acpio.trace.show import build_rows
from acpio.transports import AcpAgent, OversizedFrame
from acpio.transports.tap import Direction, Tap


async def test_a_session_with_a_real_agent_recorded_by_a_tap_is_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"

    async def main(cx: Any) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(tmp_path).start_session() as session:
            session.send_prompt("hello there, agent")
            return await session.read_to_string()  # type: ignore[no-any-return]

    with TapRecorder(path) as record:
        agent = Tap(await AcpAgent([sys.executable, "-m", "acpio", "testy"]).open(), record)
        assert await Client.builder().connect_with(agent, main) == "hello there, agent"
    events = read_trace(path)
    first = events[0]
    assert isinstance(first, RequestEvent)
    assert (first.from_lane, first.to_lane, first.method) == ("Client", "Agent", "initialize")
    assert first.ts > 0
    assert "untimed" not in first.raw
    rows = build_rows(events)
    prompt = next(row for row in rows if row.kind == "response" and row.method == "session/prompt")
    assert prompt.label == "stopReason: end_turn"
    assert prompt.duration is not None
    assert prompt.duration > 0
    run = next(row for row in rows if row.count > 1)
    assert (run.from_lane, run.to_lane, run.count, run.text) == ("Agent", "Client", 3, "hello there, agent")
    index = TraceIndex(path)
    index.refresh(1.0)
    assert index.window(0, 1000, 1 << 20).total == len(events)


def test_batches_text_that_is_not_json_and_oversized_lines_are_recorded(tmp_path: Path) -> None:
    path = tmp_path / "tap.jsonl"
    with TapRecorder(path) as record:
        record(Direction.OUTGOING, b'[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]')
        record(Direction.INCOMING, b'[{"jsonrpc":"2.0","id":1,"result":{"x":1.50E+3}}]')
        record(Direction.INCOMING, b"Loading model...")
        record(Direction.INCOMING, OversizedFrame(size=99_000_000, head=b'{"jsonrpc"'))
    record(Direction.INCOMING, b"{}")  # after close: nothing, no error
    lines = path.read_bytes().splitlines()
    assert len(lines) == 4
    assert b'"x":1.50E+3' in lines[1]  # the frame's own text, not encoded again
    events = read_trace(path)
    assert [e.type for e in events] == ["request", "notification", "response", "stderr", "stderr"]
    answer = events[2]
    assert isinstance(answer, ResponseEvent)
    assert answer.payload == {"x": 1500.0}
    noise = events[3]
    assert isinstance(noise, StderrEvent)
    assert (noise.from_lane, noise.line, noise.stream) == ("Agent", "Loading model...", "stdout")
    assert events[4].raw["line"] == "(a line of 99000000 bytes, skipped unread)"
