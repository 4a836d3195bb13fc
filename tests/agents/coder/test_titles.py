"""The reference agent titles a session after its first prompt: the client is told, session/list shows it."""

from __future__ import annotations

from pathlib import Path

from ._support import editor, options


def titles(turn: object) -> list[str]:
    return [u["title"] for u in turn.kinds("session_info_update")]  # type: ignore[attr-defined]


async def test_the_first_prompt_titles_the_session_and_session_list_shows_the_title(tmp_path: Path) -> None:
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        command = await client.prompt(session, "/mode")  # a slash command names nothing
        first = await client.prompt(session, "say Fix   the parser\nand the tests too")
        second = await client.prompt(session, "say Something else")
        listed = await client.call("session/list", {"cwd": str(tmp_path)})
        replayed: list[dict[str, object]] = []
        await client.call(
            "session/load", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []}, replayed
        )
    assert titles(command) == []
    assert titles(first) == ["say Fix the parser"]
    assert titles(second) == []
    assert [s.get("title") for s in listed["result"]["sessions"]] == ["say Fix the parser"]
    updates = [m["params"]["update"] for m in replayed if m.get("method") == "session/update"]
    assert {"sessionUpdate": "session_info_update", "title": "say Fix the parser"} in updates


async def test_a_long_first_line_is_cut_at_a_word(tmp_path: Path) -> None:
    words = "say " + " ".join(["refactor"] * 12)
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        (title,) = titles(await client.prompt(session, words))
    assert title == "say " + " ".join(["refactor"] * 6) + "…"
    assert len(title) <= 60


async def test_a_title_the_client_set_is_kept(tmp_path: Path) -> None:
    async with editor(options(tmp_path, unstable=True)) as client:
        session = await client.session(tmp_path)
        await client.call("session/set_title", {"sessionId": session, "title": "Parser work"})
        turn = await client.prompt(session, "say Fix the parser")
        listed = await client.call("session/list", {})
    assert titles(turn) == []
    assert [s.get("title") for s in listed["result"]["sessions"]] == ["Parser work"]
