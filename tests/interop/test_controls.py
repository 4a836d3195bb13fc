"""Controls: the peer programs against each other, with no acpio in between.

The TypeScript SDK client drives the official Python SDK agent and the official Python SDK client drives the
TypeScript SDK agent, and both must pass the same checks the acpio pairings pass. When an acpio pairing fails
and these pass, the difference is acpio's; when these fail too, the peer programs (or an SDK) are to blame.
"""

from __future__ import annotations

from pathlib import Path

from ._support import (
    PEER_PROMPT,
    PEER_WAIT,
    PY_AGENT,
    PY_CLIENT,
    TS_AGENT,
    TS_CLIENT,
    check_peer_agent_turn,
    client_argv,
    run_client,
)


def test_typescript_client_drives_the_official_python_agent(
    node: str, official_python: str, workdir: Path
) -> None:
    argv = client_argv(
        [node, str(TS_CLIENT)],
        workdir,
        [official_python, str(PY_AGENT)],
        prompts=[PEER_PROMPT],
        cancel_prompt=PEER_WAIT,
    )
    check_peer_agent_turn(run_client(argv), workdir, "official-python-peer-agent")


def test_official_python_client_drives_the_typescript_agent(
    node: str, official_python: str, workdir: Path
) -> None:
    argv = client_argv(
        [official_python, str(PY_CLIENT)],
        workdir,
        [node, str(TS_AGENT)],
        prompts=[PEER_PROMPT],
        cancel_prompt=PEER_WAIT,
    )
    check_peer_agent_turn(run_client(argv), workdir, "ts-peer-agent")
