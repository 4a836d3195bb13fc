"""A LangGraph graph served to an ACP v2 editor: interrupts as forms, approvals as v2 permission requests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langgraph", reason="the langgraph extra is not installed: pip install 'acpio[langgraph]'"
)

from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.types import interrupt

from acpio.frameworks.langgraph import approve, graph_app
from acpio.schema import v2
from acpio.testing import serving
from tests.app._wire_v2 import is_idle, open_session_v2, prompt_v2

from .test_serve import agent_graph, calling

FORMS = {"elicitation": {"form": {}}}


def states(frames: list[Any]) -> list[str]:
    return [
        f["params"]["update"]["state"]
        for f in frames
        if f.get("method") == "session/update" and f["params"]["update"]["sessionUpdate"] == "state_update"
    ]


def said(frames: list[Any]) -> str:
    return "".join(
        f["params"]["update"]["content"]["text"]
        for f in frames
        if f.get("method") == "session/update"
        and f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


async def test_an_interrupt_is_a_form_while_the_session_requires_action(tmp_path: Path) -> None:
    async def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"Hello, {interrupt('Your name?')}.")]}

    graph = StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask")
    app = graph_app(graph.compile(checkpointer=InMemorySaver()), protocols=(1, 2))
    async with serving(app.builder(2)) as peer:
        sid, _ = await open_session_v2(peer, tmp_path, FORMS)
        asked = prompt_v2(peer, sid, "greet me")
        before: list[Any] = []
        assert "messageId" in (await peer.response_to(asked, before))["result"]
        form = await peer.message_for("elicitation/create", before)
        assert states(before) == ["running", "requires_action"]
        assert form["params"]["requestedSchema"]["properties"] == {
            "answer": {"type": "string", "title": "Your name?"}
        }
        peer.respond(form, {"action": "accept", "content": {"answer": "Ada"}})
        after: list[Any] = []
        idle = await peer.until(is_idle, after)
    assert states([*after, idle]) == ["running", "idle"]
    assert idle["params"]["update"]["stopReason"] == "end_turn"
    assert said(after) == "Hello, Ada."


@pytest.mark.parametrize(("choice", "outcome"), [("allow", "Wrote it."), ("reject", "Refused.")])
async def test_an_approval_is_a_v2_permission_request_on_the_tool_call(
    tmp_path: Path, choice: str, outcome: str
) -> None:
    def write_file(path: str, content: str) -> str:
        """Write a file if the user allows it."""
        if not approve("write_file", {"path": path, "content": content}):
            return "Refused."
        (tmp_path / path).write_text(content)
        return "Wrote it."

    script: list[AIMessage | str] = [
        calling("write_file", {"path": "a.txt", "content": "x"}, "call_1"),
        "Ok.",
    ]
    app = graph_app(agent_graph(script, [write_file]), protocols=(2,))
    async with serving(app.builder(2)) as peer:
        sid, _ = await open_session_v2(peer, tmp_path)
        frames: list[Any] = []
        prompt_v2(peer, sid, "write")
        asked = await peer.message_for("session/request_permission", frames)
        request = v2.RequestPermissionRequest.model_validate(asked["params"])
        assert request.title == "Edit a.txt"
        assert isinstance(request.subject, v2.ToolCallPermissionSubject)
        assert request.subject.tool_call.tool_call_id == "call_1"
        assert states(frames)[-1] == "requires_action"
        peer.respond(asked, {"outcome": {"outcome": "selected", "optionId": choice}})
        idle = await peer.until(is_idle, frames)
    results = [
        f["params"]["update"].get("rawOutput")
        for f in frames
        if f.get("method") == "session/update"
        and f["params"]["update"]["sessionUpdate"] == "tool_call_update"
    ]
    assert outcome in results
    assert (tmp_path / "a.txt").exists() == (choice == "allow")
    assert idle["params"]["update"]["stopReason"] == "end_turn"
