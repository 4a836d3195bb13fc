"""GraphStream: LangGraph's stream items (real langchain-core messages) as a turn's updates, on the wire."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langgraph", reason="the langgraph extra is not installed: pip install 'acpio[langgraph]'"
)

from langchain_core.messages import AIMessageChunk, ToolMessage

from acpio.app import AgentApp, StopReasonName, Turn
from acpio.app.projections import Execute, Projections
from acpio.frameworks.langgraph.stream import GraphStream
from acpio.testing import serving


async def shown(items: list[tuple[str, Any]], cwd: Path) -> list[dict[str, Any]]:
    """The updates a turn sends for ``items`` (``(mode, chunk)`` of the root graph)."""
    app = AgentApp("stream")
    projections = Projections()
    projections.declare("sh", Execute(command="line"))

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        stream = GraphStream(turn, projections)
        for mode, chunk in items:
            await stream.feed((), mode, chunk)
        return "end_turn"

    async with serving(app.builder()) as peer:
        await peer.response_to(peer.request("initialize", {"protocolVersion": 1}))
        new = await peer.response_to(peer.request("session/new", {"cwd": str(cwd), "mcpServers": []}))
        sid = new["result"]["sessionId"]
        frames: list[Any] = []
        request = peer.request(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]}
        )
        await peer.response_to(request, frames)
    return [f["params"]["update"] for f in frames if f.get("method") == "session/update"]


def chunk(args: str, *, first: bool = False, last: bool = False, index: int = 0) -> AIMessageChunk:
    piece = {
        "name": "sh" if first else None,
        "args": args,
        "id": f"call_{index}" if first else None,
        "index": index,
    }
    return AIMessageChunk(
        content="", id="m1", tool_call_chunks=[piece], chunk_position="last" if last else None
    )


async def test_tool_call_chunks_are_put_together_into_one_call_per_index(tmp_path: Path) -> None:
    items: list[tuple[str, Any]] = [
        ("messages", (AIMessageChunk(content="Running ", id="m1"), {})),
        ("messages", (chunk('{"li', first=True), {})),
        ("messages", (chunk('{"line": "ls"}', first=True, index=1), {})),
        ("messages", (chunk('ne": "make ', index=0), {})),
        ("messages", (chunk('test"}', last=True), {})),
        ("messages", (ToolMessage("ok\n", tool_call_id="call_0", name="sh"), {})),
        ("messages", (ToolMessage("boom", tool_call_id="call_1", name="sh", status="error"), {})),
    ]
    updates = await shown(items, tmp_path)
    assert updates[0] == {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "Running "},
    }
    begun = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert [(u["toolCallId"], u["kind"]) for u in begun] == [("call_0", "execute"), ("call_1", "execute")]
    inputs = {u["toolCallId"]: (u["title"], u["rawInput"]) for u in updates if "rawInput" in u}
    assert inputs == {
        "call_0": ("Run `make test`", {"line": "make test"}),
        "call_1": ("Run `ls`", {"line": "ls"}),
    }
    ended = [u for u in updates if u.get("status") in ("completed", "failed")]
    assert ended == [
        {
            "sessionUpdate": "tool_call_update", "toolCallId": "call_0", "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "```console\nok\n```"}}],
            "rawOutput": "ok\n",
        },
        {
            "sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "failed",
            "content": [{"type": "content", "content": {"type": "text", "text": "```console\nboom\n```"}}],
            "rawOutput": "boom",
        },
    ]  # fmt: skip


async def test_reasoning_blocks_are_thoughts_and_custom_text_too(tmp_path: Path) -> None:
    message = AIMessageChunk(
        content=[{"type": "reasoning", "reasoning": "Let me see."}, {"type": "text", "text": "Seen."}],
        id="m2",
    )
    updates = await shown([("messages", (message, {})), ("custom", "step 2 of 3")], tmp_path)
    assert [(u["sessionUpdate"], u["content"]["text"]) for u in updates] == [
        ("agent_thought_chunk", "Let me see."),
        ("agent_message_chunk", "Seen."),
        ("agent_thought_chunk", "step 2 of 3"),
    ]
