"""Two runs compared: the same conversation is no difference, a changed prompt and answer are."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from acpio.inspector import Capture, Inspection, diff_runs


def record(path: Path, words: str, *, noise: bool = False) -> None:
    prompt = {"sessionId": "s-1", "prompt": [{"type": "text", "text": words}]}
    with Capture(path) as capture:
        run = Inspection({"command": "agent"}, capture=capture)
        run.record(
            "client", orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/prompt", "params": prompt})
        )
        for word in words.split():
            chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": word}}
            params = {"sessionId": "s-1", "update": chunk}
            run.record(
                "agent", orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params})
            )
        if noise:
            run.record("agent", b"debug: done")
        run.record("agent", b'{"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}}')


def test_the_same_conversation_is_no_difference(tmp_path: Path) -> None:
    record(tmp_path / "a.sqlite", "hello there")
    record(tmp_path / "b.sqlite", "hello there")
    with Capture(tmp_path / "a.sqlite") as a, Capture(tmp_path / "b.sqlite") as b:
        assert diff_runs(a, b) == []


def test_what_changed_is_shown(tmp_path: Path) -> None:
    record(tmp_path / "a.sqlite", "hello there")
    record(tmp_path / "b.sqlite", "goodbye now", noise=True)
    with Capture(tmp_path / "a.sqlite") as a, Capture(tmp_path / "b.sqlite") as b:
        lines = diff_runs(a, b)
    removed = [line for line in lines if line.startswith("-") and not line.startswith("---")]
    added = [line for line in lines if line.startswith("+") and not line.startswith("+++")]
    assert removed == [
        '-Client -> Agent: request session/prompt "hello there"',
        '-Agent -> Client: notification session/update agent_message_chunk \u00d72 "hellothere"',
    ]
    assert added == [
        '+Client -> Agent: request session/prompt "goodbye now"',
        '+Agent -> Client: notification session/update agent_message_chunk \u00d72 "goodbyenow"',
        "+Agent -> Agent: stdout debug: done",
    ]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "acpio",
            "inspect",
            "--diff",
            str(tmp_path / "a.sqlite"),
            str(tmp_path / "b.sqlite"),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1
    assert done.stdout.splitlines()[3:] == lines[3:]
