"""examples/openai_agents_agent.py meets the ACP test kit's v1 requirements with v1 clients.

The example runs as an editor starts it, its model a wire server that answers from the prompt: a
prompt saying ``wait`` streams until the client goes away (the turn to cancel), ``write`` calls
the example's ``write_file`` tool, anything else gets a short answer.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.agents.coder.wire._http import Recorded, Sse
from tests.conformance._exchange import PROFILES, AgentCommand, ClientProfile, check_agent
from tests.conformance._schema import agent_schema

from .responses_wire import FunctionCall, ResponsesWire, response_stream

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "openai_agents_agent.py"

pytestmark = pytest.mark.slow  # a fresh agent process per client profile, importing the Agents SDK


def answer(request: Recorded) -> Sse:
    """The model's reply to ``request``, from the last thing in its input."""
    last = request.body["input"][-1]
    if last.get("type") == "function_call_output":
        return response_stream(text="Done.")
    said = json.dumps(last.get("content"))
    if "wait" in said:
        return response_stream(text="Waiting", hold=True)
    if "write" in said:
        made = json.dumps({"path": "made.txt", "content": "made by the agent\n"})
        return response_stream(calls=[FunctionCall("call_made", "write_file", made)])
    return response_stream(text="I keep notes in files.")


@pytest.fixture
async def model() -> AsyncIterator[ResponsesWire]:
    async with ResponsesWire(answer) as server:
        yield server


#: The example serves v1 and v2: a client asking for a version above 1 gets v2, which the v1
#: requirements do not judge (test_example.py drives it on v2).
@pytest.mark.parametrize("profile", [p for p in PROFILES if p.protocol_version == 1], ids=lambda p: p.name)
async def test_the_example_meets_the_acp_test_kit_requirements(
    model: ResponsesWire, profile: ClientProfile, spec_dir: Path, tmp_path: Path
) -> None:
    settings = (
        "OPENAI_API_KEY=sk-wire",
        f"OPENAI_BASE_URL={model.base_url}",
        "OPENAI_AGENTS_DISABLE_TRACING=1",
    )
    agent = AgentCommand(
        "openai_agents_agent",
        ("env", *settings, sys.executable, str(EXAMPLE)),  # the kit's environment holds no API key
        busy_prompt="wait 60",
        work_prompt="write made.txt",
    )
    verdicts = await check_agent(agent, profile, agent_schema(spec_dir / "v1" / "schema.json"), tmp_path)
    assert not verdicts.failures, f"{agent.name} with a {profile.name} client:\n{verdicts.report()}"
    assert not verdicts.unjudged(), sorted(verdicts.unjudged())
    assert (tmp_path / "work" / "made.txt").read_text() == "made by the agent\n"
