"""``acpio dev``: the agent restarts when its file changes, and the client's session goes on."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpio import Client
from acpio import schema as acp
from acpio.transports import AcpAgent

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30.0


@pytest.mark.slow
async def test_the_agent_restarts_on_a_change_and_keeps_the_session(tmp_path: Path) -> None:
    agent_file = tmp_path / "wordcount_agent.py"
    shutil.copy(ROOT / "examples" / "wordcount_agent.py", agent_file)
    log: list[str] = []
    reopened = asyncio.Event()

    def stderr(line: str) -> None:
        log.append(line)
        if "reopened with session/new" in line:
            reopened.set()

    dev = AcpAgent(
        [sys.executable, "-m", "acpio", "dev", "--interval", "0.1", str(agent_file)],
        cwd=tmp_path,
        stderr=stderr,
    )

    async def main(cx: Any) -> tuple[str, str, str, str]:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(tmp_path).start_session() as session:
            session.send_prompt("one two three")
            before = await session.read_to_string()
            agent_file.write_text(agent_file.read_text().replace("Your prompt has", "You wrote"))
            await asyncio.wait_for(reopened.wait(), TIMEOUT)
            session.send_prompt("four five")
            after = await session.read_to_string()
            return session.session_id, before, after, session.session_id

    async with asyncio.timeout(TIMEOUT * 2):
        first_id, before, after, later_id = await Client.builder().connect_with(dev, main)
    assert before == "Your prompt has 3 words."
    assert after == "You wrote 2 words."
    assert later_id == first_id
    assert any("wordcount_agent.py changed: restarting the agent" in line for line in log), log


_STORED_AGENT = """
import sys
from acpio import AgentApp, Turn

app = AgentApp("remembering", version="1.0", store=sys.argv[1])


@app.prompt
async def prompt(turn: Turn) -> str:
    await turn.say(f"{len(turn.history)} turns before this one")
    return "end_turn"


if __name__ == "__main__":
    app.run()
"""


@pytest.mark.slow
async def test_an_agent_with_a_sqlite_store_keeps_the_history_across_a_restart(tmp_path: Path) -> None:
    agent_file = tmp_path / "remembering_agent.py"
    agent_file.write_text(_STORED_AGENT)
    store = f"sqlite:///{tmp_path / 'sessions.db'}"
    reopened = asyncio.Event()
    log: list[str] = []

    def stderr(line: str) -> None:
        log.append(line)
        if "reopened with" in line:
            reopened.set()

    dev = AcpAgent(
        [sys.executable, "-m", "acpio", "dev", "--interval", "0.1", str(agent_file), store],
        cwd=tmp_path,
        stderr=stderr,
    )

    async def main(cx: Any) -> list[str]:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        said = []
        async with cx.build_session(tmp_path).start_session() as session:
            for text in ("one", "two"):
                session.send_prompt(text)
                said.append(await session.read_to_string())
            agent_file.write_text(_STORED_AGENT.replace("turns before", "turns before (restarted)"))
            await asyncio.wait_for(reopened.wait(), TIMEOUT)
            session.send_prompt("three")
            said.append(await session.read_to_string())
        return said

    async with asyncio.timeout(TIMEOUT * 2):
        said = await Client.builder().connect_with(dev, main)
    assert said == [
        "0 turns before this one",
        "1 turns before this one",
        "2 turns before (restarted) this one",
    ]
    assert any("reopened with session/resume" in line for line in log), log


def test_a_missing_agent_file_is_one_line_saying_what_to_give(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "dev", str(tmp_path / "nothing.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"acpio: error: no agent file {tmp_path / 'nothing.py'}: give an AgentApp file or the agent's command"
    )
