"""Every example agent, ``acpio agent --offline`` and ``acpio testy`` meet the ACP test kit's v1 requirements.

Each test starts the agent command as an editor would and runs one scripted connection against it
(``_exchange.py``), with a client that advertises nothing (as the kit's does), only files, or
everything and a future protocol version. The failure lists each requirement not met, with what
was sent and what came back.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.conformance._exchange import PROFILES, AgentCommand, ClientProfile, check_agent
from tests.conformance._schema import agent_schema

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PY = sys.executable

AGENTS = (
    AgentCommand("echo_agent", (PY, str(EXAMPLES / "echo_agent.py"))),
    AgentCommand("trait_echo_agent", (PY, str(EXAMPLES / "trait_echo_agent.py"))),
    AgentCommand(
        "wordcount_agent", (PY, str(EXAMPLES / "wordcount_agent.py")), work_prompt="count these words"
    ),
    pytest.param(
        AgentCommand(
            "acpio_agent_offline",
            (PY, "-m", "acpio", "agent", "--offline"),
            busy_prompt="wait 60",
            work_prompt="read notes.txt\nwrite made.txt: made by the agent\nrun echo hello",
        ),
        marks=pytest.mark.slow,  # a model, tools, a database: seconds per connection on a busy machine
    ),
    AgentCommand("acpio_testy", (PY, "-m", "acpio", "testy"), busy_prompt="sleep 60"),
)
#: Agents that also serve v2 (``AgentApp(protocols=(1, 2))``): a client asking for a version above
#: 1 gets v2, which the v1 requirements do not judge; they are checked with the v1 clients.
BOTH_VERSIONS = (
    AgentCommand(
        "both_versions_agent", (PY, str(EXAMPLES / "both_versions_agent.py")), work_prompt="count these words"
    ),
    pytest.param(  # a LangGraph graph: busy while the user is asked to allow its write
        AgentCommand("langgraph_agent", (PY, str(EXAMPLES / "langgraph_agent.py")), busy_prompt="note"),
        marks=pytest.mark.slow,  # LangGraph takes seconds to import on a busy machine
    ),
)
#: Example agents that speak ACP v2 only (a v1 client gets -32022): the kit's v1 requirements do
#: not apply; tests/router and tests/interop/test_router.py run them.
V2_ONLY = {"v2_echo_agent.py"}


@pytest.mark.parametrize("profile", PROFILES, ids=lambda p: p.name)
@pytest.mark.parametrize("agent", AGENTS, ids=lambda a: str(getattr(a, "name", a)))
async def test_agent_meets_the_acp_test_kit_requirements(
    agent: AgentCommand, profile: ClientProfile, spec_dir: Path, tmp_path: Path
) -> None:
    verdicts = await check_agent(agent, profile, agent_schema(spec_dir / "v1" / "schema.json"), tmp_path)
    assert not verdicts.failures, f"{agent.name} with a {profile.name} client:\n{verdicts.report()}"
    assert not verdicts.unjudged(), sorted(verdicts.unjudged())


@pytest.mark.parametrize("profile", [p for p in PROFILES if p.protocol_version == 1], ids=lambda p: p.name)
@pytest.mark.parametrize("agent", BOTH_VERSIONS, ids=lambda a: str(getattr(a, "name", a)))
async def test_an_agent_of_both_versions_meets_the_v1_requirements_with_v1_clients(
    agent: AgentCommand, profile: ClientProfile, spec_dir: Path, tmp_path: Path
) -> None:
    verdicts = await check_agent(agent, profile, agent_schema(spec_dir / "v1" / "schema.json"), tmp_path)
    assert not verdicts.failures, f"{agent.name} with a {profile.name} client:\n{verdicts.report()}"
    assert not verdicts.unjudged(), sorted(verdicts.unjudged())


def test_every_example_agent_on_stdio_is_checked() -> None:
    agents = {
        path.name
        for path in EXAMPLES.glob("*.py")
        if (
            re.search(r"AgentApp\(|Agent\.builder\(|AgentSideConnection\(", text := path.read_text())
            and re.search(r"Stdio\(\)|app\.run\(\)", text)
        )
        or "run_graph(" in text  # a LangGraph graph served on stdio
    }
    commands = [getattr(a, "values", [a])[0] for a in (*AGENTS, *BOTH_VERSIONS)]
    checked = {Path(command.argv[1]).name for command in commands}
    assert agents - V2_ONLY == checked - {"-m"}


async def test_the_check_catches_an_agent_that_breaks_the_rules(spec_dir: Path, tmp_path: Path) -> None:
    broken = AgentCommand(
        "broken", (PY, str(Path(__file__).with_name("broken_agent.py"))), busy_prompt="wait"
    )
    profile = ClientProfile("future", 65535, {})
    verdicts = await check_agent(broken, profile, agent_schema(spec_dir / "v1" / "schema.json"), tmp_path)
    assert set(verdicts.failures) == {
        "ACP-TRANSPORT-001",  # the banner
        "ACP-INIT-003",  # 65535 echoed
        "ACP-JSONRPC-003",  # notifications answered
        "ACPIO-PARAMS-001",  # session/new without cwd answered with a result...
        "ACP-SCHEMA-001",  # ...without a sessionId
        "ACP-JSONRPC-004",  # unknown methods answered with a result
        "ACP-SESSION-002",  # every session is broken-1
        "ACP-CLIENTCAP-001",  # fs/read_text_file to a client without fs
        "ACP-CANCEL-001",  # the cancelled turn ends end_turn
        "ACP-CANCEL-002",  # an update after its answer
    }, verdicts.report()
