"""``acpio testy --protocol 2``: the v2 wire of each part of its language, in-process, raw frames.

Each test drives testy's v2 builder (behind the version router, as the CLI serves it) with a raw v2
client (:mod:`tests.agents._testy_v2_support`) and checks what a v2 client sees: the prompt's
acknowledgement and state updates, message ids, tool-call upserts and their cancellation, agent
terminals, structured diffs, permission subjects, plans, replay, and the refusals.
"""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest

from acpio.agents.testy import TestyOptions
from tests.agents._testy_v2_support import V2Peer, v2_testy


async def started(peer: V2Peer, cwd: Path) -> str:
    await peer.initialize()
    return await peer.new_session(str(cwd))


async def test_initialize_answers_v2_shapes_and_refuses_v1_with_32022(tmp_path: Path) -> None:
    async with v2_testy() as peer:
        refused = await peer.call("initialize", {"protocolVersion": 1})
        assert refused["error"]["code"] == -32022
        assert refused["error"]["data"] == {"requested": 1, "supported": [2]}
        result = await peer.initialize()
    assert result["protocolVersion"] == 2
    assert result["info"]["name"] == "acpio-testy"
    session = result["capabilities"]["session"]  # every marker an object
    assert session["prompt"] == {"image": {}, "audio": {}, "embeddedContext": {}}
    assert session["mcp"] == {"stdio": {}, "http": {}}
    assert session["delete"] == {}
    assert "authMethods" not in result


async def test_a_turn_is_acknowledged_then_told_by_state_updates_with_message_ids(tmp_path: Path) -> None:
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)
        turn = await peer.turn(session, "echo hello there")
    user_id = turn.answer["result"]["messageId"]
    assert turn.kinds() == [
        "user_message",
        "state_update:running",
        *["agent_message_chunk"] * 3,
        "state_update:idle",
    ]
    assert turn.updates[0] == {
        "sessionUpdate": "user_message",
        "messageId": user_id,
        "content": [{"type": "text", "text": "echo hello there"}],
    }
    chunks = turn.of("agent_message_chunk")
    assert {chunk["messageId"] for chunk in chunks} == {chunks[0]["messageId"]} != {user_id}
    assert turn.text() == "hello there\n"
    assert turn.updates[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}


async def test_work_is_a_tool_call_the_client_cancels_with_tool_call_cancel(tmp_path: Path) -> None:
    cancels: list[int] = []
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)

        def cancel(message: dict[str, Any]) -> None:
            update = message.get("params", {}).get("update", {})
            if update.get("capabilities") == {"cancel": {}} and update.get("status") == "in_progress":
                cancels.append(
                    peer.request(
                        "tool_call/cancel", {"sessionId": session, "toolCallId": update["toolCallId"]}
                    )
                )

        turn = await peer.turn(session, "work 30 compile everything\necho after", on_message=cancel)
        unknown = await peer.call("tool_call/cancel", {"sessionId": session, "toolCallId": "tool-1"})
    calls = turn.of("tool_call_update")
    assert calls[0] == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "tool-1",
        "title": "compile everything",
        "kind": "other",
        "status": "in_progress",
        "capabilities": {"cancel": {}},
    }
    assert calls[-1]["status"] == "cancelled"
    assert {"jsonrpc": "2.0", "id": cancels[0], "result": {}} in turn.messages  # accepted
    assert turn.text() == "work: compile everything was cancelled\nafter\n"
    assert turn.updates[-1]["stopReason"] == "end_turn"  # a cancelled tool call does not end the turn
    assert unknown["error"]["code"] == -32602  # ended: no longer cancellable
    assert "nothing to cancel" in unknown["error"]["message"]


async def test_run_is_an_agent_terminal_streamed_and_ended_with_its_exit_status(tmp_path: Path) -> None:
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)
        turn = await peer.turn(session, "run sh -c 'echo built; exit 3'")
    terminals = turn.of("terminal_update")
    assert terminals[0] == {
        "sessionUpdate": "terminal_update",
        "terminalId": "terminal-1",
        "command": "sh -c 'echo built; exit 3'",
        "cwd": str(tmp_path),
        "capabilities": {"cancel": {}},
    }
    chunks = turn.of("terminal_output_chunk")
    assert b"".join(base64.b64decode(c["data"]) for c in chunks) == b"built\n"
    assert terminals[-1]["exitStatus"] == {"exitCode": 3}
    assert base64.b64decode(terminals[-1]["output"]["data"]) == b"built\n"
    call = turn.of("tool_call_update")
    assert call[0]["kind"] == "execute"
    assert {"type": "terminal", "terminalId": "terminal-1"} in call[1]["content"]
    assert call[-1]["status"] == "failed"
    assert turn.text() == "built\nexit status 3\n"


async def test_terminal_cancel_kills_the_command(tmp_path: Path) -> None:
    answers: list[int] = []
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)

        def cancel(message: dict[str, Any]) -> None:
            update = message.get("params", {}).get("update", {})
            if update.get("sessionUpdate") == "terminal_update" and "capabilities" in update:
                params = {"sessionId": session, "terminalId": update["terminalId"]}
                answers.append(peer.request("terminal/cancel", params))

        turn = await peer.turn(session, "run sleep 30", on_message=cancel)
        again = await peer.call("terminal/cancel", {"sessionId": session, "terminalId": "terminal-1"})
    assert turn.of("terminal_update")[-1]["exitStatus"] == {"signal": "SIGKILL"}
    assert turn.text() == "signal SIGKILL\n"
    assert turn.of("tool_call_update")[-1]["status"] == "failed"
    assert again["error"]["code"] == -32602


async def test_write_shows_changes_and_a_git_patch(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("old line\n")
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)
        turn = await peer.turn(session, "write notes.txt new line\\n\nwrite fresh.txt hi")
    assert (tmp_path / "notes.txt").read_text() == "new line\n"
    modify, add = (u["content"][0] for u in turn.of("tool_call_update") if u.get("status") == "completed")
    path = str(tmp_path / "notes.txt")
    assert modify["changes"] == [{"operation": "modify", "path": path, "fileType": "text"}]
    assert modify["patch"]["format"] == "git_patch"
    assert modify["patch"]["text"] == (
        f"diff --git a{path} b{path}\n--- a{path}\n+++ b{path}\n@@ -1 +1 @@\n-old line\n+new line\n"
    )
    assert add["changes"][0]["operation"] == "add"
    assert "new file mode 100644\n--- /dev/null\n" in add["patch"]["text"]
    assert add["patch"]["text"].endswith("+hi\n\\ No newline at end of file\n")


async def test_permission_has_a_title_and_a_tool_call_subject_and_requires_action(tmp_path: Path) -> None:
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)
        turn = await peer.turn(session, "permission Rewrite notes?\necho go")
    request = next(m for m in turn.messages if m.get("method") == "session/request_permission")
    assert request["params"]["title"] == "Rewrite notes?"
    assert request["params"]["subject"]["type"] == "tool_call"
    assert request["params"]["subject"]["toolCall"]["toolCallId"] == "tool-1"
    assert [o["optionId"] for o in request["params"]["options"]] == [
        "allow-once",
        "allow-always",
        "reject-once",
    ]
    kinds = [k for k in turn.kinds() if k.startswith("state_update")]
    assert kinds == [
        "state_update:running",
        "state_update:requires_action",
        "state_update:running",
        "state_update:idle",
    ]
    assert turn.text() == "permission: allow-once\ngo\n"


async def test_a_cancel_during_a_permission_waits_for_its_cancelled_answer_then_idles_cancelled(
    tmp_path: Path,
) -> None:
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)

        def cancel_then_answer(request: dict[str, Any]) -> None:
            peer.notify("session/cancel", {"sessionId": session})
            peer.respond(request, {"outcome": {"outcome": "cancelled"}})

        turn = await peer.turn(
            session, "permission May I?\necho never", permission=lambda r: cancel_then_answer(r)
        )
    assert turn.updates[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}
    assert turn.of("tool_call_update")[-1] == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "tool-1",
        "status": "cancelled",
    }
    assert "never" not in turn.text()


async def test_session_cancel_ends_the_turn_idle_cancelled_after_everything_else(tmp_path: Path) -> None:
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)

        def cancel(message: dict[str, Any]) -> None:
            if message.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk":
                peer.notify("session/cancel", {"sessionId": session})

        turn = await peer.turn(session, "echo first\nsleep 30\necho never", on_message=cancel)
        after = await asyncio.wait_for(peer.turn(session, "echo next"), 20)
    assert turn.kinds()[-1] == "state_update:idle"
    assert turn.updates[-1]["stopReason"] == "cancelled"
    assert "never" not in turn.text()
    assert after.text() == "next\n"  # the session goes on


async def test_replace_upserts_the_message_and_resume_replays_it_with_the_same_ids(tmp_path: Path) -> None:
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)
        turn = await peer.turn(session, "echo draft\nreplace final answer")
        replayed: list[dict[str, Any]] = []
        resumed = await peer.call(
            "session/resume", {"sessionId": session, "cwd": str(tmp_path), "replayFrom": {"type": "start"}}
        )
        while peer.backlog:
            replayed.append((await peer.next_message())["params"]["update"])
        plain = await peer.call("session/resume", {"sessionId": session, "cwd": str(tmp_path)})
        nothing_replayed = list(peer.backlog)
    agent_id = turn.of("agent_message_chunk")[0]["messageId"]
    assert turn.of("agent_message") == [
        {
            "sessionUpdate": "agent_message",
            "messageId": agent_id,
            "content": [{"type": "text", "text": "final answer"}],
        }
    ]
    assert "result" in resumed
    assert replayed == [
        {
            "sessionUpdate": "user_message",
            "messageId": turn.answer["result"]["messageId"],
            "content": [{"type": "text", "text": "echo draft\nreplace final answer"}],
        },
        {
            "sessionUpdate": "agent_message",
            "messageId": agent_id,
            "content": [{"type": "text", "text": "final answer"}],
        },
    ]
    assert "result" in plain
    assert nothing_replayed == []


async def test_background_work_speaks_while_the_session_is_idle(tmp_path: Path) -> None:
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)
        turn = await peer.turn(session, "background 0.2 the build finished")
        later = await peer.next_message()
    assert turn.updates[-1]["state"] == "idle"
    update = later["params"]["update"]
    assert update["sessionUpdate"] == "agent_message_chunk"
    assert update["content"]["text"] == "the build finished"
    assert update["messageId"] != turn.of("agent_message_chunk")[0]["messageId"]  # a new message


async def test_plan_and_progress_send_plan_updates_of_one_plan(tmp_path: Path) -> None:
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)
        turn = await peer.turn(session, "plan read; write\nprogress 1")
    plans = [u["plan"] for u in turn.of("plan_update")]
    assert [p["planId"] for p in plans] == ["plan", "plan"]
    assert [[e["status"] for e in p["entries"]] for p in plans] == [
        ["pending", "pending"],
        ["completed", "in_progress"],
    ]


async def test_fail_refuses_the_prompt_before_it_is_accepted(tmp_path: Path) -> None:
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)
        turn = await peer.turn(session, "echo not run\nfail -32099 nope")
        after = await peer.turn(session, "echo ok")
    assert turn.answer["error"] == {"code": -32099, "message": "nope"}
    assert turn.messages == []
    assert after.text() == "ok\n"


async def test_v1_only_commands_are_script_errors_on_v2(tmp_path: Path) -> None:
    async with v2_testy() as peer:
        session = await started(peer, tmp_path)
        turn = await peer.turn(session, "echo x\nmode plan")
    assert "line 2: `mode plan`: 'mode' is a command of ACP v1 only, not of v2" in turn.text()


async def test_auth_login_and_logout_replace_authenticate(tmp_path: Path) -> None:
    async with v2_testy(TestyOptions(auth=True)) as peer:
        result = await peer.initialize()
        refused = await peer.call("session/new", {"cwd": str(tmp_path)})
        login = await peer.call("auth/login", {"methodId": "testy-login"})
        session = await peer.new_session(str(tmp_path))
        logout = await peer.call("auth/logout", {})
        again = await peer.call("session/new", {"cwd": str(tmp_path)})
    assert result["authMethods"] == [
        {
            "type": "agent",
            "methodId": "testy-login",
            "name": "Log in to testy",
            "description": "testy's test login: auth/login with this method always succeeds",
        }
    ]
    assert refused["error"]["code"] == -32000
    assert login == {"jsonrpc": "2.0", "id": login["id"], "result": {}}
    assert session.startswith("testy-")
    assert "result" in logout
    assert again["error"]["code"] == -32000


@pytest.mark.parametrize("first", [1, 2])
async def test_both_versions_share_the_sessions(tmp_path: Path, first: int) -> None:
    """A session set up on one version resumes on the other (one testy, two clients)."""
    from acpio.store import MemoryStore

    store = MemoryStore()
    async with v2_testy(store=store, protocols=(1, 2)) as peer:
        if first == 2:
            session = await started(peer, tmp_path)
            await peer.turn(session, "echo from v2")
        else:
            await peer.call("initialize", {"protocolVersion": 1})
            session = (await peer.call("session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"][
                "sessionId"
            ]
            await peer.call(
                "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": "echo from v1"}]}
            )
    async with v2_testy(store=store, protocols=(1, 2)) as peer:
        await peer.initialize()
        await peer.call(
            "session/resume", {"sessionId": session, "cwd": str(tmp_path), "replayFrom": {"type": "start"}}
        )
        replayed = [m["params"]["update"] for m in peer.backlog]
    assert [u["sessionUpdate"] for u in replayed] == ["user_message", "agent_message"]
    assert replayed[1]["content"] == [{"type": "text", "text": f"from v{first}\n"}]
