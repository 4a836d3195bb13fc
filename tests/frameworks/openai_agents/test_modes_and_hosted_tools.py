"""Handoffs as the session's modes, and a hosted tool's call (run by the provider) as a tool call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agents import Agent, WebSearchTool

from acpio.frameworks.openai_agents import openai_agent_app
from acpio.testing import serving

from ._support import NO_TRACES, TIMEOUT, coder, model_on, open_session, send_prompt, updates_of
from .responses_wire import FunctionCall, ResponsesWire, response_stream


def triage(wire: ResponsesWire) -> Agent[Any]:
    reviewer = Agent(
        name="reviewer", handoff_description="Reviews changes", instructions="Review.", model=model_on(wire)
    )
    return coder(wire, handoffs=[reviewer], name="triage")


async def test_the_agents_handoffs_lead_to_are_modes_and_a_handoff_switches_the_mode(
    wire: ResponsesWire, tmp_path: Path
) -> None:
    wire.respond(
        response_stream(calls=[FunctionCall("call_h", "transfer_to_reviewer", "{}")]),
        response_stream(text="Reviewer here."),
        response_stream(text="Still the reviewer."),
        response_stream(text="Triage again."),
    )
    app = openai_agent_app(triage(wire), run_config=NO_TRACES)
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        opened = await open_session(peer, tmp_path)
        session = opened["sessionId"]
        assert opened["modes"]["currentModeId"] == "triage"
        offered = [(m["id"], m.get("description")) for m in opened["modes"]["availableModes"]]
        assert offered == [("triage", None), ("reviewer", "Reviews changes")]
        seen: list[Any] = []
        assert (await peer.response_to(send_prompt(peer, session, "review this"), seen))["result"] == {
            "stopReason": "end_turn"
        }
        switched = [u for u in updates_of(seen) if u["sessionUpdate"] == "current_mode_update"]
        assert switched == [{"sessionUpdate": "current_mode_update", "currentModeId": "reviewer"}]
        await peer.response_to(send_prompt(peer, session, "and now?"))  # starts at the reviewer
        chosen = peer.request("session/set_mode", {"sessionId": session, "modeId": "triage"})
        assert "result" in await peer.response_to(chosen)
        await peer.response_to(send_prompt(peer, session, "back"))
    instructions = [r.body["instructions"] for r in wire.requests_made]
    assert instructions == ["You edit files.", "Review.", "Review.", "You edit files."]


async def test_a_hosted_web_search_is_a_completed_search_call(wire: ResponsesWire, tmp_path: Path) -> None:
    search = {
        "id": "ws_1",
        "type": "web_search_call",
        "status": "completed",
        "action": {"type": "search", "query": "agent client protocol"},
    }
    wire.respond(response_stream(hosted=[search], text="ACP connects editors and agents."))
    app = openai_agent_app(coder(wire, WebSearchTool()), run_config=NO_TRACES)
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session = (await open_session(peer, tmp_path))["sessionId"]
        seen: list[Any] = []
        await peer.response_to(send_prompt(peer, session, "what is ACP?"), seen)
    call, done = [u for u in updates_of(seen) if u["sessionUpdate"].startswith("tool_call")]
    assert (call["title"], call["kind"]) == ("Search agent client protocol", "search")
    assert call["rawInput"] == {"query": "agent client protocol"}
    assert done["status"] == "completed"
    assert [tool["type"] for tool in wire.requests_made[0].body["tools"]] == ["web_search"]
    assert json.dumps(seen).index("tool_call") < json.dumps(seen).index("ACP connects")
