"""Reading traces: the typed events, the lenient line reader and following a growing file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from acpio.trace import (
    Lane,
    LanesEvent,
    NotificationEvent,
    RequestEvent,
    ResponseEvent,
    TraceFollower,
    iter_events,
    parse_event,
    parse_line,
    read_trace,
)

FIXTURE = Path(__file__).parent / "data" / "proxy_chain.jsons"

REQUEST = {
    "type": "request",
    "ts": 0.5,
    "protocol": "acp",
    "from": "Client",
    "to": "Proxy(0)",
    "id": 2,
    "method": "session/prompt",
    "params": {"sessionId": "s-1", "prompt": []},
    "session": "s-1",
}


def line(event: dict[str, object]) -> str:
    return json.dumps(event) + "\n"


def test_reads_the_recorded_chain_in_order() -> None:
    events = read_trace(FIXTURE)
    assert events[0] == LanesEvent(
        ts=0.0,
        lanes=(
            Lane("Client", "client"),
            Lane("Proxy(0)", "python examples/arrow_proxy.py"),
            Lane("Agent", "acpio testy"),
        ),
    )
    kinds = [type(event).__name__ for event in events[1:]]
    assert set(kinds) == {"RequestEvent", "ResponseEvent", "NotificationEvent"}
    assert [event.ts for event in events] == sorted(event.ts for event in events)
    first = events[1]
    assert isinstance(first, RequestEvent)
    assert (first.from_lane, first.to_lane, first.method, first.id) == (
        "Client",
        "Proxy(0)",
        "_proxy/initialize",
        0,
    )
    assert first.session is None
    assert first.params["protocolVersion"] == 1
    sessions = {event.session for event in events if not isinstance(event, LanesEvent)} - {None}
    assert sessions == {"testy-session-1", "testy-session-2"}


def test_an_error_response_carries_the_error_object() -> None:
    errors = [e for e in read_trace(FIXTURE) if isinstance(e, ResponseEvent) and e.is_error]
    assert [(e.from_lane, e.to_lane, e.method) for e in errors] == [
        ("Agent", "Proxy(0)", "session/set_mode"),
        ("Proxy(0)", "Client", "session/set_mode"),
    ]
    assert errors[0].payload["code"] == -32602
    assert errors[0].session == "testy-session-2"


def test_each_kind_is_typed() -> None:
    assert parse_event(REQUEST) == RequestEvent(
        ts=0.5,
        from_lane="Client",
        to_lane="Proxy(0)",
        id=2,
        method="session/prompt",
        params={"sessionId": "s-1", "prompt": []},
        session="s-1",
    )
    notification = {
        "type": "notification",
        "ts": 1,
        "from": "Agent",
        "to": "Proxy(0)",
        "method": "session/update",
    }
    assert parse_event(notification) == NotificationEvent(
        ts=1.0, from_lane="Agent", to_lane="Proxy(0)", method="session/update"
    )


def test_a_rust_sdk_response_without_method_or_session_is_read() -> None:
    event = parse_line(
        '{"type":"response","ts":0.04,"from":"Proxy(0)","to":"Client","id":"6f1c","is_error":false,'
        '"payload":{"stopReason":"end_turn"}}'
    )
    assert event == ResponseEvent(
        ts=0.04, from_lane="Proxy(0)", to_lane="Client", id="6f1c", payload={"stopReason": "end_turn"}
    )
    assert event.method is None
    assert event.session is None


def test_ids_keep_their_json_type() -> None:
    for value in ("a-string", 7, None):
        event = parse_event({**REQUEST, "id": value})
        assert isinstance(event, RequestEvent)
        assert event.id == value


def test_unknown_fields_are_ignored_and_kept_in_raw() -> None:
    event = parse_event({**REQUEST, "future_field": [1, 2]})
    assert event == parse_event(REQUEST)
    assert event is not None
    assert event.raw["future_field"] == [1, 2]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "not json",
        '{"type":"request"',
        "[1, 2]",
        '"a string"',
        '{"type":"stderr","ts":0.1,"line":"hello"}',
        '{"ts":0.1,"from":"Client","to":"Agent","method":"x"}',
        json.dumps({**REQUEST, "ts": "soon"}),
        json.dumps({**REQUEST, "ts": True}),
        json.dumps({k: v for k, v in REQUEST.items() if k != "method"}),
        json.dumps({k: v for k, v in REQUEST.items() if k != "from"}),
        '{"type":"lanes","ts":0,"lanes":"Client"}',
    ],
)
def test_lines_that_are_not_known_events_are_skipped(text: str) -> None:
    assert parse_line(text) is None
    assert list(iter_events([text, line(REQUEST)])) == [parse_event(REQUEST)]


def test_optional_fields_of_the_wrong_type_count_as_absent() -> None:
    event = parse_event({**REQUEST, "session": 12, "protocol": None})
    assert isinstance(event, RequestEvent)
    assert (event.session, event.protocol) == (None, "acp")


def test_a_lane_without_a_name_is_named_after_itself() -> None:
    event = parse_event({"type": "lanes", "ts": 0, "lanes": [{"lane": "Client"}, {"name": "no lane"}, 3]})
    assert event == LanesEvent(ts=0.0, lanes=(Lane("Client", "Client"),))


def test_read_trace_takes_a_last_line_without_newline(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsons"
    path.write_text(line(REQUEST) + "\n\ngarbage\n" + json.dumps({**REQUEST, "id": 3}))
    assert [event.id for event in read_trace(path)] == [2, 3]  # type: ignore[union-attr]


def test_read_trace_of_a_missing_file_raises(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_trace(tmp_path / "absent.jsons")


class TestFollower:
    def test_returns_only_what_was_added(self, tmp_path: Path) -> None:
        path = tmp_path / "trace.jsons"
        path.write_text("")
        follower = TraceFollower(path)
        assert follower.read_new() == []
        with path.open("a") as file:
            file.write(line({**REQUEST, "id": 1}) + line({**REQUEST, "id": 2}))
        assert [e.id for e in follower.read_new()] == [1, 2]  # type: ignore[union-attr]
        assert follower.read_new() == []
        with path.open("a") as file:
            file.write("not json\n" + line({**REQUEST, "id": 3}))
        assert [e.id for e in follower.read_new()] == [3]  # type: ignore[union-attr]
        assert follower.generation == 0

    def test_waits_for_the_end_of_a_line_being_written(self, tmp_path: Path) -> None:
        path = tmp_path / "trace.jsons"
        text = line(REQUEST)
        path.write_text(text[:20])
        follower = TraceFollower(path)
        assert follower.read_new() == []
        with path.open("a") as file:
            file.write(text[20:-5])
        assert follower.read_new() == []
        with path.open("a") as file:
            file.write(text[-5:])
        assert follower.read_new() == [parse_event(REQUEST)]

    def test_a_complete_last_line_without_newline_is_read_once(self, tmp_path: Path) -> None:
        path = tmp_path / "trace.jsons"
        path.write_text(json.dumps(REQUEST))
        follower = TraceFollower(path)
        assert follower.read_new() == [parse_event(REQUEST)]
        with path.open("a") as file:
            file.write("\n" + line({**REQUEST, "id": 9}))
        assert [e.id for e in follower.read_new()] == [9]  # type: ignore[union-attr]

    def test_a_truncated_file_starts_over(self, tmp_path: Path) -> None:
        path = tmp_path / "trace.jsons"
        path.write_text(line({**REQUEST, "id": 1}) + line({**REQUEST, "id": 2}))
        follower = TraceFollower(path)
        assert len(follower.read_new()) == 2
        path.write_text(line({**REQUEST, "id": 10}))  # a new conductor run truncates the file
        assert [e.id for e in follower.read_new()] == [10]  # type: ignore[union-attr]
        assert follower.generation == 1

    def test_a_file_rewritten_past_its_old_size_starts_over(self, tmp_path: Path) -> None:
        path = tmp_path / "trace.jsons"
        path.write_text(line({**REQUEST, "id": 1}))
        follower = TraceFollower(path)
        assert len(follower.read_new()) == 1
        # Truncated and written again, longer than before, between two reads: same inode, bigger size.
        path.write_text(line({**REQUEST, "id": 20, "method": "initialize"}) + line({**REQUEST, "id": 21}))
        assert [e.id for e in follower.read_new()] == [20, 21]  # type: ignore[union-attr]
        assert follower.generation == 1

    def test_a_replaced_file_starts_over(self, tmp_path: Path) -> None:
        path = tmp_path / "trace.jsons"
        path.write_text(line({**REQUEST, "id": 1}))
        follower = TraceFollower(path)
        assert len(follower.read_new()) == 1
        other = tmp_path / "new.jsons"
        other.write_text(line({**REQUEST, "id": 1}) + line({**REQUEST, "id": 2}))
        os.replace(other, path)
        assert [e.id for e in follower.read_new()] == [1, 2]  # type: ignore[union-attr]
        assert follower.generation == 1

    def test_a_deleted_file_raises_until_it_comes_back(self, tmp_path: Path) -> None:
        path = tmp_path / "trace.jsons"
        path.write_text(line({**REQUEST, "id": 1}))
        follower = TraceFollower(path)
        assert len(follower.read_new()) == 1
        path.unlink()
        with pytest.raises(FileNotFoundError):
            follower.read_new()
        path.write_text(line({**REQUEST, "id": 5}))
        assert [e.id for e in follower.read_new()] == [5]  # type: ignore[union-attr]
