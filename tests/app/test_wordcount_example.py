"""The high-level API's example agent (examples/wordcount_agent.py), driven by the real ``acpio prompt``.

``--allow`` writes count.txt through the client; ``--deny`` leaves it unwritten; ``--json`` shows the
wire: agentInfo, the streamed text, the tool call's life and the permission asked. On the wire, with
a client of no file system, it offers no write; with one that refuses the write, the turn goes on.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from acpio import AgentApp
from acpio.testing import serving

from ._wire import open_session, send_prompt

ROOT = Path(__file__).resolve().parents[2]
AGENT = shlex.join([sys.executable, str(ROOT / "examples" / "wordcount_agent.py")])
TIMEOUT = 60


def prompt(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ACPIO_AGENT", "NO_COLOR")}
    return subprocess.run(
        [sys.executable, "-m", "acpio", "prompt", "--agent", AGENT, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        check=False,
    )


def test_the_example_is_at_most_25_lines_of_code() -> None:
    source = (ROOT / "examples" / "wordcount_agent.py").read_text()
    code = source.split('"""', 2)[2]  # after the module docstring
    assert len([line for line in code.splitlines() if line.strip()]) <= 25


def test_allowed_it_says_the_count_and_writes_the_file(tmp_path: Path) -> None:
    done = prompt(tmp_path, "--allow", "count these four words")
    assert done.returncode == 0, done.stderr
    assert "Your prompt has 4 words." in done.stdout
    assert (tmp_path / "count.txt").read_text() == "4\n"


def test_denied_it_writes_nothing(tmp_path: Path) -> None:
    done = prompt(tmp_path, "--deny", "two words")
    assert done.returncode == 0, done.stderr
    assert "Your prompt has 2 words." in done.stdout
    assert not (tmp_path / "count.txt").exists()


def test_the_wire_of_an_allowed_turn(tmp_path: Path) -> None:
    done = prompt(tmp_path, "--allow", "--json", "one two three")
    assert done.returncode == 0, done.stderr
    frames: list[dict[str, Any]] = [json.loads(line) for line in done.stdout.splitlines()]
    received = [f["message"] for f in frames if f["direction"] == "recv"]
    initialized = next(m for m in received if m.get("id") == 1)["result"]
    assert initialized["agentInfo"] == {"name": "wordcount", "version": "1.0"}
    updates = [m["params"]["update"] for m in received if m.get("method") == "session/update"]
    assert updates[0] == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "Your prompt has 3 words."},
    }
    call = updates[1]
    assert (call["sessionUpdate"], call["title"], call["kind"], call["status"]) == (
        "tool_call",
        "Write count.txt",
        "edit",
        "pending",
    )
    asked = next(m for m in received if m.get("method") == "session/request_permission")["params"]
    assert asked["toolCall"]["toolCallId"] == call["toolCallId"]
    assert [(o["name"], o["kind"]) for o in asked["options"]] == [
        ("Write", "allow_once"),
        ("Skip", "reject_once"),
    ]
    written = next(m for m in received if m.get("method") == "fs/write_text_file")["params"]
    assert (written["path"], written["content"]) == (str(tmp_path / "count.txt"), "3\n")
    assert updates[-1] == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": call["toolCallId"],
        "status": "completed",
    }
    answer = received[-1]
    assert answer["result"] == {"stopReason": "end_turn"}


def example_app() -> AgentApp:
    spec = importlib.util.spec_from_file_location(
        "wordcount_example", ROOT / "examples" / "wordcount_agent.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app: AgentApp = module.app
    return app


async def test_a_client_without_a_file_system_is_offered_no_write(tmp_path: Path) -> None:
    async with serving(example_app().builder(), timeout=TIMEOUT) as peer:
        session = await open_session(peer, tmp_path, {})
        seen: list[Any] = []
        answer = await peer.response_to(send_prompt(peer, session, "two words"), seen)
        assert answer["result"] == {"stopReason": "end_turn"}
        assert [m.get("method") for m in seen] == ["session/update"]
        assert seen[0]["params"]["update"]["content"]["text"] == "Your prompt has 2 words."


async def test_a_refused_write_fails_the_tool_call_and_the_turn_goes_on(tmp_path: Path) -> None:
    writes = {"fs": {"readTextFile": True, "writeTextFile": True}}
    async with serving(example_app().builder(), timeout=TIMEOUT) as peer:
        session = await open_session(peer, tmp_path, writes)
        turn = send_prompt(peer, session, "one two three")
        asked = await peer.message_for("session/request_permission")
        peer.respond(
            asked, {"outcome": {"outcome": "selected", "optionId": asked["params"]["options"][0]["optionId"]}}
        )
        write = await peer.message_for("fs/write_text_file")
        peer.send({"jsonrpc": "2.0", "id": write["id"], "error": {"code": -32603, "message": "Disk full"}})
        seen: list[Any] = []
        answer = await peer.response_to(turn, seen)
        assert answer["result"] == {"stopReason": "end_turn"}
        final = seen[-1]["params"]["update"]
        assert (final["sessionUpdate"], final["status"]) == ("tool_call_update", "failed")
        assert final["toolCallId"] == asked["params"]["toolCall"]["toolCallId"]
        assert "Disk full" in final["content"][0]["content"]["text"]
