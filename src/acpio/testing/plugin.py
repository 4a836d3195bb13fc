"""acpio's pytest plugin: fixtures to test ACP agents and clients (``pip install 'acpio[testing]'``).

Tell it what to test by defining one fixture in your ``conftest.py`` or test module:

* ``acpio_agent``: the agent under test: an ``AgentApp``, a builder, any component, or a command
  line (``"python my_agent.py"``, spawned as a process).

Then use:

* ``acpio_client``: a :class:`~acpio.testing.TestClient` connected to it (in-process for an app or a
  builder), initialized, its session in ``tmp_path``;
* ``acpio_protocol``: the ACP version the client speaks, 1 unless the test is marked
  ``@pytest.mark.acpio_protocol(2)`` (``acpio_protocol(1, 2)`` runs the test once per version);
* ``acpio_cassette``: this test's cassette, ``cassettes/<module>/<test>.jsonl`` beside the test
  file: ``acpio_cassette.agent(real)`` is the recorded agent (a fake agent for client tests),
  ``await acpio_cassette.check(agent)`` replays the recorded client against an agent and fails with
  the conversation where it departs. ``pytest --acpio-record`` records (or refreshes) them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, Literal, cast

import pytest
import pytest_asyncio

from acpio.capabilities import UnsupportedProtocolVersion
from acpio.testing.agent_replay import Faults, ReplayAgent
from acpio.testing.client import AgentUnderTest, TestClient, as_component, connect_client
from acpio.testing.client_replay import replay_client
from acpio.testing.matching import Tolerance
from acpio.trace.cassette import Recording

__all__ = ["CassetteFixture"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--acpio-record``: record the cassettes of the tests that run, instead of replaying them."""
    group = parser.getgroup("acpio")
    group.addoption(
        "--acpio-record",
        action="store_true",
        default=False,
        help="record (or refresh) the acpio cassettes of the tests that run instead of replaying them",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``acpio_protocol`` marker."""
    config.addinivalue_line(
        "markers",
        "acpio_protocol(*versions): the ACP versions (1, 2) the acpio_client fixture speaks; "
        "several run the test once per version",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``@pytest.mark.acpio_protocol(1, 2)``: one run of the test per version."""
    marker = metafunc.definition.get_closest_marker("acpio_protocol")
    if marker is None or "acpio_protocol" not in metafunc.fixturenames:
        return
    versions = marker.args or (1,)
    for version in versions:
        if version not in (1, 2):
            raise pytest.UsageError(f"@pytest.mark.acpio_protocol({version!r}): ACP versions are 1 and 2")
    metafunc.parametrize("acpio_protocol", versions, ids=[f"v{v}" for v in versions])


@pytest.fixture
def acpio_agent() -> AgentUnderTest:
    """The agent under test: define this fixture (an ``AgentApp``, a builder, a component or a command)."""
    pytest.fail(
        "define a fixture named acpio_agent returning the agent under test: an AgentApp, a builder, "
        'a component such as AcpAgent, or its command line ("python my_agent.py")',
        pytrace=False,
    )


@pytest.fixture
def acpio_protocol(request: pytest.FixtureRequest) -> Literal[1, 2]:
    """The ACP version the test's client speaks: 1, or the ``acpio_protocol`` marker's."""
    marker = request.node.get_closest_marker("acpio_protocol")
    version = marker.args[0] if marker is not None and marker.args else 1
    return cast("Literal[1, 2]", version)


@pytest_asyncio.fixture
async def acpio_client(
    acpio_agent: AgentUnderTest, acpio_protocol: Literal[1, 2], tmp_path: Path
) -> AsyncIterator[TestClient]:
    """A :class:`~acpio.testing.TestClient` connected to ``acpio_agent``, its session in ``tmp_path``."""
    try:
        async with connect_client(acpio_agent, cwd=tmp_path, protocol=acpio_protocol) as client:
            yield client
    except UnsupportedProtocolVersion as exc:  # raised by initialize, before the test runs
        pytest.fail(
            f"the agent under test speaks ACP {exc.version} only, and this test asks for "
            f"{acpio_protocol} (@pytest.mark.acpio_protocol): build an AgentApp with protocols=(1, 2) "
            "to serve both, or leave that version out of the marker",
            pytrace=False,
        )


class CassetteFixture:
    """The cassette of one test (see the module docstring): ``path``, and whether this run records it."""

    def __init__(self, path: Path, recording: bool) -> None:
        self.path = path
        self.recording = recording

    def __repr__(self) -> str:
        return f"CassetteFixture({str(self.path)!r}, recording={self.recording})"

    def agent(self, real: AgentUnderTest | None = None, *, faults: Faults | None = None) -> Any:
        """The agent to connect a client to: ``real`` recorded (``--acpio-record``), else the replay."""
        if self.recording:
            if real is None:
                pytest.fail(
                    f"--acpio-record: give acpio_cassette.agent() the real agent to record {self.path}"
                )
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return Recording(as_component(real), self.path)
        self._require()
        return ReplayAgent(self.path, faults=faults)

    async def check(
        self,
        agent: AgentUnderTest,
        *,
        cwd: str | Path,
        tolerance: Tolerance | None = None,
        wait_timeout: float = 5.0,
    ) -> None:
        """Replay the recorded client against ``agent``; fail with the conversation where it departs.

        With ``--acpio-record`` the cassette is refreshed instead: the agent's answers of this run
        replace the recorded ones.
        """
        if not self.path.is_file():  # --acpio-record cannot make it: it needs the recorded client
            pytest.fail(
                f"no cassette at {self.path} to check the agent against: check() replays a recorded "
                "client, which --acpio-record cannot invent. Record the conversation first, with "
                f"`acpio prompt --record {self.path} --agent CMD PROMPT` or a client test that connects "
                "to acpio_cassette.agent(real_agent) under --acpio-record",
                pytrace=False,
            )
        report = await replay_client(
            self.path, agent, cwd=cwd, tolerance=tolerance, wait_timeout=wait_timeout
        )
        if self.recording:
            report.as_cassette().save(self.path)
            return
        report.check()

    def _require(self) -> None:
        if not self.path.is_file():
            pytest.fail(
                f"no cassette at {self.path}: run pytest with --acpio-record to record it", pytrace=False
            )


@pytest.fixture
def acpio_cassette(request: pytest.FixtureRequest) -> CassetteFixture:
    """The test's cassette, ``cassettes/<module>/<test>.jsonl`` beside the test file."""
    module = Path(str(request.node.path))
    name = "".join(c if c.isalnum() or c in "-_." else "_" for c in request.node.name)
    path = module.parent / "cassettes" / module.stem / f"{name}.jsonl"
    return CassetteFixture(path, bool(request.config.getoption("--acpio-record")))
