"""MCP servers per session: a stdio server the client declares is started in the session's directory,
its tools offered to the model and used in a turn, stopped when the session closes, and connected again
when a new agent process loads the session."""

from __future__ import annotations

import sys
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
