"""AgentApp with a session store: sessions listed, loaded (history replayed, turns remember), resumed,
closed, and continued by a new app on the same SQLite file as after a restart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acpio.app import AgentApp, Turn
from acpio.store import MemoryStore, SessionStore, SqliteStore
from acpio.testing import WirePeer, serving

TIMEOUT = 10


def remembering_app(store: SessionStore | str) -> AgentApp:
    app = AgentApp("memo", store=store)
    app.mode("ask", "Ask")
    app.mode("code", "Code")

    @app.prompt
    async def answer(turn: Turn) -> None:
        earlier = ", ".join(e.reply for e in turn.history)
        await turn.say(f"{turn.text} (mode {turn.mode}; before: {earlier or 'nothing'})")

    return app


async def initialize(peer: WirePeer) -> Any:
    request = peer.request("initialize", {"protocolVersion": 1})
    return (await peer.response_to(request))["result"]


def prompt(peer: WirePeer, session_id: str, text: str) -> Any:
    return peer.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )


async def said(peer: WirePeer, request_id: Any) -> str:
    seen: list[Any] = []
    answer = await peer.response_to(request_id, seen)
    assert answer["result"] == {"stopReason": "end_turn"}
    updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")


async def test_a_stored_session_is_loaded_on_a_new_app_with_its_history_and_mode(tmp_path: Path) -> None:
    database = tmp_path / "sessions.db"
    async with serving(remembering_app(SqliteStore(database)).builder(), timeout=TIMEOUT) as peer:
        capabilities = (await initialize(peer))["agentCapabilities"]
        assert capabilities["loadSession"] is True
        assert set(capabilities["sessionCapabilities"]) >= {"list", "resume", "close", "delete"}
        new = peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session = (await peer.response_to(new))["result"]["sessionId"]
        assert await said(peer, prompt(peer, session, "one")) == "one (mode ask; before: nothing)"
        changed = peer.request("session/set_mode", {"sessionId": session, "modeId": "code"})
        await peer.response_to(changed)
        assert (
            await said(peer, prompt(peer, session, "two"))
            == "two (mode code; before: one (mode ask; before: nothing))"
        )

    # a new process, as it were: a new app on the same file
    async with serving(remembering_app(f"sqlite:///{database}").builder(), timeout=TIMEOUT) as peer:
        await initialize(peer)
        listed = peer.request("session/list", {})
        assert [s["sessionId"] for s in (await peer.response_to(listed))["result"]["sessions"]] == [session]
        load = peer.request("session/load", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []})
        replayed: list[Any] = []
        loaded = await peer.response_to(load, replayed)
        assert loaded["result"]["modes"]["currentModeId"] == "code"
        kinds = [
            (m["params"]["update"]["sessionUpdate"], m["params"]["update"]["content"]["text"])
            for m in replayed
        ]
        assert kinds == [
            ("user_message_chunk", "one"),
            ("agent_message_chunk", "one (mode ask; before: nothing)"),
            ("user_message_chunk", "two"),
            ("agent_message_chunk", "two (mode code; before: one (mode ask; before: nothing))"),
        ]
        third = await said(peer, prompt(peer, session, "three"))
        assert third.startswith("three (mode code; before: one (mode ask; before: nothing), two (mode code;")


async def test_resume_does_not_replay_and_closing_ends_the_session_here(tmp_path: Path) -> None:
    store = MemoryStore()
    async with serving(remembering_app(store).builder(), timeout=TIMEOUT) as peer:
        await initialize(peer)
        new = peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session = (await peer.response_to(new))["result"]["sessionId"]
        await said(peer, prompt(peer, session, "hello"))
        close = peer.request("session/close", {"sessionId": session})
        assert (await peer.response_to(close))["result"] == {}
        refused = await peer.response_to(prompt(peer, session, "again"))
        assert refused["error"]["code"] == -32002
        resume = peer.request(
            "session/resume", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []}
        )
        seen: list[Any] = []
        await peer.response_to(resume, seen)
        assert seen == []  # nothing replayed
        assert (
            await said(peer, prompt(peer, session, "back"))
            == "back (mode ask; before: hello (mode ask; before: nothing))"
        )


async def test_a_session_loaded_on_another_connection_moves_there(tmp_path: Path) -> None:
    app = remembering_app(MemoryStore())
    async with (
        serving(app.builder(), timeout=TIMEOUT) as first,
        serving(app.builder(), timeout=TIMEOUT) as second,
    ):
        await initialize(first)
        await initialize(second)
        new = first.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session = (await first.response_to(new))["result"]["sessionId"]
        await said(first, prompt(first, session, "on first"))
        load = second.request("session/load", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []})
        await second.response_to(load)
        assert (await first.response_to(prompt(first, session, "x")))["error"]["code"] == -32002
        assert (await said(second, prompt(second, session, "on second"))).startswith(
            "on second (mode ask; before: on first"
        )


def commanding_app(store: SessionStore | str, *commands: str) -> AgentApp:
    """An app with slash commands and a mode and option a turn may change: ``/mode ID``, ``/tone VALUE``."""
    app = AgentApp("commands", store=store)
    for command in commands:
        app.command(command, f"the {command} command")
    app.mode("ask", "Ask")
    app.mode("read-only", "Read only")
    app.select_option("tone", "Tone", {"plain": "Plain", "terse": "Terse"}, default="plain")

    @app.prompt
    async def answer(turn: Turn) -> None:
        command = turn.command
        if command is not None and command.name == "mode":
            await turn.set_mode(command.input)
        elif command is not None and command.name == "tone":
            await turn.set_option("tone", command.input)
        await turn.say(f"mode {turn.mode}, tone {turn.options['tone']}")

    return app


async def load(peer: WirePeer, session: str, cwd: Path) -> tuple[Any, list[Any], list[Any]]:
    """``session/load``: its answer, what came before it, and what came after it before the next answer."""
    request = peer.request("session/load", {"sessionId": session, "cwd": str(cwd), "mcpServers": []})
    before: list[Any] = []
    answer = await peer.response_to(request, before)
    after: list[Any] = []
    await peer.response_to(peer.request("session/list", {}), after)
    return answer, before, after


def command_lists(messages: list[Any]) -> list[list[str]]:
    updates = [m["params"]["update"] for m in messages if m.get("method") == "session/update"]
    return [
        [c["name"] for c in u["availableCommands"]]
        for u in updates
        if u["sessionUpdate"] == "available_commands_update"
    ]


async def test_nothing_of_a_loaded_session_follows_the_load_answer(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'sessions.db'}"
    async with serving(commanding_app(database, "mode", "tone").builder(), timeout=TIMEOUT) as peer:
        await initialize(peer)
        new = peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session = (await peer.response_to(new))["result"]["sessionId"]
        assert command_lists([await peer.message_for("session/update")]) == [["mode", "tone"]]  # new: after
        await said(peer, prompt(peer, session, "hello"))

    for _ in range(2):  # the same commands: the replay has them, and stays one list long
        async with serving(commanding_app(database, "mode", "tone").builder(), timeout=TIMEOUT) as peer:
            await initialize(peer)
            answer, before, after = await load(peer, session, tmp_path)
            assert "result" in answer
            assert after == []
            assert command_lists(before) == [["mode", "tone"]]

    # commands changed since: the new list comes with the replay, before the answer, and is kept
    for lists in (
        [["mode", "tone"], ["mode", "tone", "review"]],
        [["mode", "tone"], ["mode", "tone", "review"]],
    ):
        async with serving(
            commanding_app(database, "mode", "tone", "review").builder(), timeout=TIMEOUT
        ) as peer:
            await initialize(peer)
            answer, before, after = await load(peer, session, tmp_path)
            assert after == []
            assert command_lists(before) == lists


async def test_a_mode_and_option_a_turn_sets_are_restored_by_a_new_process(tmp_path: Path) -> None:
    database = f"sqlite:///{tmp_path / 'sessions.db'}"
    async with serving(commanding_app(database, "mode", "tone").builder(), timeout=TIMEOUT) as peer:
        await initialize(peer)
        new = peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session = (await peer.response_to(new))["result"]["sessionId"]
        assert await said(peer, prompt(peer, session, "/mode read-only")) == "mode read-only, tone plain"
        assert await said(peer, prompt(peer, session, "/tone terse")) == "mode read-only, tone terse"

    async with serving(commanding_app(database, "mode", "tone").builder(), timeout=TIMEOUT) as peer:
        await initialize(peer)
        answer, _, _ = await load(peer, session, tmp_path)
        assert answer["result"]["modes"]["currentModeId"] == "read-only"
        tone = next(o for o in answer["result"]["configOptions"] if o["id"] == "tone")
        assert tone["currentValue"] == "terse"
        assert await said(peer, prompt(peer, session, "again")) == "mode read-only, tone terse"
