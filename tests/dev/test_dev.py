"""``acpio dev``: the agent restarts when its file changes, and the client's session goes on."""

from __future__ import annotations

import asyncio
import shutil
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
