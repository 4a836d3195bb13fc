"""``make demo`` (scripts/demo.py): the conversation runs end to end and leaves a readable trace; the
reference agent edits a file, and a second process continues its session from SQLite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_the_demo_shows_every_feature_and_writes_a_trace(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsons"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "demo.py"), "--trace", str(trace)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    for expected in (
        "(thinking) The user wants a tour",  # a thought
        "> Hello! I am testy",  # streamed text, quoted by the arrow proxy
        "  [x] Read the notes",  # a plan, updated
        "[completed] Read notes.txt (read)",  # a file read
        "[permission] Edit notes.txt: Allow once (allow-once)",  # a permission
        "    +- try acpio",  # the diff of the write
        "    [exit status 0]",  # a terminal command
        "[stop reason: end_turn]",
        f"acpio trace view {trace}",
    ):
        assert expected in out, f"{expected!r} missing from:\n{out}"
    # the reference agent with its offline model: a turn, then the same session in a new process
    agent = out[out.index("=== The reference agent") :]
    first, _, second = agent.partition("=== A new agent process continues session")
    for expected in (
        "(thinking) The notes need one more line",
        "[completed] Read notes.txt (read)",
        "[permission] Edit notes.txt: Allow (allow)",
        "    +- try the reference agent",
        "[stop reason: end_turn]",
    ):
        assert expected in first, f"{expected!r} missing from:\n{first}"
    assert "loaded from .sessions.db" in second
    history, _, turn = second.partition("--- end of history ---")
    assert "you> read notes.txt" in history  # the first process's turn, replayed by the second
    assert "Still here, after a restart." in turn
    assert turn.rstrip().endswith("[stop reason: end_turn]")
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert [lane["lane"] for lane in events[0]["lanes"]] == ["Client", "Proxy(0)", "Agent"]
    hops = {(e["from"], e["to"], e.get("method")) for e in events[1:]}
    assert ("Agent", "Proxy(0)", "fs/read_text_file") in hops
    assert ("Proxy(0)", "Client", "session/request_permission") in hops
