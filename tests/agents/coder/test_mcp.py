"""MCP servers per session: a stdio server the client declares is started in the session's directory,
its tools offered to the model and used in a turn, stopped when the session closes, and connected again
when a new agent process loads the session."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from pathlib import Path

from acpio.store import SqliteStore

from ._support import editor, options

SERVER = Path(__file__).with_name("mcp_notes_server.py")


def stdio_server(tag: str) -> dict[str, object]:
    return {
        "name": "notes",
        "command": sys.executable,
        "args": [str(SERVER)],
        "env": [{"name": "NOTES_TAG", "value": tag}],
    }


async def test_a_stdio_mcp_server_tool_is_used_in_a_turn(tmp_path: Path) -> None:
    database = tmp_path / "sessions.db"
    async with editor(options(tmp_path, store=SqliteStore(database))) as client:
        session = await client.session(tmp_path, mcp=[stdio_server("t1")])
        turn = await client.prompt(session, 'call notes__add {"text": "first"}\ncall notes__fail {}')
        assert turn.stop_reason == "end_turn"
        [add, fail] = turn.kinds("tool_call")
        assert fail["title"] == "notes: fail"
        assert add["title"] == "notes: add"
        assert add["rawInput"] == {"text": "first"}
        assert "- notes__add: 1 note(s); tag t1" in turn.text
        assert "- notes__fail: failed:" in turn.text
        assert (tmp_path / "notes.log").read_text() == "first\n"  # run in the session's directory
        # the same server process for the next turn of the session
        again = await client.prompt(session, 'call notes__add {"text": "second"}')
        assert "- notes__add: 2 note(s); tag t1" in again.text
        closed = await client.call("session/close", {"sessionId": session})
        assert closed["result"] == {}

    # another agent process loads the session with the server the client gives again: reconnected
    async with editor(options(tmp_path, store=SqliteStore(database))) as client:
        params = {"sessionId": session, "cwd": str(tmp_path), "mcpServers": [stdio_server("t2")]}
        assert "result" in await client.call("session/load", params)
        loaded = await client.prompt(session, 'call notes__add {"text": "third"}')
        assert "- notes__add: 3 note(s); tag t2" in loaded.text


async def test_an_mcp_server_that_does_not_start_is_reported_and_the_turn_goes_on(tmp_path: Path) -> None:
    broken = {"name": "broken", "command": str(tmp_path / "missing-program"), "args": [], "env": []}
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path, mcp=[broken])
        turn = await client.prompt(session, "call broken__x {}\nsay still here")
    assert "MCP server 'broken' is unavailable" in turn.thoughts
    assert "(the tool broken__x is not available here)" in turn.text
    assert "still here" in turn.text


SILENT = """
import os, sys, time
with open(sys.argv[1], "w") as out:
    out.write(str(os.getpid()))
time.sleep(120)  # started, but never answers MCP's initialize
"""


async def test_an_mcp_server_that_never_answers_costs_its_tools_not_the_turn(tmp_path: Path) -> None:
    script, pid_file = tmp_path / "silent.py", tmp_path / "silent.pid"
    script.write_text(SILENT)
    silent = {"name": "silent", "command": sys.executable, "args": [str(script), str(pid_file)], "env": []}
    async with editor(options(tmp_path, mcp_connect_timeout=0.5)) as client:
        session = await client.session(tmp_path, mcp=[silent])
        turn = await client.prompt(session, "say still here")
        assert turn.stop_reason == "end_turn"
        assert "still here" in turn.text
        assert "MCP server 'silent' did not finish connecting within 0.5 s" in turn.thoughts
        pid = int(pid_file.read_text())
        # closing the session ends the server it was still waiting for (it did not hang on it)
        closed = await asyncio.wait_for(client.call("session/close", {"sessionId": session}), 15)
        assert closed["result"] == {}
    deadline = time.monotonic() + 15
    while _alive(pid):
        assert time.monotonic() < deadline, "the MCP server's process outlived its session"
        await asyncio.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(") ")[-1].startswith("Z"))
