"""An ACP agent as a tool of an Agents SDK agent: ``acpio testy`` and ``acpio agent --offline`` in real
processes, called by the model of an SDK agent (the real SDK on the local Responses server)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner

from acpio.frameworks.openai_agents import acp_agent_tool

from ._support import NO_TRACES, model_on
from .responses_wire import FunctionCall, ResponsesWire, response_stream

ACPIO = [sys.executable, "-m", "acpio"]


async def run(agent: Agent[Any], prompt: str) -> Any:
    """The agent's final output (streamed: the wire server speaks the streaming API)."""
    result = Runner.run_streamed(agent, prompt, run_config=NO_TRACES)
    async for _ in result.stream_events():
        pass
    return result.final_output


@pytest.mark.slow  # took 12 s on the loaded 2-core machine (an agent process per call)
async def test_the_model_asks_testy_and_gets_its_answer(wire: ResponsesWire, tmp_path: Path) -> None:
    testy = acp_agent_tool([*ACPIO, "testy"], name="ask_testy", description="Ask testy.", cwd=tmp_path)
    asked = json.dumps({"prompt": "echo hello from testy"})
    wire.respond(
        response_stream(calls=[FunctionCall("call_t", "ask_testy", asked)]),
        response_stream(text="Testy says hello."),
    )
    agent = Agent(name="boss", instructions="Delegate.", model=model_on(wire), tools=[testy])
    assert await run(agent, "ask testy") == "Testy says hello."
    offered = wire.requests_made[0].body["tools"][0]
    assert (offered["name"], offered["description"]) == ("ask_testy", "Ask testy.")
    assert list(offered["parameters"]["properties"]) == ["prompt"]
    told = wire.requests_made[1].body["input"][-1]
    assert told == {"call_id": "call_t", "output": "hello from testy\n", "type": "function_call_output"}


async def test_the_offline_reference_agent_edits_a_file_through_the_tools_client(
    wire: ResponsesWire, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("- buy milk\n")
    offline = [*ACPIO, "agent", "--offline", "--store", "memory:", "--credentials", str(tmp_path / "k.json")]
    coder = acp_agent_tool(
        offline, name="coder", description="A coding agent.", cwd=tmp_path, permissions="allow", files=True
    )
    asked = json.dumps({"prompt": "edit notes.txt: - buy milk => - buy milk\\n- try acpio"})
    wire.respond(
        response_stream(calls=[FunctionCall("call_c", "coder", asked)]),
        response_stream(text="Edited."),
    )
    agent = Agent(name="boss", instructions="Delegate.", model=model_on(wire), tools=[coder])
    assert await run(agent, "add a line to my notes") == "Edited."
    assert (tmp_path / "notes.txt").read_text() == "- buy milk\n- try acpio\n"
    told = wire.requests_made[1].body["input"][-1]["output"]
    assert "Edited notes.txt" in told
