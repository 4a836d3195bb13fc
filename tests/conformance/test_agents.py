"""Every example agent, ``acpio agent --offline`` and ``acpio testy`` meet the ACP test kit's v1 requirements.

Each test starts the agent command as an editor would and runs one scripted connection against it
(``_exchange.py``), with a client that advertises nothing (as the kit's does), only files, or
everything and a future protocol version. The failure lists each requirement not met, with what
was sent and what came back.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conformance._exchange import PROFILES, AgentCommand, ClientProfile, check_agent
from tests.conformance._requirements import REQUIREMENTS
from tests.conformance._schema import agent_schema

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PY = sys.executable

AGENTS = (
    AgentCommand("echo_agent", (PY, str(EXAMPLES / "echo_agent.py"))),
    AgentCommand("trait_echo_agent", (PY, str(EXAMPLES / "trait_echo_agent.py"))),
    AgentCommand(
        "wordcount_agent", (PY, str(EXAMPLES / "wordcount_agent.py")), work_prompt="count these words"
    ),
    AgentCommand(
        "acpio_agent_offline",
        (PY, "-m", "acpio", "agent", "--offline"),
        busy_prompt="wait 60",
        work_prompt="read notes.txt\nwrite made.txt: made by the agent\nrun echo hello",
    ),
    AgentCommand("acpio_testy", (PY, "-m", "acpio", "testy"), busy_prompt="sleep 60"),
)


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize("agent", AGENTS, ids=lambda a: a.name)
async def test_agent_meets_the_acp_test_kit_requirements(
    agent: AgentCommand, profile: ClientProfile, spec_dir: Path, tmp_path: Path
) -> None:
    verdicts = await check_agent(agent, profile, agent_schema(spec_dir / "v1" / "schema.json"), tmp_path)
    assert not verdicts.failures, f"{agent.name} with a {profile.name} client:\n{verdicts.report()}"
    assert not verdicts.unjudged(), sorted(verdicts.unjudged())


def test_every_requirement_has_a_tier_the_kit_uses() -> None:
    assert {tier for tier, _ in REQUIREMENTS.values()} == {"mandatory", "capability", "advisory"}
