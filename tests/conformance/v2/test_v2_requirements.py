"""acpio's agents meet our ACP v2 requirements (:mod:`tests.conformance.v2._requirements`).

Each agent command is started as an editor would start it and driven once through a scripted v2
conversation (:mod:`tests.conformance.v2._exchange`); then each requirement is one test, named by
its id, that fails with its tier, the spec text it checks and what the agent did. A requirement
about a feature the agent does not offer (a CAPABILITY or INFORMATIONAL one) is skipped, saying so;
a MANDATORY or ADVISORY one never is.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conformance.v2._agent import AgentCommand
from tests.conformance.v2._exchange import Verdicts, run
from tests.conformance.v2._requirements import BY_ID, REQUIREMENTS, Requirement, Tier
from tests.conformance.v2._schema import v2_schema

PY = sys.executable
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"

TESTY_PROMPTS = {
    "simple": "echo hello there",
    "busy": "sleep 60",
    "permission": "permission May I?",
    "cancellable_tool": "work 60 a long task",
    "terminal": "run sleep 60",
    "edit": "write conformance.txt made by testy",
    "upsert": "echo draft\nreplace the final answer",
    "plan": "plan read; write\nprogress 1",
    "background": "background 0.2 the build finished",
}

AGENTS = (
    AgentCommand(
        "testy_v2", (PY, "-m", "acpio", "testy", "--protocol", "2"), auth_argv=("--auth",), **TESTY_PROMPTS
    ),
    AgentCommand("testy_both", (PY, "-m", "acpio", "testy", "--protocol", "both"), **TESTY_PROMPTS),
    # AgentApp(protocols=(1, 2)): its one prompt counts words and asks permission before it answers.
    AgentCommand(
        "both_versions_agent",
        (PY, str(EXAMPLES / "both_versions_agent.py")),
        simple="count these words",
        busy="count these words",
        permission="count these words",
        plan="count these words",
    ),
    # The reference coding agent on its scripted offline model (its own files, agent terminals).
    AgentCommand(
        "acpio_agent_v2",
        (PY, "-m", "acpio", "agent", "--offline", "--protocol", "2", "--store", "memory:"),
        simple="say hello there",
        busy="wait 60",
        permission="write permitted.txt: asked first",
        terminal="run sleep 60",
        edit="write conformance.txt: made by the coder",
        plan="plan read; write",
    ),
    # run_graph(..., protocols=(1, 2)): its scripted model asks to write notes.txt, then answers. The
    # script is one for the process: after the turn cancelled at its permission (busy) the next
    # model call answers at once, so no permission prompt is given.
    AgentCommand(
        "langgraph_agent",
        (PY, str(EXAMPLES / "langgraph_agent.py")),
        simple="take a note",
        busy="take a note",
    ),
    # (examples/v2_echo_agent.py is a minimal builder without the router and the session baseline:
    # tests/router runs it.)
)


@pytest.fixture(scope="module", params=AGENTS, ids=lambda agent: agent.name)
def verdicts(
    request: pytest.FixtureRequest, shared_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Verdicts:
    """The verdicts of one agent's scripted conversation (run once per agent and module)."""
    agent: AgentCommand = request.param
    work = tmp_path_factory.mktemp(agent.name)
    return run(agent, v2_schema(shared_dir / "spec" / "v2" / "schema.json"), work)


@pytest.mark.parametrize("requirement", REQUIREMENTS, ids=lambda requirement: requirement.id)
def test_requirement(requirement: Requirement, verdicts: Verdicts, request: pytest.FixtureRequest) -> None:
    known = verdicts.agent.known_failures.get(requirement.id)
    if known is not None:
        request.applymarker(pytest.mark.xfail(strict=True, reason=known))
    result = verdicts.results.get(requirement.id, "the exchange never judged it")
    if isinstance(result, tuple):
        assert requirement.tier is not Tier.MANDATORY, (
            f"{requirement.id} is {requirement.tier}: it applies to every v2 agent, yet: {result[1]}"
        )
        pytest.skip(f"{requirement.id} ({requirement.tier}, {requirement.text}): {result[1]}")
    assert result is None, f"{requirement.id} [{requirement.tier}] {requirement.text}:\n{result}"


def test_the_registry_names_each_requirement_once_with_a_tier_and_its_text() -> None:
    assert len(BY_ID) == len(REQUIREMENTS)
    assert {requirement.tier for requirement in REQUIREMENTS} == set(Tier)
    for requirement in REQUIREMENTS:
        assert requirement.id.startswith("ACP2-"), requirement
        assert requirement.text, requirement
        assert "batch" not in requirement.text.replace("no batches", ""), requirement  # v2 has none
