"""The reference agent's sessions: initialize, new (modes, models, options from the settings and
flags), set_mode/set_config_option validation, and load after a restart (selection, conversation,
history replayed before the answer)."""

from __future__ import annotations

from pathlib import Path

from acpio.store import SqliteStore

from ._support import FS, editor, options


async def test_initialize_advertises_sessions_models_and_mcp(tmp_path: Path) -> None:
    async with editor(options(tmp_path)) as client:
        answer = await client.initialize(FS)
    assert answer["agentInfo"]["name"] == "acpio-agent"
    capabilities = answer["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert set(capabilities["sessionCapabilities"]) >= {"list", "resume", "close", "delete"}
    assert capabilities["mcpCapabilities"] == {"http": True, "sse": True, "acp": True}
    # computed from the models: offline/coder takes images and audio
    assert capabilities["promptCapabilities"] == {"image": True, "audio": True, "embeddedContext": True}
    assert capabilities["auth"] == {"logout": {}}


async def test_prompt_capabilities_follow_the_available_models(tmp_path: Path) -> None:
    # only the text model: a mode needs none of the coder model
    (tmp_path / "user-settings.toml").write_text('model = "offline/text"\n')
    async with editor(options(tmp_path)) as client:
        answer = await client.initialize(FS)
        created = (await client.new(tmp_path))["result"]
    assert answer["agentCapabilities"]["promptCapabilities"]["image"] is True  # coder is still offered
    model = next(o for o in created["configOptions"] if o["id"] == "model")
    assert model["currentValue"] == "offline/text"


async def test_new_session_offers_modes_models_and_efforts_from_settings_and_flags(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".acpio").mkdir(parents=True)
    (project / ".acpio" / "agent.toml").write_text(
        '[[modes]]\nid = "plan"\nname = "Plan"\nedit = "deny"\nexecute = "deny"\n'
        '[[modes]]\nid = "build"\nname = "Build"\nedit = "allow"\nmodel = "offline/text"\n'
    )
    async with editor(options(tmp_path, mode="build")) as client:
        created = (await client.new(project))["result"]
        assert created["modes"]["currentModeId"] == "build"
        assert [m["id"] for m in created["modes"]["availableModes"]] == ["plan", "build"]
        values = {o["id"]: o["currentValue"] for o in created["configOptions"]}
        assert values == {"mode": "build", "model": "offline/text", "reasoning_effort": "default"}
        model = next(o for o in created["configOptions"] if o["id"] == "model")
        assert [c["value"] for c in model["options"]] == ["offline/coder", "offline/text"]
        categories = {o["id"]: o["category"] for o in created["configOptions"]}
        assert categories == {"mode": "mode", "model": "model", "reasoning_effort": "thought_level"}
        # the commands come right after the answer
        commands = await client.peer.message_for("session/update")
        names = [c["name"] for c in commands["params"]["update"]["availableCommands"]]
        assert names == ["help", "model", "mode", "compact"]


async def test_unknown_mode_and_model_are_refused_with_invalid_params(tmp_path: Path) -> None:
    async with editor(options(tmp_path, model="offline/nope")) as client:
        refused = await client.new(tmp_path)
    assert refused["error"]["code"] == -32602
    assert "offline/nope" in refused["error"]["message"]
    assert "offline/coder" in refused["error"]["message"]

    async with editor(options(tmp_path, mode="nope")) as client:
        assert (await client.new(tmp_path))["error"]["code"] == -32602

    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        for config_id, value in [("model", "openai/gpt-nope"), ("mode", "yolo"), ("reasoning_effort", "max")]:
            answer = await client.call(
                "session/set_config_option", {"sessionId": session, "configId": config_id, "value": value}
            )
            assert answer["error"]["code"] == -32602, (config_id, answer)
        answer = await client.call("session/set_mode", {"sessionId": session, "modeId": "yolo"})
        assert answer["error"]["code"] == -32602
        assert answer["error"]["data"]["modes"] == ["ask", "auto-edit", "read-only"]


async def test_mode_option_and_session_mode_stay_in_step(tmp_path: Path) -> None:
    (tmp_path / "user-settings.toml").write_text(
        '[[modes]]\nid = "ask"\nname = "Ask"\n'
        '[[modes]]\nid = "quick"\nname = "Quick"\nmodel = "offline/text"\n'
    )
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        seen: list[dict[str, object]] = []
        answer = await client.call(
            "session/set_config_option", {"sessionId": session, "configId": "mode", "value": "quick"}, seen
        )
        values = {o["id"]: o["currentValue"] for o in answer["result"]["configOptions"]}
        assert values["mode"] == "quick"
        assert values["model"] == "offline/text"  # the mode's own model
        updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
        assert {"sessionUpdate": "current_mode_update", "currentModeId": "quick"} in updates

        seen.clear()
        await client.call("session/set_mode", {"sessionId": session, "modeId": "ask"}, seen)
        [refresh] = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
        assert refresh["sessionUpdate"] == "config_option_update"
        assert {o["id"]: o["currentValue"] for o in refresh["configOptions"]}["mode"] == "ask"


async def test_a_loaded_session_keeps_its_selection_and_conversation_after_a_restart(tmp_path: Path) -> None:
    database = tmp_path / "sessions.db"
    (tmp_path / "notes.txt").write_text("one\n")
    async with editor(options(tmp_path, store=SqliteStore(database))) as client:
        session = await client.session(tmp_path)
        await client.call(
            "session/set_config_option", {"sessionId": session, "configId": "model", "value": "offline/text"}
        )
        await client.call("session/set_mode", {"sessionId": session, "modeId": "auto-edit"})
        first = await client.prompt(session, "read notes.txt\nsay first turn")
        assert first.stop_reason == "end_turn"

    async with editor(options(tmp_path, store=f"sqlite:///{database}")) as client:
        listed = await client.call("session/list", {})
        assert [s["sessionId"] for s in listed["result"]["sessions"]] == [session]
        replay: list[dict[str, object]] = []
        loaded = await client.call(
            "session/load", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []}, replay
        )
        assert loaded["result"]["modes"]["currentModeId"] == "auto-edit"
        values = {o["id"]: o["currentValue"] for o in loaded["result"]["configOptions"]}
        assert values["model"] == "offline/text"
        assert values["mode"] == "auto-edit"
        kinds = [
            m["params"]["update"]["sessionUpdate"] for m in replay if m.get("method") == "session/update"
        ]
        assert kinds.index("user_message_chunk") < kinds.index("tool_call")  # the history, before the answer
        # the conversation is the model's again: its first call of this turn is the first of the turn
        second = await client.prompt(session, "read notes.txt")
        [call] = second.kinds("tool_call")
        assert call["title"] == "Read notes.txt"
        assert second.text == "Done. Tool results:\n- read_file: one"


async def test_a_mode_chosen_with_a_command_is_the_mode_after_a_restart(tmp_path: Path) -> None:
    """``/mode read-only`` locks the session read-only; a new process must not give write access back."""
    database = tmp_path / "sessions.db"
    async with editor(options(tmp_path, store=SqliteStore(database))) as client:
        session = await client.session(tmp_path)
        assert "Mode: Read only" in (await client.prompt(session, "/mode read-only")).text

    async with editor(options(tmp_path, store=f"sqlite:///{database}")) as client:
        loaded = await client.call(
            "session/load", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []}
        )
        assert loaded["result"]["modes"]["currentModeId"] == "read-only"
        values = {o["id"]: o["currentValue"] for o in loaded["result"]["configOptions"]}
        assert values["mode"] == "read-only"


async def test_a_forked_session_goes_on_from_the_same_conversation(tmp_path: Path) -> None:
    async with editor(options(tmp_path, unstable=True)) as client:
        session = await client.session(tmp_path)
        await client.call("session/set_mode", {"sessionId": session, "modeId": "read-only"})
        await client.prompt(session, "say the original turn")
        forked = await client.call(
            "session/fork", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []}
        )
        fork = forked["result"]["sessionId"]
        assert fork != session
        assert forked["result"]["modes"]["currentModeId"] == "read-only"
        summary = await client.prompt(fork, "/compact")
        assert "the original turn" in summary.text  # the fork's model sees the parent's turns
