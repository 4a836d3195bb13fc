"""AgentApp on the wire: the defaults an agent gets, turns in their own tasks, errors, cancellation."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from acpio.app import AgentApp, StopReasonName, Turn
from acpio.errors import RequestError
from acpio.store import MemoryStore
from acpio.testing import TestClient, TurnResult, WirePeer, connect_client, serving
from acpio.transports import Channel

TIMEOUT = 10
CWD = str(Path.cwd())


async def start(peer: WirePeer, **capabilities: Any) -> str:
    """Initialize (with the client's ``capabilities``) and open a session; returns its id."""
    peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
    await peer.response_to(1)
    new = peer.request("session/new", {"cwd": CWD, "mcpServers": []})
    return str((await peer.response_to(new))["result"]["sessionId"])


def prompt(peer: WirePeer, session_id: str, text: str) -> Any:
    return peer.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )


def counting_app() -> AgentApp:
    app = AgentApp("counter", version="2.0", title="Counter")

    @app.prompt
    async def answer(turn: Turn) -> StopReasonName:
        if turn.text == "fail":
            raise ValueError("the model is unreachable")
        await turn.think("counting")
        await turn.say(str(len(turn.text.split())))
        return "end_turn"

    return app


async def test_initialize_and_session_ids_come_for_free() -> None:
    async with serving(counting_app().builder(), timeout=TIMEOUT) as peer:
        peer.request("initialize", {"protocolVersion": 1})
        answer = (await peer.response_to(1))["result"]
        assert answer["protocolVersion"] == 1
        assert answer["agentInfo"] == {"name": "counter", "version": "2.0", "title": "Counter"}
        assert answer["agentCapabilities"]["promptCapabilities"] == {}
        ids = []
        for _ in range(2):
            new = peer.request("session/new", {"cwd": CWD, "mcpServers": []})
            ids.append((await peer.response_to(new))["result"]["sessionId"])
        assert ids[0] != ids[1]


@pytest.fixture
def acpio_agent() -> AgentApp:
    """The agent of the tests that use acpio's pytest plugin (``acpio_client``)."""
    return counting_app()


async def test_a_turn_streams_then_answers(acpio_client: TestClient) -> None:
    turn = await acpio_client.prompt("three small words")
    assert turn == TurnResult(text="3", stop_reason="end_turn")
    assert acpio_client.conversation.lines()[-3:] == [
        'agent ↝ client  session/update  agent_thought_chunk "counting"',
        'agent ↝ client  session/update  agent_message_chunk "3"',
        "agent ⇢ client  session/prompt  stopReason: end_turn",
    ]


async def test_a_failing_turn_answers_with_its_message_and_the_agent_goes_on(
    acpio_client: TestClient,
) -> None:
    with pytest.raises(RequestError) as failed:
        await acpio_client.prompt("fail")
    assert failed.value.code == -32603
    assert failed.value.data == {"details": "the model is unreachable", "type": "ValueError"}
    again = await acpio_client.prompt("still here")
    assert again.stop_reason == "end_turn"


async def test_error_details_can_be_kept_from_the_client() -> None:
    app = AgentApp("quiet", error_details=False)

    @app.prompt
    async def answer(turn: Turn) -> None:
        raise RuntimeError("secret internals")

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        failed = await peer.response_to(prompt(peer, await start(peer), "x"))
        assert failed["error"] == {"code": -32603, "message": "Internal error"}


async def test_cancel_ends_the_turn_cancelled_and_withdraws_its_permission_request() -> None:
    app = AgentApp("asker")

    @app.prompt
    async def answer(turn: Turn) -> StopReasonName:
        async with turn.tool_call("Delete everything", kind="delete") as call:
            await turn.ask_permission(call)
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = await start(peer)
        turn = prompt(peer, session, "go")
        asked = await peer.message_for("session/request_permission")
        peer.notify("session/cancel", {"sessionId": session})
        seen: list[Any] = []
        answer = await peer.response_to(turn, seen)
        assert answer["result"] == {"stopReason": "cancelled"}
        assert {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": asked["id"]}} in seen
        final = [m["params"]["update"] for m in seen if m.get("method") == "session/update"][-1]
        assert (final["sessionUpdate"], final["status"]) == ("tool_call_update", "failed")


@pytest.mark.parametrize("end", ["session/cancel", "session/close"])
async def test_a_turn_ended_before_its_task_began_is_answered_and_the_session_goes_on(end: str) -> None:
    """A cancel read in the same batch as its prompt: the turn's task never ran a line (ACP-CANCEL-001)."""
    app = AgentApp("sleeper", store=MemoryStore())  # a store: session/close is served

    @app.prompt
    async def answer(turn: Turn) -> StopReasonName:
        if turn.text == "wait":
            await asyncio.sleep(60)
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = await start(peer)
        turn = prompt(peer, session, "wait")
        if end == "session/cancel":
            peer.notify(end, {"sessionId": session})  # written with the prompt: read in the same turn
        else:
            peer.request(end, {"sessionId": session})
        assert (await peer.response_to(turn))["result"] == {"stopReason": "cancelled"}
        if end == "session/cancel":
            after = await peer.response_to(prompt(peer, session, "go on"))
            assert after["result"] == {"stopReason": "end_turn"}


async def test_what_a_client_gets_wrong_is_answered_not_crashed_on() -> None:
    async with serving(counting_app().builder(), timeout=TIMEOUT) as peer:
        session = await start(peer)
        unknown = await peer.response_to(prompt(peer, "no-such-session", "x"))
        assert unknown["error"]["code"] == -32002
        relative = peer.request("session/new", {"cwd": "relative/dir", "mcpServers": []})
        assert (await peer.response_to(relative))["error"]["code"] == -32602
        assert (await peer.response_to(prompt(peer, session, "ok")))["result"] == {"stopReason": "end_turn"}


async def test_a_second_prompt_while_a_turn_runs_is_refused() -> None:
    app = AgentApp("slow")
    release = asyncio.Event()

    @app.prompt
    async def answer(turn: Turn) -> None:
        await turn.say("working")
        await release.wait()

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = await start(peer)
        first = prompt(peer, session, "one")
        await peer.message_for("session/update")
        refused = await peer.response_to(prompt(peer, session, "two"))
        assert refused["error"]["code"] == -32600
        assert "already running" in refused["error"]["message"]
        release.set()
        assert (await peer.response_to(first))["result"] == {"stopReason": "end_turn"}


async def test_files_go_through_the_client_only_when_it_offers_them(tmp_path: Path) -> None:
    app = AgentApp("files")

    @app.prompt
    async def answer(turn: Turn) -> None:
        text = await turn.read_file("in.txt")
        await turn.write_file("out.txt", text.upper())

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = await start(peer)  # advertises no fs
        refused = await peer.response_to(prompt(peer, session, "x"))
        assert "fs/read_text_file" in refused["error"]["data"]["details"]

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        peer.request(
            "initialize",
            {
                "protocolVersion": 1,
                "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}},
            },
        )
        await peer.response_to(1)
        new = peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session = (await peer.response_to(new))["result"]["sessionId"]
        turn = prompt(peer, session, "x")
        read = await peer.message_for("fs/read_text_file")
        assert read["params"] == {"sessionId": session, "path": str(tmp_path / "in.txt")}
        peer.respond(read, {"content": "shout"})
        write = await peer.message_for("fs/write_text_file")
        assert write["params"]["content"] == "SHOUT"
        peer.respond(write, None)
        assert (await peer.response_to(turn))["result"] == {"stopReason": "end_turn"}


async def test_a_prompt_function_must_be_async_and_only_one() -> None:
    app = AgentApp("strict")

    def sync(turn: Turn) -> None: ...

    with pytest.raises(TypeError, match="async function"):
        app.prompt(sync)  # type: ignore[arg-type]

    @app.prompt
    async def first(turn: Turn) -> None: ...

    with pytest.raises(ValueError, match="already has a prompt function"):

        @app.prompt
        async def second(turn: Turn) -> None: ...


async def test_plans_and_tool_call_progress_on_the_wire(tmp_path: Path) -> None:
    app = AgentApp("worker")

    @app.prompt
    async def answer(turn: Turn) -> None:
        await turn.plan(["read", "edit"])
        async with turn.tool_call("Edit a.py", kind="edit", locations=["a.py"], raw_input={"n": 1}) as call:
            await call.update(status="in_progress", text="editing")
            await call.update(diff=("a.py", "x = 1\n", "x = 2\n"), status="completed")

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        peer.request("initialize", {"protocolVersion": 1})
        await peer.response_to(1)
        new = peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session = (await peer.response_to(new))["result"]["sessionId"]
        seen: list[Any] = []
        await peer.response_to(prompt(peer, session, "go"), seen)
    updates = [m["params"]["update"] for m in seen]
    assert updates[0] == {
        "sessionUpdate": "plan",
        "entries": [
            {"content": "read", "priority": "medium", "status": "pending"},
            {"content": "edit", "priority": "medium", "status": "pending"},
        ],
    }
    call_id = updates[1]["toolCallId"]
    assert updates[1] == {
        "sessionUpdate": "tool_call",
        "toolCallId": call_id,
        "title": "Edit a.py",
        "kind": "edit",
        "status": "pending",
        "locations": [{"path": str(tmp_path / "a.py")}],
        "rawInput": {"n": 1},
    }
    assert updates[2:] == [
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "in_progress",
            "content": [{"type": "content", "content": {"type": "text", "text": "editing"}}],
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": call_id,
            "status": "completed",
            "content": [
                {"type": "diff", "path": str(tmp_path / "a.py"), "oldText": "x = 1\n", "newText": "x = 2\n"}
            ],
        },
    ]  # and no further update: the block kept the final status


def menu_app() -> AgentApp:
    app = AgentApp("menu")
    app.command("review", "Review the changes", hint="what to focus on")
    app.mode("ask", "Ask")
    app.mode("code", "Code", description="Edits files")
    app.select_option("model", "Model", {"fast": "Fast", "smart": "Smart"}, default="fast", category="model")
    app.boolean_option("web", "Search the web", default=False)

    @app.prompt
    async def answer(turn: Turn) -> None:
        command = turn.command
        await turn.say(f"{turn.mode} {dict(turn.options)} {command}")
        if turn.text == "switch":
            await turn.set_mode("code")
            await turn.set_option("model", "smart")

    return app


async def test_commands_modes_and_options_are_offered_and_followed() -> None:
    async with serving(menu_app().builder(), timeout=TIMEOUT) as peer:
        peer.request("initialize", {"protocolVersion": 1})
        await peer.response_to(1)
        new = peer.request("session/new", {"cwd": CWD, "mcpServers": []})
        setup = (await peer.response_to(new))["result"]
        session = setup["sessionId"]
        assert setup["modes"] == {
            "currentModeId": "ask",
            "availableModes": [
                {"id": "ask", "name": "Ask"},
                {"id": "code", "name": "Code", "description": "Edits files"},
            ],
        }
        assert setup["configOptions"] == [  # no boolean option: this client did not advertise them
            {
                "id": "model",
                "name": "Model",
                "category": "model",
                "type": "select",
                "currentValue": "fast",
                "options": [{"value": "fast", "name": "Fast"}, {"value": "smart", "name": "Smart"}],
            }
        ]
        commands = (await peer.message_for("session/update"))["params"]["update"]
        assert commands == {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [
                {"name": "review", "description": "Review the changes", "input": {"hint": "what to focus on"}}
            ],
        }
        seen: list[Any] = []
        await peer.response_to(prompt(peer, session, "/review  the tests "), seen)
        said = seen[0]["params"]["update"]["content"]["text"]
        assert said == "ask {'model': 'fast', 'web': False} CommandCall(name='review', input='the tests')"

        changed = peer.request("session/set_mode", {"sessionId": session, "modeId": "code"})
        assert (await peer.response_to(changed))["result"] == {}
        chosen = peer.request(
            "session/set_config_option", {"sessionId": session, "configId": "model", "value": "smart"}
        )
        assert (await peer.response_to(chosen))["result"]["configOptions"][0]["currentValue"] == "smart"
        bad = peer.request(
            "session/set_config_option", {"sessionId": session, "configId": "model", "value": "huge"}
        )
        assert (await peer.response_to(bad))["error"]["data"]["expected"] == "one of ['fast', 'smart']"
        unknown = peer.request("session/set_mode", {"sessionId": session, "modeId": "fly"})
        assert (await peer.response_to(unknown))["error"]["code"] == -32602
        seen.clear()
        await peer.response_to(prompt(peer, session, "plain"), seen)
        assert seen[0]["params"]["update"]["content"]["text"] == "code {'model': 'smart', 'web': False} None"


async def test_the_agent_switches_mode_and_options_and_says_so() -> None:
    async with serving(menu_app().builder(), timeout=TIMEOUT) as peer:
        session = await start(peer, session={"configOptions": {"boolean": {}}})
        seen: list[Any] = []
        await peer.response_to(prompt(peer, session, "switch"), seen)
        updates = [m["params"]["update"] for m in seen]
        kinds = [u["sessionUpdate"] for u in updates]
        assert kinds == [
            "available_commands_update",
            "agent_message_chunk",
            "current_mode_update",
            "config_option_update",
        ]
        assert updates[2] == {"sessionUpdate": "current_mode_update", "currentModeId": "code"}
        values = {o["id"]: o["currentValue"] for o in updates[3]["configOptions"]}
        assert values == {"model": "smart", "web": False}  # the boolean one too: this client takes them


def test_declaring_twice_or_a_default_outside_the_choices_is_refused() -> None:
    app = AgentApp("strict")
    app.command("review", "Review")
    with pytest.raises(ValueError, match="declared twice"):
        app.command("/review", "Again")
    with pytest.raises(ValueError, match="one word"):
        app.command("two words", "No")
    with pytest.raises(ValueError, match="not one of"):
        app.select_option("model", "Model", {"a": "A"}, default="b")


async def test_a_command_runs_in_a_client_terminal_shown_in_its_tool_call(tmp_path: Path) -> None:
    app = AgentApp("runner")
    results: list[Any] = []

    @app.prompt
    async def answer(turn: Turn) -> None:
        async with turn.tool_call("Run the tests", kind="execute") as call:
            results.append(await turn.run_command("pytest", "-q", cwd="sub", output_limit=1000, call=call))

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {"terminal": True}})
        await peer.response_to(1)
        new = peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session = (await peer.response_to(new))["result"]["sessionId"]
        turn = prompt(peer, session, "test")
        created = await peer.message_for("terminal/create")
        assert created["params"] == {
            "sessionId": session,
            "command": "pytest",
            "args": ["-q"],
            "cwd": str(tmp_path / "sub"),
            "outputByteLimit": 1000,
        }
        peer.respond(created, {"terminalId": "t1"})
        shown = await peer.message_for("session/update")
        assert shown["params"]["update"]["content"] == [{"type": "terminal", "terminalId": "t1"}]
        peer.respond(await peer.message_for("terminal/wait_for_exit"), {"exitCode": 1})
        peer.respond(await peer.message_for("terminal/output"), {"output": "1 failed", "truncated": False})
        released = await peer.message_for("terminal/release")
        assert released["params"] == {"sessionId": session, "terminalId": "t1"}
        peer.respond(released, None)
        assert (await peer.response_to(turn))["result"] == {"stopReason": "end_turn"}
    assert [(r.output, r.truncated, r.exit_code, r.signal) for r in results] == [("1 failed", False, 1, None)]


async def test_a_cancelled_command_releases_its_terminal(tmp_path: Path) -> None:
    app = AgentApp("runner")

    @app.prompt
    async def answer(turn: Turn) -> None:
        await turn.run_command("sleep", "60")

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = await start(peer, terminal=True)
        turn = prompt(peer, session, "wait")
        peer.respond(await peer.message_for("terminal/create"), {"terminalId": "t9"})
        waiting = await peer.message_for("terminal/wait_for_exit")
        peer.notify("session/cancel", {"sessionId": session})
        seen: list[Any] = []
        answer = await peer.response_to(turn, seen)
        assert answer["result"] == {"stopReason": "cancelled"}
        methods = [(m.get("method"), m.get("params")) for m in seen]
        assert ("$/cancel_request", {"requestId": waiting["id"]}) in methods
        assert ("terminal/release", {"sessionId": session, "terminalId": "t9"}) in methods


async def test_each_turn_sees_the_sessions_earlier_turns() -> None:
    app = AgentApp("memory")

    @app.prompt
    async def answer(turn: Turn) -> None:
        await turn.say(f"turn {len(turn.history) + 1}: ")
        await turn.say(" / ".join(f"{e.prompt[0].to_wire()['text']}->{e.reply}" for e in turn.history))

    async with connect_client(app.builder(), cwd=CWD) as client:
        for text in ("a", "b"):
            await client.prompt(text)
        turn = await client.prompt("c")
    assert turn.text == "turn 3: a->turn 1:  / b->turn 2: a->turn 1: "


async def test_an_app_without_a_prompt_function_is_refused_before_it_serves() -> None:
    with pytest.raises(RuntimeError, match=r"has no prompt function: decorate one with @app.prompt"):
        await AgentApp("empty").serve(Channel.duplex()[0])
