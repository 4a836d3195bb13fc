"""The reference agent's turns with the offline model: tools through the client's files, permissions
per mode, files confined to the session, stop reasons, modality checks, cancellation, slash commands
and compaction, and option changes seen by the next turn."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

from ._support import FS, editor, options

IMAGE = {"type": "image", "data": base64.b64encode(b"\x89PNG....").decode(), "mimeType": "image/png"}


async def test_a_turn_reads_and_edits_through_the_client_with_a_permission(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("# Notes\n- buy milk\n")
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        turn = await client.prompt(
            session,
            "think I should read first\nplan Read; Edit\nread notes.txt\n"
            "edit notes.txt: - buy milk => - buy milk\\n- try acpio",
        )
    assert turn.stop_reason == "end_turn"
    assert (tmp_path / "notes.txt").read_text() == "# Notes\n- buy milk\n- try acpio\n"
    methods = [r["method"] for r in turn.requests]
    assert methods == [
        "fs/read_text_file",
        "fs/read_text_file",
        "session/request_permission",
        "fs/write_text_file",
    ]
    assert turn.thoughts == "I should read first"
    [plan] = turn.kinds("plan")
    assert [(e["content"], e["status"]) for e in plan["entries"]] == [
        ("Read", "in_progress"),
        ("Edit", "pending"),
    ]
    edit = next(c for c in turn.kinds("tool_call") if c["title"] == "Edit notes.txt")
    assert edit["kind"] == "edit"
    assert edit["locations"] == [{"path": str(tmp_path / "notes.txt")}]
    diff = next(
        u
        for u in turn.kinds("tool_call_update")
        if u.get("content") and u["toolCallId"] == edit["toolCallId"]
    )
    assert diff["content"][0] == {
        "type": "diff",
        "path": str(tmp_path / "notes.txt"),
        "oldText": "# Notes\n- buy milk\n",
        "newText": "# Notes\n- buy milk\n- try acpio\n",
    }
    permission = turn.requests[2]["params"]
    assert permission["toolCall"]["toolCallId"] == edit["toolCallId"]
    usage = turn.kinds("usage_update")
    assert usage
    assert all(u["size"] == 32000 and u["used"] > 0 for u in usage)
    assert turn.text.endswith("- edit_file: Edited notes.txt")


async def test_a_rejected_edit_leaves_the_file_and_the_model_hears_it(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("old\n")
    async with editor(options(tmp_path), permission="reject") as client:
        session = await client.session(tmp_path)
        turn = await client.prompt(session, "write a.txt: new")
    assert (tmp_path / "a.txt").read_text() == "old\n"
    failed = [u for u in turn.kinds("tool_call_update") if u.get("status") == "failed"]
    assert failed
    assert "the user rejected this call" in failed[0]["rawOutput"]
    assert "write_file: failed: the user rejected" in turn.text


async def test_modes_decide_permissions_and_tools(tmp_path: Path) -> None:
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        await client.call("session/set_mode", {"sessionId": session, "modeId": "auto-edit"})
        turn = await client.prompt(session, "write b.txt: hello")
        assert (tmp_path / "b.txt").read_text() == "hello"
        assert [r["method"] for r in turn.requests] == ["fs/write_text_file"]  # no permission asked

        await client.call("session/set_mode", {"sessionId": session, "modeId": "read-only"})
        turn = await client.prompt(session, "write b.txt: changed")
        assert (tmp_path / "b.txt").read_text() == "hello"
        assert "(the tool write_file is not available here)" in turn.text
        assert turn.kinds("tool_call") == []


async def test_without_client_files_the_agent_stays_inside_the_session_directories(tmp_path: Path) -> None:
    project, other = tmp_path / "project", tmp_path / "other"
    project.mkdir()
    other.mkdir()
    (other / "x.txt").write_text("secret")
    async with editor(options(tmp_path, mode="auto-edit"), capabilities={}) as client:
        session = await client.session(project)
        turn = await client.prompt(session, "write new.txt: made on disk\nread ../other/x.txt")
    assert (project / "new.txt").read_text() == "made on disk"
    assert turn.requests == []  # neither fs request: the client offers none
    assert "read_file: failed: ../other/x.txt is outside the session's directories" in turn.text


async def test_stop_reasons(tmp_path: Path) -> None:
    (tmp_path / "user-settings.toml").write_text("max_turn_requests = 3\n")
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        assert (await client.prompt(session, "long")).stop_reason == "max_tokens"
        assert (await client.prompt(session, "refuse")).stop_reason == "refusal"
        looped = await client.prompt(session, "loop")
        assert looped.stop_reason == "max_turn_requests"
        assert len(looped.kinds("tool_call")) == 3
        assert (await client.prompt(session, "hello")).stop_reason == "end_turn"


async def test_every_selected_model_must_accept_the_prompt_s_modalities(tmp_path: Path) -> None:
    (tmp_path / "user-settings.toml").write_text(
        '[[modes]]\nid = "solo"\nname = "Solo"\n'
        '[[modes]]\nid = "pair"\nname = "Pair"\nmodel = "offline/coder,offline/text"\n'
    )
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        seen = await client.prompt(session, [{"type": "text", "text": "look"}, IMAGE])
        assert seen.stop_reason == "end_turn"
        assert seen.text.startswith("I received an image (image/png")

        await client.call("session/set_mode", {"sessionId": session, "modeId": "pair"})
        refused = await client.prompt(session, [{"type": "text", "text": "look"}, IMAGE])
        error = refused.answer["error"]
        assert error["code"] == -32602
        assert error["message"].startswith("The model offline/text does not accept image input")
        assert error["data"] == {"models": ["offline/text"], "modality": "image"}
        audio = {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
        refused = await client.prompt(session, [audio])
        assert refused.answer["error"]["data"] == {"models": ["offline/text"], "modality": "audio"}
        # text alone goes to both models in turn
        assert (await client.prompt(session, "hello")).stop_reason == "end_turn"


async def test_a_changed_option_is_used_by_the_next_turn(tmp_path: Path) -> None:
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        assert (await client.prompt(session, "hello")).thoughts == ""
        await client.call(
            "session/set_config_option",
            {"sessionId": session, "configId": "reasoning_effort", "value": "high"},
        )
        assert (await client.prompt(session, "hello")).thoughts == "Effort high: following 1 directive(s)."
        await client.call(
            "session/set_config_option", {"sessionId": session, "configId": "model", "value": "offline/text"}
        )
        turn = await client.prompt(session, "hello")
        assert turn.thoughts == ""  # the text model does not reason
        assert turn.kinds("usage_update")[-1]["size"] == 8000


async def _cancel_when(
    client: Any, session: str, prompt: str, method: str
) -> tuple[dict[str, Any], list[Any]]:
    request_id = client.peer.request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": prompt}]}
    )
    seen: list[Any] = []
    held = await client.peer.message_for(method, seen)
    client.peer.notify("session/cancel", {"sessionId": session})
    answer = await client.peer.response_to(request_id, seen)
    return answer, [held, *seen]


async def test_cancel_mid_tool_withdraws_the_client_request_and_fails_the_call(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a")
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        answer, seen = await _cancel_when(client, session, "read a.txt", "fs/read_text_file")
        assert answer["result"] == {"stopReason": "cancelled"}
        held = seen[0]
        cancels = [m for m in seen if m.get("method") == "$/cancel_request"]
        assert cancels
        assert cancels[0]["params"]["requestId"] == held["id"]
        ends = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
        assert {
            "sessionUpdate": "tool_call_update",
            "toolCallId": ends[-1]["toolCallId"],
            "status": "failed",
        } in ends
        # the session goes on, and the interrupted call is in the model's conversation
        assert (await client.prompt(session, "hello")).stop_reason == "end_turn"


async def test_cancel_while_permission_is_pending_and_while_the_model_streams(tmp_path: Path) -> None:
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        answer, seen = await _cancel_when(client, session, "write c.txt: x", "session/request_permission")
        assert answer["result"] == {"stopReason": "cancelled"}
        assert any(m.get("method") == "$/cancel_request" for m in seen)
        assert not (tmp_path / "c.txt").exists()

        request_id = client.peer.request(
            "session/prompt",
            {"sessionId": session, "prompt": [{"type": "text", "text": "say begin\nwait 30"}]},
        )
        await client.peer.message_for("session/update")
        client.peer.notify("session/cancel", {"sessionId": session})
        async with asyncio.timeout(5):  # not the 30 s the model would stream
            assert (await client.peer.response_to(request_id))["result"] == {"stopReason": "cancelled"}


async def test_help_lists_the_offline_directives_and_keeps_its_lists_apart(tmp_path: Path) -> None:
    async with editor(options(tmp_path)) as client:
        session = await client.session(tmp_path)
        helped = (await client.prompt(session, "/help")).text
    # a heading right under a list item would be read, as markdown, as the end of that item
    assert "\n\nModels:\n- offline/" in helped
    assert "\n\nModes:\n- " in helped
    assert "follow a directive on each line of your message" in helped
    assert "- `read PATH`: call `read_file`" in helped
    assert "- `run COMMAND`: call `run_command`" in helped


async def test_slash_commands(tmp_path: Path) -> None:
    async with editor(options(tmp_path), capabilities={**FS, "session": {"compaction": {}}}) as client:
        session = await client.session(tmp_path)
        helped = await client.prompt(session, "/help")
        assert "Commands: /help, /model [id], /mode [id], /compact." in helped.text
        assert "- offline/text: Offline text-only" in helped.text

        switched = await client.prompt(session, "/model offline/text")
        [update] = switched.kinds("config_option_update")
        assert {o["id"]: o["currentValue"] for o in update["configOptions"]}["model"] == "offline/text"
        assert "No model 'x'" in (await client.prompt(session, "/model x")).text

        moded = await client.prompt(session, "/mode read-only")
        assert moded.kinds("current_mode_update") == [
            {"sessionUpdate": "current_mode_update", "currentModeId": "read-only"}
        ]

        await client.prompt(session, "say remember the word banana")
        compacted = await client.prompt(session, "/compact")
        statuses = [u["status"] for u in compacted.kinds("compaction_update")]
        assert statuses == ["in_progress", "completed"]
        [chunk] = compacted.kinds("compaction_summary_chunk")
        summary = chunk["content"]["text"]
        assert summary.startswith("Summary of")
        assert "banana" in summary
        assert compacted.text == summary

        assert (await client.prompt(session, "/compact")).text == "Nothing to compact yet."
        # the conversation now starts from the summary: the earlier prompts are gone from it
        await client.prompt(session, "say hi")
        after = await client.prompt(session, "/compact")
        assert after.text.startswith("Summary of 4 messages (offline model): say hi | Summarise")
        assert "banana" not in after.text
