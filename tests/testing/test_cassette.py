"""Cassettes: redaction of secrets and paths, the file a recorder writes, and every trace read as one."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from acpio.agents.testy import testy_agent
from acpio.testing import connect_client, conversation_lines
from acpio.trace import read_trace
from acpio.trace.cassette import Cassette, Recording, frame_messages
from acpio.trace.redact import Redaction, restore_paths
from acpio.trace.show import build_rows
from acpio.transports import Direction, OversizedFrame

DATA = Path(__file__).parents[1] / "trace" / "data"


def test_default_redaction_hides_keys_tokens_and_the_home_directory() -> None:
    home = str(Path.home())
    message = {
        "params": {
            "note": "use sk-proj-abcdefghijklmnopqrstuvwx and ghp_abcdefghijklmnopqrstuvwxyz0123",
            "headers": [{"name": "Authorization", "value": "Bearer abc.def.ghi-123456"}],
            "env": [{"name": "OPENAI_API_KEY", "value": "whatever-it-is"}, {"name": "LANG", "value": "C"}],
            "apiKey": "plain",
            "path": f"{home}/notes.txt",
            "other": f"{home}extra/file",
        }
    }
    redacted = Redaction.default().apply(message)["params"]
    assert redacted["note"] == "use <redacted:api-key> and <redacted:token>"
    assert redacted["headers"][0]["value"] == "<redacted>"
    assert redacted["env"] == [
        {"name": "OPENAI_API_KEY", "value": "<redacted>"},
        {"name": "LANG", "value": "C"},
    ]
    assert redacted["apiKey"] == "<redacted>"
    assert redacted["path"] == "<home>/notes.txt"
    assert redacted["other"] == f"{home}extra/file"  # a whole path component only


def test_patterns_are_configurable_and_a_bad_one_says_so() -> None:
    redaction = Redaction(paths={}).with_patterns((r"acct-\d+", "<account>"))
    assert redaction.text("acct-42 and sk-abcdefghijklmnopqrstuvwx") == "<account> and <redacted:api-key>"
    with pytest.raises(ValueError, match="not a regular expression"):
        Redaction(patterns=[("(", "x")])


def test_cwd_is_replaced_before_home_and_restored_by_a_replay() -> None:
    redaction = Redaction(paths={"<home>": "/home/ann", "<cwd>": "/home/ann/project"})
    recorded = redaction.apply({"cwd": "/home/ann/project", "path": "/home/ann/project/a.txt"})
    assert recorded == {"cwd": "<cwd>", "path": "<cwd>/a.txt"}
    assert restore_paths(recorded, {"<cwd>": "/tmp/t1"}) == {"cwd": "/tmp/t1", "path": "/tmp/t1/a.txt"}


async def test_a_recording_is_a_redacted_trace_with_a_header(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    path = tmp_path / "run.jsonl"
    async with connect_client(Recording(testy_agent(), path), cwd=project) as client:
        turn = await client.prompt(f"write notes.txt sk-ant-{'x' * 24}\nread notes.txt", permissions="allow")
    assert turn.stop_reason == "end_turn"
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    assert lines[0] == {"type": "cassette", "version": 1, "placeholders": ["<cwd>", "<home>"]}
    text = path.read_text()
    assert str(project) not in text
    assert "sk-ant-" not in text
    assert "<cwd>/notes.txt" in text
    assert "<redacted:api-key>" in text
    cassette = Cassette.load(path)
    assert [e.sender for e in cassette][:2] == ["client", "agent"]
    assert conversation_lines(cassette.entries)[:3] == [
        "client → agent  initialize  protocol v1",
        "agent ⇢ client  initialize  protocol v1 acpio-testy 0.1.0",
        "client → agent  session/new  <cwd>",
    ]
    methods = [row.method for row in build_rows(read_trace(path))]  # what `acpio trace show` prints
    assert "fs/write_text_file" in methods


def test_a_conductor_trace_and_a_json_log_load_as_cassettes(tmp_path: Path) -> None:
    chain = Cassette.load(DATA / "prompt_chain.jsons")  # the client's hop of a conductor trace
    log = Cassette.load(DATA / "prompt_json.jsonl")  # acpio prompt --json
    assert chain.entries[0].method == log.entries[0].method == "initialize"
    assert {e.method for e in chain if e.sender == "agent"} >= {"session/update", "fs/write_text_file"}
    redacted = tmp_path / "chain.jsonl"
    chain.save(redacted, Redaction(paths={"<cwd>": "/home/dev/notes-project"}))
    assert "/home/dev/notes-project" not in redacted.read_text()
    assert len(Cassette.load(redacted)) == len(chain)


def test_a_file_without_messages_or_of_a_later_format_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"type": "cassette", "version": 1}\n')
    with pytest.raises(ValueError, match="no ACP message"):
        Cassette.load(empty)
    later = tmp_path / "later.jsonl"
    later.write_text('{"type": "cassette", "version": 9}\n')
    with pytest.raises(ValueError, match="upgrade acpio"):
        Cassette.load(later)


def test_a_frame_a_tap_moved_is_its_json_objects_and_who_sent_them() -> None:
    batch = b'[{"jsonrpc":"2.0","id":1,"method":"a"},7,{"jsonrpc":"2.0","method":"b"}]'
    sender, messages = frame_messages(Direction.OUTGOING, batch, "client")
    assert sender == "client"
    assert messages == [{"jsonrpc": "2.0", "id": 1, "method": "a"}, {"jsonrpc": "2.0", "method": "b"}]
    assert frame_messages(Direction.OUTGOING, b'{"id":1,"result":{}}', "agent") == (
        "agent",
        [{"id": 1, "result": {}}],
    )  # a tap on the agent's transport: what it sends went to the client
    assert frame_messages(Direction.INCOMING, b"Loading model...", "client") == ("agent", [])
    assert frame_messages(Direction.INCOMING, OversizedFrame(size=10**8, head=b"{"), "client") == (
        "agent",
        [],
    )
