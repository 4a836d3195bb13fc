"""AgentApp on ACP v2, in process, on the wire: the initialize answer, the turn's life, each verb's v2 shape.

Driven by a raw-frame v2 editor (``_wire_v2``): ``state_update`` order, ``messageId`` per message,
``tool_call_update`` upserts, ``plan_update``, permission ``subject``, agent terminals, modes as a
config option.
"""

from __future__ import annotations

import asyncio
import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from acpio import schema as acp
from acpio.app import AgentApp, StopReasonName, Turn
from acpio.schema import v2
from acpio.testing import serving

from ._wire_v2 import initialize_v2, is_idle, kinds, open_session_v2, prompt_v2, run_turn

TIMEOUT = 10.0


def v2_app(**options: Any) -> AgentApp:
    return AgentApp("v2-test", version="2.0", protocols=(2,), **options)


async def test_initialize_answers_with_info_capabilities_and_auth_methods() -> None:
    app = v2_app()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        return "end_turn"

    @app.on_login("token", "API token", description="Paste a token")
    async def login(method_id: str) -> None:
        return None

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        result = await initialize_v2(peer)
    assert result["protocolVersion"] == 2
    assert result["info"] == {"name": "v2-test", "version": "2.0"}
    assert result["capabilities"]["session"]["delete"] == {}
    assert "loadSession" not in result["capabilities"]
    assert result["authMethods"] == [
        {"methodId": "token", "name": "API token", "type": "agent", "description": "Paste a token"}
    ]


@pytest.mark.parametrize(
    ("given", "offered"),
    [
        (None, None),
        ({"image": True}, {"image": {}}),
        ({"audio": True, "embedded_context": True}, {"audio": {}, "embeddedContext": {}}),
        ({"image": True, "audio": False, "embedded_context": True}, {"image": {}, "embeddedContext": {}}),
    ],
)
async def test_the_prompt_capabilities_are_offered_in_v2_shape(
    given: dict[str, bool] | None, offered: dict[str, Any] | None
) -> None:
    capabilities = None if given is None else acp.PromptCapabilities(**given)
    app = v2_app(prompt_capabilities=capabilities)

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        result = await initialize_v2(peer)
    assert result["capabilities"]["session"].get("prompt") == offered


async def test_a_v2_only_app_refuses_a_v1_initialize_with_32022() -> None:
    app = v2_app()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        asked = peer.request("initialize", {"protocolVersion": 1})
        answer = await peer.response_to(asked)
    assert answer["error"]["code"] == -32022
    assert answer["error"]["data"] == {"requested": 1, "supported": [2]}


async def test_login_runs_the_function_and_logout_answers() -> None:
    app = v2_app()
    logged: list[str] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        return "end_turn"

    @app.on_login("token", "API token")
    async def login(method_id: str) -> None:
        logged.append(method_id)

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        await initialize_v2(peer)
        ok = await peer.response_to(peer.request("auth/login", {"methodId": "token"}))
        unknown = await peer.response_to(peer.request("auth/login", {"methodId": "password"}))
        out = await peer.response_to(peer.request("auth/logout", {}))
    assert ok["result"] == {}
    assert logged == ["token"]
    assert unknown["error"]["code"] == -32602
    assert out["result"] == {}


async def test_a_prompt_is_acknowledged_with_its_message_id_and_the_turn_ends_idle(tmp_path: Path) -> None:
    app = v2_app()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        await turn.say("Hello, ")
        await turn.say("world")
        await turn.think("that was easy")
        await turn.say("Bye")
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        answer, updates = await run_turn(peer, session_id, "hi")
    message_id = answer["result"]["messageId"]
    assert kinds(updates) == [
        "user_message",
        "state_update:running",
        "agent_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "agent_message_chunk",
        "state_update:idle",
    ]
    assert updates[0] == {
        "sessionUpdate": "user_message",
        "messageId": message_id,
        "content": [{"type": "text", "text": "hi"}],
    }
    first, second, thought, last = (u["messageId"] for u in updates[2:6])
    assert first == second  # one message, two chunks
    assert len({first, thought, last, message_id}) == 4  # a thought, then a new message
    assert updates[-1] == {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"}


async def test_tool_calls_are_upserts_with_structured_diffs(tmp_path: Path) -> None:
    app = v2_app()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call("Edit notes.txt", kind="edit", locations=["notes.txt"]) as call:
            await call.update(status="in_progress", diff=("notes.txt", "a\n", "b\n"))
            await call.update(diff=("new.txt", None, "fresh\n"))
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        _, updates = await run_turn(peer, session_id, "edit")
    calls = [u for u in updates if u["sessionUpdate"] == "tool_call_update"]
    assert "tool_call" not in kinds(updates)
    assert len(calls) == 4
    assert len({c["toolCallId"] for c in calls}) == 1
    created = calls[0]
    assert created["title"] == "Edit notes.txt"
    assert created["status"] == "pending"
    assert created["kind"] == "edit"
    assert created["locations"] == [{"path": str(tmp_path / "notes.txt")}]
    modify = calls[1]["content"][0]
    path = str(tmp_path / "notes.txt")
    assert modify["changes"] == [{"operation": "modify", "path": path}]
    assert modify["patch"]["format"] == "git_patch"
    assert modify["patch"]["text"].startswith(f"diff --git {path} {path}\n--- {path}\n+++ {path}\n")
    assert "-a\n+b\n" in modify["patch"]["text"]
    add = calls[2]["content"][0]
    assert add["changes"] == [{"operation": "add", "path": str(tmp_path / "new.txt")}]
    assert "--- /dev/null\n" in add["patch"]["text"]
    assert calls[3] == {
        "toolCallId": created["toolCallId"],
        "status": "completed",
        "sessionUpdate": "tool_call_update",
    }


async def test_a_plan_is_a_plan_update_and_usage_is_as_on_v1(tmp_path: Path) -> None:
    app = v2_app()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        await turn.plan(["read", "write"])
        await turn.report_usage(10, 100)
        await turn.notice("heads up")
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        _, updates = await run_turn(peer, session_id, "plan")
    plan, usage, notice = updates[2:5]
    assert plan == {
        "sessionUpdate": "plan_update",
        "plan": {
            "type": "items",
            "planId": "plan",
            "entries": [
                {"content": "read", "priority": "medium", "status": "pending"},
                {"content": "write", "priority": "medium", "status": "pending"},
            ],
        },
    }
    assert usage == {"sessionUpdate": "usage_update", "used": 10, "size": 100}
    assert notice["sessionUpdate"] == "notice"  # no capability to ask for on v2


async def test_a_permission_has_title_subject_and_requires_action(tmp_path: Path) -> None:
    app = v2_app()
    answers: list[bool] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call("Delete cache", kind="delete") as call:
            answers.append(await turn.ask_permission(call, description="It holds 2 GB"))
            answers.append(await turn.ask_permission(call))
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        prompt_v2(peer, session_id, "clean")
        seen: list[Any] = []
        first = await peer.message_for("session/request_permission", seen)
        peer.respond(first, {"outcome": {"outcome": "selected", "optionId": "allow"}})
        second = await peer.message_for("session/request_permission", seen)
        peer.respond(second, {"outcome": {"outcome": "_vendor_maybe"}})  # unknown: not approval
        await peer.until(lambda f: f.get("params", {}).get("update", {}).get("state") == "idle", seen)
    params = first["params"]
    v2.RequestPermissionRequest.model_validate(params)
    assert params["title"] == "Delete cache"
    assert params["description"] == "It holds 2 GB"
    assert params["subject"]["type"] == "tool_call"
    assert params["subject"]["toolCall"]["title"] == "Delete cache"
    assert [o["kind"] for o in params["options"]] == ["allow_once", "reject_once"]
    updates = [f["params"]["update"] for f in seen if f.get("method") == "session/update"]
    states = [u["state"] for u in updates if u["sessionUpdate"] == "state_update"]
    assert states == ["running", "requires_action", "running", "requires_action", "running"]
    assert answers == [True, False]


async def test_cancel_ends_idle_cancelled_after_every_pending_update(tmp_path: Path) -> None:
    app = v2_app()
    started = asyncio.Event()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call("Wait") as call:
            await call.update(status="in_progress")
            started.set()
            await asyncio.sleep(60)
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        prompt_v2(peer, session_id, "wait")
        frames: list[Any] = []
        await peer.until(
            lambda f: f.get("params", {}).get("update", {}).get("status") == "in_progress", frames
        )
        peer.notify("session/cancel", {"sessionId": session_id})
        rest: list[Any] = []
        idle = await peer.until(lambda f: f.get("params", {}).get("update", {}).get("state") == "idle", rest)
    assert idle["params"]["update"] == {
        "sessionUpdate": "state_update",
        "state": "idle",
        "stopReason": "cancelled",
    }
    assert [f["params"]["update"].get("status") for f in rest] == ["failed"]  # the call's end, before idle


async def test_a_failing_prompt_function_ends_idle_with_error(tmp_path: Path) -> None:
    app = v2_app()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        raise ValueError("no model configured")

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        answer, updates = await run_turn(peer, session_id, "go")
    assert "messageId" in answer["result"]  # accepted: the failure is the turn's, not the request's
    idle = updates[-1]
    assert idle["stopReason"] == "error"
    assert idle["error"]["code"] == -32603
    assert "no model configured" in str(idle["error"]["data"])


async def test_modes_are_a_mode_config_option(tmp_path: Path) -> None:
    app = v2_app()
    app.mode("ask", "Ask")
    app.mode("code", "Code")
    app.select_option("model", "Model", {"small": "Small", "large": "Large"}, default="small")
    seen_modes: list[str | None] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        seen_modes.append(turn.mode)
        await turn.set_mode("ask")
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, setup = await open_session_v2(peer, tmp_path)
        changed = await peer.response_to(
            peer.request(
                "session/set_config_option", {"sessionId": session_id, "configId": "mode", "value": "code"}
            )
        )
        _, updates = await run_turn(peer, session_id, "go")
    assert "modes" not in setup
    mode, model = setup["configOptions"]
    assert mode["configId"] == "mode"
    assert mode["category"] == "mode"
    assert mode["currentValue"] == "ask"
    assert [o["value"] for o in mode["options"]] == ["ask", "code"]
    assert model["configId"] == "model"
    assert changed["result"]["configOptions"][0]["currentValue"] == "code"
    assert seen_modes == ["code"]
    assert "current_mode_update" not in kinds(updates)
    option_update = next(u for u in updates if u["sessionUpdate"] == "config_option_update")
    assert option_update["configOptions"][0]["currentValue"] == "ask"


async def test_run_command_is_an_agent_terminal(tmp_path: Path) -> None:
    app = v2_app()
    results: list[Any] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call("Run echo", kind="execute") as call:
            results.append(await turn.run_command("sh", "-c", "echo hello; exit 3", call=call))
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        _, updates = await run_turn(peer, session_id, "run")
    terminal = [u for u in updates if u["sessionUpdate"].startswith("terminal_")]
    opened, running, *chunks, ended = terminal
    terminal_id = opened["terminalId"]
    assert opened == {
        "sessionUpdate": "terminal_update",
        "terminalId": terminal_id,
        "command": "sh -c 'echo hello; exit 3'",
        "cwd": str(tmp_path),
    }
    # once the command runs, terminal/cancel is advertised; the end withdraws it
    assert running == {
        "sessionUpdate": "terminal_update",
        "terminalId": terminal_id,
        "capabilities": {"cancel": {}},
    }
    assert b"".join(base64.b64decode(c["data"]) for c in chunks) == b"hello\n"
    assert ended == {
        "sessionUpdate": "terminal_update",
        "terminalId": terminal_id,
        "exitStatus": {"exitCode": 3},
        "capabilities": None,
    }
    shown = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("content")]
    assert shown[0]["content"] == [{"type": "terminal", "terminalId": terminal_id}]
    assert results[0].output == "hello\n"
    assert results[0].exit_code == 3


async def test_terminal_cancel_kills_the_command(tmp_path: Path) -> None:
    app = v2_app()
    results: list[Any] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        results.append(await turn.run_command("sleep", "30"))
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        prompt_v2(peer, session_id, "sleep")
        running = await peer.until(
            lambda f: "cancel" in (f.get("params", {}).get("update", {}).get("capabilities") or {})
        )
        terminal_id = running["params"]["update"]["terminalId"]  # cancellable: the command runs
        cancelled = await peer.response_to(
            peer.request("terminal/cancel", {"sessionId": session_id, "terminalId": terminal_id})
        )
        frames: list[Any] = []
        await peer.until(lambda f: f.get("params", {}).get("update", {}).get("state") == "idle", frames)
    assert cancelled["result"] == {}
    ended = [f["params"]["update"] for f in frames if f["params"]["update"].get("exitStatus")]
    assert ended[0]["exitStatus"] == {"signal": "SIGKILL"}
    assert results[0].signal == "SIGKILL"


@pytest.mark.parametrize("verb", ["read_file", "write_file"])
async def test_client_files_are_refused_on_v2(tmp_path: Path, verb: str) -> None:
    from acpio.errors import NotInProtocolVersion

    app = v2_app()
    raised: list[NotInProtocolVersion] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        try:
            if verb == "read_file":
                await turn.read_file("a.txt")
            else:
                await turn.write_file("a.txt", "x")
        except NotInProtocolVersion as error:
            raised.append(error)
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        _, updates = await run_turn(peer, session_id, "files")
    (error,) = raised
    assert error.version == 2
    assert f"turn.{verb}" in error.feature
    assert "MCP" in error.instead
    assert str(error).startswith(f"the client's files (turn.{verb}")
    assert updates[-1]["stopReason"] == "end_turn"


async def test_session_list_close_and_delete(tmp_path: Path) -> None:
    app = v2_app()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        listed = await peer.response_to(peer.request("session/list", {}))
        closed = await peer.response_to(peer.request("session/close", {"sessionId": session_id}))
        prompt_after_close = await peer.response_to(prompt_v2(peer, session_id, "hi"))
        deleted = await peer.response_to(peer.request("session/delete", {"sessionId": session_id}))
        after = await peer.response_to(peer.request("session/list", {}))
    assert [s["sessionId"] for s in listed["result"]["sessions"]] == [session_id]
    assert listed["result"]["sessions"][0]["cwd"] == str(tmp_path)
    assert closed["result"] == {}
    assert prompt_after_close["error"]["code"] == -32002
    assert deleted["result"] == {}
    assert after["result"]["sessions"] == []


@dataclass
class Target:
    version: str


async def test_a_form_is_elicited_while_the_session_requires_action(tmp_path: Path) -> None:
    app = v2_app()
    values: list[Any] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        assert turn.client.elicitation_form  # as the v2 client advertised it
        values.append((await turn.elicit("Which version?", Target)).value)
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path, {"elicitation": {"form": {}}})
        prompt_v2(peer, session_id, "release")
        seen: list[Any] = []
        asked = await peer.message_for("elicitation/create", seen)
        peer.respond(asked, {"action": "accept", "content": {"version": "1.2.3"}})
        await peer.until(is_idle, seen)
    assert asked["params"]["mode"] == "form"
    assert asked["params"]["sessionId"] == session_id
    v2.CreateElicitationRequest.model_validate(asked["params"])
    updates = [f["params"]["update"] for f in seen if f.get("method") == "session/update"]
    assert kinds(updates) == [
        "user_message",
        "state_update:running",
        "state_update:requires_action",
        "state_update:running",  # the answer came: the turn goes on
    ]
    assert values == [Target(version="1.2.3")]


async def test_compaction_needs_no_capability_on_v2(tmp_path: Path) -> None:
    app = v2_app()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        await turn.compact("we talked about releases")
        await turn.set_title("Releases")
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        _, updates = await run_turn(peer, session_id, "compact")
    assert kinds(updates)[2:-1] == [
        "compaction_update",
        "compaction_summary_chunk",
        "compaction_update",
        "session_info_update",
    ]


async def test_bad_prompts_and_a_second_turn_are_refused(tmp_path: Path) -> None:
    app = v2_app()
    release = asyncio.Event()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        await release.wait()
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        empty = await peer.response_to(
            peer.request("session/prompt", {"sessionId": session_id, "prompt": "hi"})
        )
        first = await peer.response_to(prompt_v2(peer, session_id, "one"))
        second = await peer.response_to(prompt_v2(peer, session_id, "two"))
        unknown = await peer.response_to(
            peer.request(
                "session/set_config_option", {"sessionId": session_id, "configId": "nope", "value": "x"}
            )
        )
        release.set()
        await peer.until(is_idle)
    assert empty["error"]["code"] == -32602
    assert "messageId" in first["result"]
    assert second["error"]["code"] == -32600
    assert "already running" in second["error"]["message"]
    assert unknown["error"]["code"] == -32602


async def test_commands_and_refreshed_options_go_out_in_v2_shape(tmp_path: Path) -> None:
    app = v2_app()
    app.command("review", "Review the diff", hint="what to review")
    app.select_option("model", "Model", {"small": "Small"}, default="small")

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        commands = await peer.message_for("session/update")
        (session,) = app.sessions
        session.offer_choices("model", {"small": "Small", "huge": "Huge"})
        await app.refresh_options(session)
        options = await peer.message_for("session/update")
    assert commands["params"]["sessionId"] == session_id
    assert commands["params"]["update"] == {
        "sessionUpdate": "available_commands_update",
        "availableCommands": [
            {
                "type": "command",
                "name": "review",
                "description": "Review the diff",
                "input": {"type": "text", "hint": "what to review"},
            }
        ],
    }
    update = options["params"]["update"]
    assert kinds([commands["params"]["update"], update]) == [
        "available_commands_update",
        "config_option_update",
    ]
    assert update["configOptions"][0]["configId"] == "model"
    assert [o["value"] for o in update["configOptions"][0]["options"]] == ["small", "huge"]
