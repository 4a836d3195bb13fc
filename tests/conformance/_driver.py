"""The client the conformance tests drive an agent command with: ``acpio check``'s own.

:class:`~acpio.check.wire.AgentUnderTest` starts the command, keeps every line both ways in
:attr:`~acpio.check.wire.AgentUnderTest.frames` (even a line that is not JSON) and answers the
agent's requests as :class:`~acpio.check.wire.ScriptedClient` does for the capabilities advertised;
here with the tests' time limits, in the work directory and the environment the test gives.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from acpio.check.wire import AgentUnderTest, Frame, NoAnswer, ScriptedClient

__all__ = [
    "ANSWER_TIMEOUT",
    "EXIT_TIMEOUT",
    "AgentUnderTest",
    "Frame",
    "NoAnswer",
    "ScriptedClient",
    "start_agent",
]

#: Seconds any one answer may take (a busy 2-core machine starts a Python agent in seconds).
ANSWER_TIMEOUT = 30.0
#: Seconds an agent has to exit after its stdin closed.
EXIT_TIMEOUT = 15.0


async def start_agent(
    argv: tuple[str, ...], client: ScriptedClient, *, cwd: Path, env: Mapping[str, str]
) -> AgentUnderTest:
    """Start ``argv`` in ``cwd`` with ``env``, driven by ``client``; its stderr goes to a file in ``cwd``."""
    return await AgentUnderTest.start(
        argv, client, stderr=cwd / "agent-stderr.log", answer_within=ANSWER_TIMEOUT, cwd=cwd, env=env
    )
