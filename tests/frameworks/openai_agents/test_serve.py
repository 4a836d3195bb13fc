"""An OpenAI Agents SDK agent served over ACP, its model the real SDK on a local Responses API server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agents import function_tool

from acpio.frameworks.openai_agents import openai_agent_app
from acpio.testing import serving

from ._support import NO_TRACES, TIMEOUT, coder, open_session, send_prompt, updates_of
from .responses_wire import FunctionCall, ResponsesWire, response_stream


async def test_text_and_reasoning_stream_as_chunks_and_usage_is_reported(
    wire: ResponsesWire, tmp_path: Path
) -> None:
    wire.respond(response_stream(reasoning=["Short ", "question."], text=["Hel", "lo!"], usage=(40, 5)))
    app = openai_agent_app(coder(wire), run_config=NO_TRACES, context_window=1000)
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = (await open_session(peer, tmp_path))["sessionId"]
        seen: list[Any] = []
        answer = await peer.response_to(send_prompt(peer, session, "hi"), seen)
    assert answer.get("result") == {"stopReason": "end_turn"}, answer
    shown = [(u["sessionUpdate"], u.get("content", {}).get("text")) for u in updates_of(seen)]
    assert shown == [
        ("agent_thought_chunk", "Short "),
        ("agent_thought_chunk", "question."),
        ("agent_message_chunk", "Hel"),
        ("agent_message_chunk", "lo!"),
        ("usage_update", None),
    ]
    assert {k: v for k, v in updates_of(seen)[-1].items() if k != "sessionUpdate"} == {
        "used": 45,
        "size": 1000,
    }
    sent = wire.requests_made[0].body
    assert sent["stream"] is True
    assert sent["input"] == [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]


async def test_a_function_tool_that_writes_a_file_is_shown_as_a_diff(
    wire: ResponsesWire, tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text("# Notes\n")
    arguments = json.dumps({"path": str(tmp_path / "notes.md"), "content": "# Notes\n- try acpio\n"})
    wire.respond(
        response_stream(text="Writing.", calls=[FunctionCall("call_w", "write_file", arguments)]),
        response_stream(text="Done."),
    )
    app = openai_agent_app(coder(wire), run_config=NO_TRACES)
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = (await open_session(peer, tmp_path))["sessionId"]
        seen: list[Any] = []
        answer = await peer.response_to(send_prompt(peer, session, "add a line"), seen)
    assert answer["result"] == {"stopReason": "end_turn"}
    updates = updates_of(seen)
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds == [
        "agent_message_chunk",
        "usage_update",
        "tool_call",
        "tool_call_update",
        "tool_call_update",
        "agent_message_chunk",
        "usage_update",
    ]
    call, diff, done = updates[2:5]
    path = str(tmp_path / "notes.md")
    assert (call["title"], call["kind"], call["status"]) == (f"Edit {path}", "edit", "pending")
    assert call["locations"] == [{"path": path}]
    assert call["_meta"]["openai-agents/function_call"]["call_id"] == "call_w"
    assert diff["content"] == [
        {"type": "diff", "path": path, "oldText": "# Notes\n", "newText": "# Notes\n- try acpio\n"}
    ]
    assert (done["status"], done["rawOutput"]) == ("completed", f"Wrote 20 characters to {path}")
    assert (tmp_path / "notes.md").read_text() == "# Notes\n- try acpio\n"
    second = wire.requests_made[1].body["input"]
    assert second[-1] == {
        "call_id": "call_w",
        "output": f"Wrote 20 characters to {path}",
        "type": "function_call_output",
    }


@function_tool(needs_approval=True)
def delete_file(path: str) -> str:
    """Delete the file ``path``."""
    Path(path).unlink()
    return f"Deleted {path}"


async def test_an_approval_is_a_permission_request_and_the_run_resumes_with_the_answer(
    wire: ResponsesWire, tmp_path: Path
) -> None:
    doomed, kept = tmp_path / "doomed.txt", tmp_path / "kept.txt"
    doomed.write_text("x")
    kept.write_text("y")
    wire.respond(
        response_stream(calls=[FunctionCall("call_1", "delete_file", json.dumps({"path": str(doomed)}))]),
        response_stream(calls=[FunctionCall("call_2", "delete_file", json.dumps({"path": str(kept)}))]),
        response_stream(text="One deleted, one kept."),
    )
    app = openai_agent_app(coder(wire, delete_file), run_config=NO_TRACES)
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = (await open_session(peer, tmp_path))["sessionId"]
        turn = send_prompt(peer, session, "clean up")
        seen: list[Any] = []
        ask = await peer.message_for("session/request_permission", seen)
        assert ask["params"]["toolCall"]["title"] == f"Delete {doomed}"
        assert doomed.exists()  # nothing ran before the answer
        allow = next(o for o in ask["params"]["options"] if o["kind"] == "allow_once")
        peer.respond(ask, {"outcome": {"outcome": "selected", "optionId": allow["optionId"]}})
        ask = await peer.message_for("session/request_permission", seen)
        reject = next(o for o in ask["params"]["options"] if o["kind"] == "reject_once")
        peer.respond(ask, {"outcome": {"outcome": "selected", "optionId": reject["optionId"]}})
        answer = await peer.response_to(turn, seen)
    assert answer["result"] == {"stopReason": "end_turn"}
    assert not doomed.exists()
    assert kept.exists()
    calls = [u for u in updates_of(seen) if u["sessionUpdate"] == "tool_call"]
    assert [(c["title"], c["kind"]) for c in calls] == [
        (f"Delete {doomed}", "delete"),
        (f"Delete {kept}", "delete"),
    ]
    ends = {
        u["toolCallId"]: u["status"] for u in updates_of(seen) if u.get("status") in ("completed", "failed")
    }
    assert [ends[c["toolCallId"]] for c in calls] == ["completed", "failed"]
    told = wire.requests_made[2].body["input"][-1]
    assert told["call_id"] == "call_2"
    assert "rejected" in told["output"]


@function_tool
async def build(target: str) -> str:
    """Build ``target`` (takes a while)."""
    try:
        await asyncio.sleep(60)
    except asyncio.CancelledError:
        build.cancelled = True  # type: ignore[attr-defined]
        raise
    return "built"


async def test_a_cancel_cancels_the_running_tool_and_ends_the_turn_cancelled(
    wire: ResponsesWire, tmp_path: Path
) -> None:
    wire.respond(response_stream(calls=[FunctionCall("call_b", "build", json.dumps({"target": "all"}))]))
    app = openai_agent_app(coder(wire, build), run_config=NO_TRACES)
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = (await open_session(peer, tmp_path))["sessionId"]
        turn = send_prompt(peer, session, "build")
        seen: list[Any] = []
        started = await peer.until(
            lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "tool_call", seen
        )
        assert started["params"]["update"]["title"] == "build"
        await asyncio.sleep(0.05)  # the tool is running
        peer.notify("session/cancel", {"sessionId": session})
        answer = await peer.response_to(turn, seen)
    assert answer["result"] == {"stopReason": "cancelled"}
    assert getattr(build, "cancelled", False)
    failed = [u for u in updates_of(seen) if u.get("status") == "failed"]
    assert [u["toolCallId"] for u in failed] == [started["params"]["update"]["toolCallId"]]
    assert len(wire.requests_made) == 1


async def test_a_cancel_during_the_model_stream_hangs_up_the_call(
    wire: ResponsesWire, tmp_path: Path
) -> None:
    stream = response_stream(text=["Thinking about it"], hold=True)
    wire.respond(stream)
    app = openai_agent_app(coder(wire), run_config=NO_TRACES)
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = (await open_session(peer, tmp_path))["sessionId"]
        turn = send_prompt(peer, session, "go")
        await peer.until(
            lambda m: m.get("params", {}).get("update", {}).get("sessionUpdate") == "agent_message_chunk"
        )
        peer.notify("session/cancel", {"sessionId": session})
        assert (await peer.response_to(turn))["result"] == {"stopReason": "cancelled"}
        await asyncio.wait_for(stream.closed.wait(), TIMEOUT)


async def test_a_cancel_while_the_user_is_asked_ends_cancelled_and_the_tool_never_runs(
    wire: ResponsesWire, tmp_path: Path
) -> None:
    doomed = tmp_path / "doomed.txt"
    doomed.write_text("x")
    wire.respond(
        response_stream(calls=[FunctionCall("call_1", "delete_file", json.dumps({"path": str(doomed)}))])
    )
    app = openai_agent_app(coder(wire, delete_file), run_config=NO_TRACES)
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = (await open_session(peer, tmp_path))["sessionId"]
        turn = send_prompt(peer, session, "clean up")
        ask = await peer.message_for("session/request_permission")
        peer.notify("session/cancel", {"sessionId": session})
        peer.respond(ask, {"outcome": {"outcome": "cancelled"}})  # as ACP asks of a client that cancels
        assert (await peer.response_to(turn))["result"] == {"stopReason": "cancelled"}
    assert doomed.exists()
    assert len(wire.requests_made) == 1
