"""The viewer's index of a trace file: events by number, read in windows, from a file of any size."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import orjson
import pytest

from acpio.trace import index as index_module
from acpio.trace import parse_event
from acpio.trace.index import CHECKPOINT_EVERY, TraceIndex, event_type, placeholder


def message(n: int, **fields: Any) -> dict[str, Any]:
    event = {"type": "notification", "ts": n / 10, "protocol": "acp", "from": "Agent", "to": "Client"}
    return event | {"method": "session/update", "params": {"n": n}} | fields


def line(event: dict[str, Any]) -> bytes:
    return orjson.dumps(event) + b"\n"


def numbers(events: list[bytes]) -> list[int]:
    return [orjson.loads(event)["params"]["n"] for event in events]


def indexed(path: Path) -> TraceIndex:
    index = TraceIndex(path)
    assert index.refresh(budget=10)
    return index


@pytest.mark.parametrize(
    "value",
    [
        message(1),
        message(1, type="request", id=1),
        {"type": "response", "ts": 1, "from": "A", "to": "B", "id": 1, "payload": None},
        {"type": "lanes", "ts": 0.0, "lanes": []},
        {"type": "lanes", "ts": 0.0},
        message(1, ts=True),
        message(1, ts="1"),
        message(1, ts=math.inf),
        message(1, method=None),
        message(1, method=3),
        message(1, type="unknown"),
        message(1, type=["request"]),
        message(1, **{"from": 1}),
        {"type": "request", "ts": 1, "from": "A", "method": "m"},
        [message(1)],
        "request",
        None,
    ],
)
def test_event_type_accepts_what_parse_event_accepts(value: Any) -> None:
    parsed = parse_event(value)
    assert event_type(value) == (None if parsed is None else parsed.type)


def test_windows_read_events_by_number_across_checkpoints(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsons"
    count = 3 * CHECKPOINT_EVERY + 17
    lanes = {"type": "lanes", "ts": 0.0, "lanes": [{"lane": "Client", "name": "client"}]}
    with path.open("wb") as file:
        file.write(line(lanes))
        for n in range(1, count):
            file.write(line(message(n)))
            if n % 50 == 0:
                file.write(b"\n   \nnot json\n" + line({"type": "unknown", "ts": 1}))  # not events
    index = indexed(path)
    assert (index.total, index.scanned, index.size, index.epoch) == (
        count,
        path.stat().st_size,
        index.size,
        0,
    )
    window = index.window(700, 5, max_bytes=1 << 20)
    assert (window.start, window.next, window.total) == (700, 705, count)
    assert numbers(window.events) == [700, 701, 702, 703, 704]
    assert orjson.loads(window.lanes or b"null") == lanes
    assert orjson.loads(index.window(0, 2, 1 << 20).events[0]) == lanes  # the lanes event is event 0
    tail = index.window(count - 3, 100, 1 << 20)
    assert numbers(tail.events) == [count - 3, count - 2, count - 1]
    assert tail.next == count
    assert index.window(count, 10, 1 << 20).events == []
    assert index.window(5, 0, 1 << 20).events == []


def test_events_are_served_as_written_not_encoded_again(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsons"
    written = b'{"type": "notification", "ts": 1.50E+0, "from": "Agent", "to": "Client", "method": "m"}'
    path.write_bytes(written + b"\n")
    assert indexed(path).window(0, 10, 1 << 20).events == [written]


def test_an_answer_stops_near_its_byte_budget_but_has_at_least_one_event(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsons"
    path.write_bytes(b"".join(line(message(n, params={"n": n, "text": "x" * 1000})) for n in range(20)))
    index = indexed(path)
    assert numbers(index.window(3, 100, max_bytes=3500).events) == [3, 4, 5]
    assert numbers(index.window(3, 100, max_bytes=10).events) == [3]


def test_a_growing_file_is_indexed_as_it_grows(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsons"
    path.write_bytes(line(message(0)))
    index = indexed(path)
    with path.open("ab") as file:
        file.write(line(message(1)) + line(message(2))[:20])  # a line still being written
    assert index.refresh()
    assert index.total == 2
    assert numbers(index.window(0, 10, 1 << 20).events) == [0, 1]
    with path.open("ab") as file:
        file.write(line(message(2))[20:-1])  # complete JSON, no newline yet: taken
    assert index.refresh()
    assert index.total == 3
    with path.open("ab") as file:
        file.write(b"\n" + line(message(3)))  # the newline, then a blank line: not counted twice
    assert index.refresh()
    assert numbers(index.window(0, 10, 1 << 20).events) == [0, 1, 2, 3]


def test_a_file_that_starts_over_is_indexed_again(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsons"
    path.write_bytes(b"".join(line(message(n)) for n in range(10)))
    index = indexed(path)
    path.write_bytes(line(message(100)) + line(message(101)))
    assert index.refresh()
    assert (index.epoch, index.total) == (1, 2)
    assert numbers(index.window(0, 10, 1 << 20).events) == [100, 101]
    # Rewritten past the old size between two looks: noticed from the last line read.
    path.write_bytes(b"".join(line(message(n, ts=n + 0.5)) for n in range(200, 210)))
    assert index.refresh()
    assert (index.epoch, index.total) == (2, 10)


def test_a_missing_file_raises_until_it_is_there(tmp_path: Path) -> None:
    index = TraceIndex(tmp_path / "later.jsons")
    with pytest.raises(OSError):
        index.refresh()
    (tmp_path / "later.jsons").write_bytes(line(message(1)))
    assert index.refresh()
    assert index.total == 1


def test_a_line_nested_deeper_than_orjson_writes_is_served_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsons"
    deep = "[" * 300 + "1" + "]" * 300
    head = '{"type":"request","ts":1,"from":"Client","to":"Agent","id":1,"method":"x"'
    written = f'{head},"params":{{"a":{deep}}}}}'
    path.write_bytes(written.encode() + b"\n" + line(message(2)))
    window = indexed(path).window(0, 10, 1 << 20)
    assert window.events[0] == written.encode()
    assert json.loads(window.events[0])["params"] == json.loads(f'{{"a":{deep}}}')
    assert numbers(window.events[1:]) == [2]


def test_a_line_nested_deeper_than_orjson_reads_is_a_placeholder_saying_why(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsons"
    deep = "[" * 1100 + "]" * 1100
    written = (
        '{"type":"request","ts":1.5,"protocol":"acp","from":"Client","to":"Agent","id":"r-1",'
        f'"method":"x/deep","params":{{"method":"not this one","a":{deep}}},"session":"s-1"}}'
    )
    path.write_bytes(written.encode() + b"\n" + line(message(2)))
    window = indexed(path).window(0, 10, 1 << 20)
    first = orjson.loads(window.events[0])
    assert first == {
        "type": "request",
        "ts": 1.5,
        "protocol": "acp",
        "from": "Client",
        "to": "Agent",
        "id": "r-1",
        "method": "x/deep",
        "session": "s-1",
        "params": None,
        "omitted": first["omitted"],
    }
    assert "nested deeper than the viewer reads (1024 levels)" in first["omitted"]
    assert numbers(window.events[1:]) == [2]


def test_an_over_long_line_is_never_held_and_served_as_a_placeholder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_module, "MAX_EVENT_BYTES", 10_000)
    monkeypatch.setattr(index_module, "_CHUNK", 4096)  # the long line spans many chunks
    path = tmp_path / "trace.jsons"
    long = line(
        {"type": "response", "ts": 2, "from": "Agent", "to": "Client", "id": 7, "is_error": False}
        | {
            "method": "fs/read_text_file",
            "payload": {"content": "y" * 50_000},
        }
    )
    with path.open("wb") as file:
        file.write(line(message(1)) + long[:30_000])  # still being written: not counted yet
    index = indexed(path)
    assert index.total == 1
    with path.open("ab") as file:
        file.write(long[30_000:] + line(message(3)))
    assert index.refresh(budget=10)
    window = index.window(0, 10, 1 << 20)
    assert len(window.events) == 3
    served = orjson.loads(window.events[1])
    assert served["payload"] is None
    assert (served["type"], served["method"], served["id"], served["is_error"]) == (
        "response",
        "fs/read_text_file",
        7,
        False,
    )
    assert "more than the viewer shows" in served["omitted"]
    assert "acpio.trace.read_trace" in served["omitted"]
    assert numbers([window.events[0], window.events[2]]) == [1, 3]


def test_a_placeholder_needs_the_fields_of_an_event() -> None:
    assert placeholder(b'{"type":"notification","ts":1,"from":"A","to":"B"', "why") is None  # no method
    assert placeholder(b"[1, 2", "why") is None
    made = placeholder(b'{"type":"notification","ts":1,"from":"A","to":"B","method":"m","params":{', "why")
    assert made is not None
    assert orjson.loads(made)["omitted"] == "why"
