"""acpio's pytest plugin, run by pytester: fixtures, the protocol marker, failures that show the
conversation, and cassettes recorded with --acpio-record, replayed, checked and refreshed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from acpio.agents import testy
from acpio.agents.testy import serve as testy_serve
from acpio.testing import ReplayAgent, connect_client, replay_client
from acpio.trace.cassette import Cassette, Recording

#: The inner runs load only the plugins they need (not every one installed: hypothesis, langsmith...
#: cost seconds a run), the way pytest's entry points would load these two.
PLUGIN = ("-p", "pytest_asyncio.plugin", "-p", "acpio.testing.plugin")

CONFTEST = """
import pytest
from acpio.agents.testy.serve import testy_component

@pytest.fixture
def acpio_agent():
    return testy_component(protocols=(1, 2))
"""


@pytest.fixture(scope="module", autouse=True)
def _warm(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Build here, once, what the inner runs use: pytester forgets the modules an inner run imports."""

    async def exchange(cwd: Path) -> None:
        cassette = cwd / "warm.jsonl"
        for version in (1, 2):
            async with connect_client(
                testy_serve.testy_component(protocols=(1, 2)), cwd=cwd, protocol=version
            ) as client:
                await client.prompt("hello")
        async with connect_client(Recording(testy.testy_agent(), cassette), cwd=cwd) as client:
            await client.prompt("write notes.txt hello", permissions="allow")
        async with connect_client(ReplayAgent(cassette), cwd=cwd) as client:
            await client.prompt("write notes.txt hello", permissions="allow")
        (await replay_client(cassette, testy.testy_agent(), cwd=cwd)).check()

    asyncio.run(exchange(tmp_path_factory.mktemp("warm")))


@pytest.fixture(autouse=True)
def _no_autoload(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(CONFTEST)
    return pytester


def test_the_client_fixture_speaks_each_version_the_marker_names(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        import pytest

        @pytest.mark.acpio_protocol(1, 2)
        async def test_echo(acpio_client, acpio_protocol):
            turn = await acpio_client.prompt("hello there")
            assert turn.text == "hello there"
            assert turn.stop_reason == "end_turn"
            answer = acpio_client.conversation.entries[1].message["result"]
            assert answer["protocolVersion"] == acpio_protocol

        async def test_default_is_v1(acpio_client, acpio_protocol):
            assert acpio_protocol == 1
            acpio_client.conversation.assert_no_request("fs/write_text_file")
        """
    )
    result = project.runpytest(*PLUGIN, "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["*test_echo?v1? PASSED*", "*test_echo?v2? PASSED*"])


def test_a_failed_check_shows_the_conversation(project: pytest.Pytester) -> None:
    project.makepyfile(
        """
        async def test_says_goodbye(acpio_client):
            await acpio_client.prompt("hello there")
            acpio_client.conversation.assert_said("goodbye")
        """
    )
    result = project.runpytest(*PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ConversationError: the agent did not say 'goodbye'; it said 'hello there'",
            "*the conversation:",
            "*client → agent  initialize  protocol v1",
            '*client → agent  session/prompt  "hello there"',
            '*agent ↝ client  session/update  agent_message_chunk "hello "',
            "*agent ⇢ client  session/prompt  stopReason: end_turn",
        ]
    )


def test_without_an_agent_fixture_the_test_says_what_to_define(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile("async def test_it(acpio_client):\n    pass\n")
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*define a fixture named acpio_agent returning the agent under test*"])


CLIENT_TEST = """
from acpio.agents.testy import testy_agent
from acpio.testing import ReplayAgent, connect_client

async def test_client(acpio_cassette, tmp_path):
    agent = acpio_cassette.agent(testy_agent())
    assert isinstance(agent, ReplayAgent) != acpio_cassette.recording
    async with connect_client(agent, cwd=tmp_path) as client:
        turn = await client.prompt("write notes.txt hello", permissions="allow")
    assert turn.stop_reason == "end_turn"
    assert (tmp_path / "notes.txt").read_text() == "hello"
"""


def test_a_cassette_is_recorded_then_replayed(project: pytest.Pytester) -> None:
    project.makepyfile(test_rec=CLIENT_TEST)
    missing = project.runpytest(*PLUGIN)
    missing.assert_outcomes(failed=1)
    missing.stdout.fnmatch_lines(["*no cassette at *test_client.jsonl: run pytest with --acpio-record*"])
    project.runpytest(*PLUGIN, "--acpio-record").assert_outcomes(passed=1)
    cassette = project.path / "cassettes" / "test_rec" / "test_client.jsonl"
    assert str(project.path) not in cassette.read_text()  # its tmp_path became <cwd>
    assert "fs/write_text_file" in {e.method for e in Cassette.load(cassette)}
    project.runpytest(*PLUGIN).assert_outcomes(passed=1)  # replayed: the write came from the cassette


AGENT_TEST = """
from acpio.agents.testy import TestyOptions, testy_agent

async def test_agent(acpio_cassette, tmp_path):
    await acpio_cassette.check(testy_agent(TestyOptions(load_session={load})), cwd=tmp_path)
"""


def test_an_agent_is_checked_against_its_cassette_and_refreshed(project: pytest.Pytester) -> None:
    project.makepyfile(test_rec=CLIENT_TEST.replace("test_client", "test_agent"))
    project.runpytest(*PLUGIN, "--acpio-record").assert_outcomes(passed=1)  # a client recorded it
    project.makepyfile(test_rec=AGENT_TEST.format(load=True))
    project.runpytest(*PLUGIN).assert_outcomes(passed=1)
    project.makepyfile(test_rec=AGENT_TEST.format(load=False))
    changed = project.runpytest(*PLUGIN)
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        [
            "*CassetteMismatch: the agent departed from *test_agent.jsonl (1 departure(s)):",
            "*- agent ⇢ client  initialize  protocol v1 acpio-testy 0.1.0",
            "*+ agent ⇢ client  initialize  protocol v1 acpio-testy 0.1.0",
            "*result.agentCapabilities.loadSession: true -> false",
        ]
    )
    project.runpytest(*PLUGIN, "--acpio-record").assert_outcomes(passed=1)  # refreshed: the new answer
    project.runpytest(*PLUGIN).assert_outcomes(passed=1)


DOCS = Path(__file__).resolve().parents[2] / "docs"


def guide_tests(page: str) -> list[str]:
    """The blocks of a guide that are pytest test modules (they use the plugin's fixtures)."""
    blocks = (DOCS / page).read_text().split("```python\n")[1:]
    return [b.split("```", 1)[0] for b in blocks if "async def test_" in b]


def guide_configuration(page: str) -> str:
    """The pytest configuration a guide tells its reader to write (its ``pyproject.toml`` block)."""
    blocks = (DOCS / page).read_text().split("```toml\n")[1:]
    (configuration,) = [b.split("```", 1)[0] for b in blocks if "[tool.pytest.ini_options]" in b]
    return configuration


def test_the_agent_guides_tests_pass(pytester: pytest.Pytester) -> None:
    # Under the page's own configuration, where a deprecation warning of pytest-asyncio is an error:
    # a reader who copies it gets no warning at every run.
    pytester.makepyprojecttoml(guide_configuration("testing-agents.md"))
    pytester.makeconftest(CONFTEST)
    project = pytester
    strict = (*PLUGIN, "-W", "error::pytest.PytestDeprecationWarning")
    fixtures, cassette_check = guide_tests("testing-agents.md")
    project.makepyfile(test_guide=fixtures)
    project.runpytest(*strict, "-v").assert_outcomes(passed=3)
    project.makepyfile(test_guide=cassette_check)
    cassette = project.path / "cassettes" / "test_guide" / "test_it_still_answers_as_recorded.jsonl"
    cassette.parent.mkdir(parents=True)

    async def record() -> None:
        async with connect_client(Recording(testy.testy_agent(), cassette), cwd=project.path) as client:
            await client.prompt("hello there")

    asyncio.run(record())
    project.runpytest(*strict).assert_outcomes(passed=1)


def test_the_client_guides_test_records_then_replays(project: pytest.Pytester) -> None:
    (client_test,) = guide_tests("testing-clients.md")
    project.makepyfile(test_guide=client_test)
    project.runpytest(*PLUGIN, "--acpio-record").assert_outcomes(passed=1)
    project.runpytest(*PLUGIN).assert_outcomes(passed=1)


@pytest.mark.parametrize("flags", [("--acpio-record",), ()], ids=["recording", "replaying"])
def test_checking_an_agent_with_no_cassette_says_how_to_make_one(
    project: pytest.Pytester, flags: tuple[str, ...]
) -> None:
    # check() replays a recorded client: --acpio-record cannot create that cassette, so telling the
    # user to run --acpio-record sends them in a circle, whether they ran it already or not.
    project.makepyfile(test_rec=AGENT_TEST.format(load=True))
    result = project.runpytest(*PLUGIN, *flags)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*no cassette at *test_agent.jsonl to check the agent against*acpio prompt --record*"]
    )
    result.stdout.no_fnmatch_line("*run pytest with --acpio-record to record it*")


def test_a_v1_only_agent_under_the_v2_marker_says_how_to_serve_v2(pytester: pytest.Pytester) -> None:
    # "Upgrade acpio or the agent" is no help to someone whose AgentApp merely lacks protocols=(1, 2).
    pytester.makeini("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest(CONFTEST.replace("protocols=(1, 2)", "protocols=(1,)"))
    pytester.makepyfile(
        "import pytest\n\n@pytest.mark.acpio_protocol(2)\nasync def test_it(acpio_client):\n    pass\n"
    )
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the agent under test speaks ACP 1 only*protocols=(1, 2)*"])
