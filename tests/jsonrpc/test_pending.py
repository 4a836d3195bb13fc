"""In-flight bookkeeping: pure data structures, no event loop."""

from __future__ import annotations

from acpio.jsonrpc.pending import CancelFlag, IncomingRequests, OutgoingRequests


def test_outgoing_ids_are_fresh_and_matched_with_their_exact_type() -> None:
    table: OutgoingRequests[str] = OutgoingRequests()
    first, second = table.allocate("a"), table.allocate("b")
    assert first != second
    assert table.pop(str(first)) is None  # "1" does not answer 1
    assert table.pop(True) is None  # nor does true
    assert table.pop(first) == "a"
    assert table.pop(first) is None  # answered once
    assert len(table) == 1


def test_outgoing_pop_if_takes_only_a_wanted_entry_with_the_exact_id() -> None:
    table: OutgoingRequests[str] = OutgoingRequests()
    request_id = table.allocate("a")
    assert table.pop_if(request_id, lambda entry: entry == "b") is None  # not wanted: left waiting
    assert table.pop_if(str(request_id), lambda entry: True) is None  # "1" does not answer 1
    assert len(table) == 1
    assert table.pop_if(request_id, lambda entry: entry == "a") == "a"
    assert len(table) == 0


def test_outgoing_drain_returns_everything_oldest_first() -> None:
    table: OutgoingRequests[str] = OutgoingRequests()
    for name in "abc":
        table.allocate(name)
    assert table.drain() == ["a", "b", "c"]
    assert len(table) == 0


def test_outgoing_discard_only_removes_the_same_entry() -> None:
    table: OutgoingRequests[str] = OutgoingRequests()
    request_id = table.allocate("a")
    table.discard(request_id, "other")
    assert len(table) == 1
    table.discard(request_id, "a")
    assert len(table) == 0


def test_incoming_registry_marks_and_removes() -> None:
    table: IncomingRequests[object] = IncomingRequests()
    entry = object()
    table.add(1, entry)
    assert table.get(1) is entry
    table.remove(1, entry)
    assert table.get(1) is None


def test_reused_incoming_id_targets_the_newest_and_stale_removal_keeps_it() -> None:
    table: IncomingRequests[object] = IncomingRequests()
    old, new = object(), object()
    table.add("x", old)
    table.add("x", new)
    assert table.get("x") is new
    table.remove("x", old)  # the older request finishing must not remove the newer slot
    assert table.get("x") is new


def test_cancel_flag_runs_callbacks_once_and_late_callbacks_at_once() -> None:
    flag = CancelFlag()
    seen: list[str] = []
    flag.add_callback(lambda: seen.append("early"))
    removed = lambda: seen.append("removed")  # noqa: E731
    flag.add_callback(removed)
    flag.remove_callback(removed)
    assert flag.set() is True
    assert flag.set() is False
    flag.add_callback(lambda: seen.append("late"))
    assert seen == ["early", "late"]
    assert flag.cancelled
