"""Replaying a cassette: as the agent (a fake agent a client cannot tell from the real one, with
faults), and as the client (a regression test that shows where the agent departed)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from acpio import schema as acp
from acpio.agents.coder.agent import CoderOptions, coder_app
from acpio.agents.testy import testy_agent
from acpio.errors import AcpError, RequestError
from acpio.testing import (
    CassetteMismatch,
    Faults,
    ReplayAgent,
    Tolerance,
    connect_client,
    replay_client,
)
from acpio.testing.agent_replay import GARBAGE, AgentCrashed, replay_as_agent
from acpio.trace.cassette import Cassette, Recording

SCRIPT = "say hi\nwrite notes.txt: hello\nread notes.txt"
#: The offline model counts the session's directory in its token usage: another directory, another count.
USAGE = Tolerance(ignored_fields=frozenset({"used"}))


def offline_agent(tmp_path: Path, **changes: Any) -> Any:
    """The reference agent on its offline model, touching nothing of the user's."""
    options = CoderOptions(
        store="memory:",
        user_settings=tmp_path / "user-settings.toml",
        credentials=tmp_path / "credentials.json",
        offline=True,
        environ={},
        **changes,
    )
    return coder_app(options).builder()


def directory(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    path.mkdir()
    return path


@pytest.fixture
async def recorded(tmp_path: Path) -> Path:
    """A cassette of the offline agent: it says hi, writes notes.txt (allowed), reads it back."""
    path = tmp_path / "offline.jsonl"
    agent = Recording(offline_agent(tmp_path), path)
    async with connect_client(agent, cwd=directory(tmp_path, "recorded")) as client:
        turn = await client.prompt(SCRIPT, permissions="allow")
    assert turn.stop_reason == "end_turn"
    return path


async def test_the_replayed_agent_answers_as_the_recorded_one(tmp_path: Path, recorded: Path) -> None:
    real_dir, fake_dir = directory(tmp_path, "real"), directory(tmp_path, "fake")
    async with connect_client(offline_agent(tmp_path), cwd=real_dir) as client:
        real = await client.prompt(SCRIPT, permissions="allow")
        real_lines = client.conversation.lines()
    fake_agent = ReplayAgent(recorded)
    async with connect_client(fake_agent, cwd=fake_dir) as client:
        fake = await client.prompt(SCRIPT, permissions="allow")
        fake_lines = client.conversation.lines()
    assert fake == real
    assert "Done. Tool results:\n- write_file: Wrote notes.txt\n- read_file: hello" in fake.text
    # the recorded write landed in this client's own directory, and the read got it back
    assert (fake_dir / "notes.txt").read_text() == "hello"
    assert len(fake_lines) == len(real_lines)
    assert fake_agent.departures == []


async def test_a_client_that_departs_is_answered_with_what_the_cassette_expected(
    tmp_path: Path, recorded: Path
) -> None:
    agent = ReplayAgent(recorded)
    async with connect_client(agent, cwd=directory(tmp_path, "fake")) as client:
        session = await client.session()
        request = acp.SetSessionModeRequest(session_id=session.session_id, mode_id="auto-edit")
        with pytest.raises(RequestError, match="acpio replay: the client sent session/set_mode where the"):
            await client.connection.send_request(request)
        turn = await client.prompt(SCRIPT, permissions="allow")
    assert turn.stop_reason == "end_turn"  # the replay goes on from where it was
    assert agent.departures == ["the client sent session/set_mode where the cassette has session/prompt"]


async def _bytes_of(cassette: Path, faults: Faults) -> tuple[bytes, BaseException | None]:
    """What a replay with ``faults`` writes when the client sends the recorded messages."""
    loaded = Cassette.load(cassette)
    client_lines = [orjson.dumps(e.message) + b"\n" for e in loaded if e.sender == "client"]
    written = bytearray()

    async def read() -> bytes:
        return client_lines.pop(0) if client_lines else b""

    async def write(data: bytes) -> None:
        written.extend(data)

    try:
        await replay_as_agent(loaded, read, write, faults=faults)
    except AgentCrashed as exc:
        return bytes(written), exc
    return bytes(written), None


async def test_faults_garbage_cut_crash_and_delay(recorded: Path) -> None:
    clean, failure = await _bytes_of(recorded, Faults())
    assert failure is None
    lines = clean.split(b"\n")[:-1]
    garbage, _ = await _bytes_of(recorded, Faults(garbage_at=3))
    assert garbage.split(b"\n")[:4] == [*lines[:2], GARBAGE, lines[2]]
    cut, failure = await _bytes_of(recorded, Faults(cut_at=3))
    assert isinstance(failure, AgentCrashed)
    assert cut == b"\n".join(lines[:2]) + b"\n" + lines[2][: len(lines[2]) // 2]  # no newline: cut mid-line
    crashed, failure = await _bytes_of(recorded, Faults(crash_at=3))
    assert isinstance(failure, AgentCrashed)
    assert crashed == b"\n".join(lines[:2]) + b"\n"
    started = time.monotonic()
    await _bytes_of(recorded, Faults(delay=0.01))
    assert time.monotonic() - started >= 0.01 * len(lines)


async def test_a_client_sees_a_cut_agent_as_a_closed_connection(tmp_path: Path, recorded: Path) -> None:
    agent = ReplayAgent(recorded, faults=Faults(cut_at=5))
    async with connect_client(agent, cwd=directory(tmp_path, "fake")) as client:
        with pytest.raises(AcpError, match="closed"):
            await client.prompt(SCRIPT, permissions="allow")


async def test_the_same_agent_replays_without_departure(tmp_path: Path, recorded: Path) -> None:
    report = await replay_client(
        recorded, offline_agent(tmp_path), cwd=directory(tmp_path, "again"), tolerance=USAGE
    )
    report.check()
    assert len(report.live) == len(Cassette.load(recorded))


async def test_a_changed_agent_is_caught_with_the_conversation(tmp_path: Path, recorded: Path) -> None:
    changed = offline_agent(tmp_path, mode="auto-edit")  # a new default mode: it edits without asking
    report = await replay_client(
        recorded, changed, cwd=directory(tmp_path, "again"), tolerance=USAGE, wait_timeout=2
    )
    assert not report.ok
    with pytest.raises(CassetteMismatch) as caught:
        report.check()
    shown = str(caught.value)
    assert f"the agent departed from {recorded}" in shown
    assert "    - agent → client  session/request_permission  Write notes.txt    (not sent)" in shown
    unsent = "selected allow    (not sent: the agent did not ask)"
    assert f"      client ⇢ agent  session/request_permission  {unsent}" in shown
    assert '          result.modes.currentModeId: "ask" -> "auto-edit"' in shown
    assert len(report.departures) == 2  # the mode, and the permission it no longer asks: the rest is the same
    assert "      client → agent  session/prompt" in shown  # the conversation around it, unchanged lines too
    assert "{" not in shown.replace('{"', "")  # lines of conversation, not JSON objects


def _swapped(cassette: Cassette, first: str, second: str) -> Cassette:
    """``cassette`` with the agent's two updates of these kinds (the first of each) swapped."""
    entries = list(cassette.entries)
    kinds = [e.message.get("params", {}).get("update", {}).get("sessionUpdate") for e in entries]
    a, b = kinds.index(first), kinds.index(second)
    entries[a], entries[b] = entries[b], entries[a]
    return Cassette(tuple(entries))


async def test_updates_of_different_kinds_may_come_in_another_order(tmp_path: Path) -> None:
    path = tmp_path / "testy.jsonl"
    async with connect_client(Recording(testy_agent(), path), cwd=directory(tmp_path, "a")) as client:
        await client.prompt("plan a; b\ntitle T\necho hi there")
    cassette = Cassette.load(path)
    # testy's session ids are its own (testy-1): another live id would stand for it just the same
    reordered = _swapped(cassette, "plan", "session_info_update")
    (await replay_client(reordered, testy_agent(), cwd=directory(tmp_path, "b"))).check()
    chunks = list(cassette.entries)
    texts = [i for i, e in enumerate(chunks) if "agent_message_chunk" in str(e.message)]
    chunks[texts[0]], chunks[texts[1]] = chunks[texts[1]], chunks[texts[0]]
    report = await replay_client(Cassette(tuple(chunks)), testy_agent(), cwd=directory(tmp_path, "c"))
    assert [d.kind for d in report.departures] == ["differs", "differs"]  # one kind keeps its order


def test_identifiers_stand_for_each_other_and_timestamps_match_any() -> None:
    tolerance = Tolerance()
    recorded = {"sessionId": "s-1", "at": "2024-01-01T00:00:00Z"}
    assert tolerance.differences(recorded, {"sessionId": "x", "at": "2025-02-02T10:00:00.5+01:00"}) == []
    assert tolerance.differences({"sessionId": "s-1"}, {"sessionId": "x"}) == []  # the same binding again
    assert tolerance.differences({"sessionId": "s-2"}, {"sessionId": "x"}) == [
        'sessionId: "s-2" -> "x" (another identifier)'
    ]
    assert tolerance.differences({"a": [1, 2]}, {"a": [1], "b": None}) == [
        "a: 2 items -> 1 items",
        "b: (absent) -> null",
    ]
