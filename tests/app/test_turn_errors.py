"""A prompt function's errors: a tool call that reports its own, and the answer an error let out gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acpio import InvalidParams
from acpio.app import ActiveToolCall, AgentApp, StopReasonName, Turn
from acpio.testing import serving

from ._wire import open_session, send_prompt

TIMEOUT = 10
WRITES = {"fs": {"readTextFile": True, "writeTextFile": True}}


def writing_app(kept: list[ActiveToolCall]) -> AgentApp:
    """An app whose turn writes a file in a tool call: ``report`` in the prompt keeps its errors there."""
    app = AgentApp("writer")

    @app.prompt
    async def answer(turn: Turn) -> StopReasonName:
        if turn.text == "report":
            async with turn.tool_call("Write a.txt", kind="edit", on_error="report") as call:
                await turn.write_file("a.txt", "a")
            kept.append(call)
        else:
            async with turn.tool_call("Write a.txt", kind="edit"):
                await turn.write_file("a.txt", "a")
        await turn.say("after the call")
        return "end_turn"

    return app


async def test_a_reporting_tool_call_fails_alone_and_the_turn_goes_on(tmp_path: Path) -> None:
    kept: list[ActiveToolCall] = []
    async with serving(writing_app(kept).builder(), timeout=TIMEOUT) as peer:
        session = await open_session(peer, tmp_path, {})  # no fs: write_file raises CapabilityNotAdvertised
        seen: list[Any] = []
        answer = await peer.response_to(send_prompt(peer, session, "report"), seen)
        assert answer["result"] == {"stopReason": "end_turn"}
        updates = [m["params"]["update"] for m in seen]
        assert [u["sessionUpdate"] for u in updates] == [
            "tool_call",
            "tool_call_update",
            "agent_message_chunk",
        ]
        assert updates[1]["status"] == "failed"
        assert "fs/write_text_file" in updates[1]["content"][0]["content"]["text"]
        assert type(kept[0].error).__name__ == "CapabilityNotAdvertised"

        failed = await peer.response_to(send_prompt(peer, session, "raise"))  # the default: the turn fails
        assert failed["error"]["code"] == -32603


async def test_a_reported_call_that_succeeds_is_completed(tmp_path: Path) -> None:
    kept: list[ActiveToolCall] = []
    async with serving(writing_app(kept).builder(), timeout=TIMEOUT) as peer:
        session = await open_session(peer, tmp_path, WRITES)
        turn = send_prompt(peer, session, "report")
        peer.respond(await peer.message_for("fs/write_text_file"), None)
        seen: list[Any] = []
        assert (await peer.response_to(turn, seen))["result"] == {"stopReason": "end_turn"}
        done = [
            m["params"]["update"]
            for m in seen
            if m["params"]["update"]["sessionUpdate"] == "tool_call_update"
        ]
        assert done == [
            {"sessionUpdate": "tool_call_update", "toolCallId": done[0]["toolCallId"], "status": "completed"}
        ]
        assert kept[0].error is None


async def test_a_reporting_tool_call_still_ends_a_cancelled_turn(tmp_path: Path) -> None:
    kept: list[ActiveToolCall] = []
    async with serving(writing_app(kept).builder(), timeout=TIMEOUT) as peer:
        session = await open_session(peer, tmp_path, WRITES)
        turn = send_prompt(peer, session, "report")
        await peer.message_for("fs/write_text_file")
        peer.notify("session/cancel", {"sessionId": session})
        seen: list[Any] = []
        assert (await peer.response_to(turn, seen))["result"] == {"stopReason": "cancelled"}
        updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
        assert [(u["sessionUpdate"], u.get("status")) for u in updates] == [("tool_call_update", "failed")]
        assert kept == []  # the code after the block never ran


async def test_an_acp_error_the_prompt_function_lets_out_keeps_its_code_any_other_is_32603(
    tmp_path: Path,
) -> None:
    app = AgentApp("errors")

    @app.prompt
    async def answer(turn: Turn) -> None:
        if turn.text == "refuse":
            raise InvalidParams({"reason": "no images"}, message="This agent takes text only")
        if turn.text == "read":
            await turn.read_file("missing.txt")  # the client's error goes out unhandled
        raise KeyError("model")

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = await open_session(peer, tmp_path, WRITES)
        refused = await peer.response_to(send_prompt(peer, session, "refuse"))
        assert refused["error"] == {
            "code": -32602,
            "message": "This agent takes text only",
            "data": {"reason": "no images"},
        }
        turn = send_prompt(peer, session, "read")
        read = await peer.message_for("fs/read_text_file")
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": read["id"],
                "error": {"code": -32002, "message": "Resource not found", "data": {"path": "missing.txt"}},
            }
        )
        relayed = await peer.response_to(turn)
        assert relayed["error"] == {
            "code": -32002,
            "message": "Resource not found",
            "data": {"path": "missing.txt"},
        }
        failed = await peer.response_to(send_prompt(peer, session, "other"))
        assert failed["error"] == {
            "code": -32603,
            "message": "Internal error",
            "data": {"details": "'model'", "type": "KeyError"},
        }
