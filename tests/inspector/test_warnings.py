"""Each warning of the inspector, raised by a real agent process that breaks that one rule.

The agent is ``misbehaving_agent.py`` (standard library only, so it starts fast); the inspector's
connection drives it as the page would, and the test reads the warnings the frames raised. A
well-behaved run of the same agent raises none, so each warning is the rule's doing.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from acpio.inspector import RULES, Answers, FrameChecker, InspectedConnection, Inspection
from acpio.transports import AcpAgent

AGENT = Path(__file__).with_name("misbehaving_agent.py")


async def wait_for_answer(inspection: Inspection, method: str) -> None:
    """Wait until a response to ``method`` has been recorded (the page's feed, read as a page would)."""
    queue = inspection.subscribe()
    try:
        for frame in inspection.frames:
            event = orjson.loads(frame.event)
            if event["type"] == "response" and event.get("method") == method:
                return
        async with asyncio.timeout(20):
            while (message := await queue.get()) is not None:
                event = orjson.loads(message)["event"]
                if event["type"] == "response" and event.get("method") == method:
                    return
    finally:
        inspection.unsubscribe(queue)


async def run_agent(
    rule: str, tmp_path: Path, *, load: bool = False, capabilities: Any = None
) -> list[dict[str, Any]]:
    """Drive the agent breaking ``rule`` (initialize, session/new, a prompt or a load); its warnings."""
    inspection = Inspection({"command": rule}, checker=FrameChecker(long_line=4000))
    agent = await AcpAgent([sys.executable, str(AGENT), rule], stderr=inspection.record_stderr).open()
    answers = Answers(tmp_path)
    answers.policies.files = "allow"
    connection = InspectedConnection(inspection, agent, answers=answers)
    running = asyncio.create_task(connection.run())
    try:
        connection.send("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities or {}})
        await wait_for_answer(inspection, "initialize")
        connection.send("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        await wait_for_answer(inspection, "session/new")
        if load:
            connection.send("session/load", {"sessionId": "s-1", "cwd": str(tmp_path), "mcpServers": []})
            await wait_for_answer(inspection, "session/load")
            await asyncio.sleep(0.3)  # what comes after the answer
        else:
            connection.send(
                "session/prompt", {"sessionId": "s-1", "prompt": [{"type": "text", "text": "go"}]}
            )
            await wait_for_answer(inspection, "session/prompt")
    finally:
        await agent.aclose()
        await asyncio.wait_for(running, 10)
        await connection.aclose()
    return [finding for frame in inspection.frames for finding in orjson.loads(frame.findings)]


@pytest.mark.parametrize(
    ("rule", "load", "expected"),
    [
        ("noise", False, "stdout-noise"),
        ("long-line", False, "long-line"),
        ("fs", False, "unadvertised-capability"),
        ("update-before-new", False, "update-before-session-new"),
        ("update-after-load", True, "update-after-load"),
        ("unknown-session", False, "unknown-session"),
        ("response-to-nothing", False, "response-to-nothing"),
        ("schema", False, "schema"),
    ],
)
async def test_an_agent_breaking_one_rule_raises_that_warning_only(
    rule: str, load: bool, expected: str, tmp_path: Path
) -> None:
    findings = await run_agent(rule, tmp_path, load=load)
    assert [finding["rule"] for finding in findings] == [expected]
    (finding,) = findings
    assert finding["title"] == RULES[expected].title
    assert finding["spec"].startswith(
        ("https://agentclientprotocol.com/protocol/v1/", "https://www.jsonrpc.org/")
    )


async def test_the_same_agent_behaving_raises_none(tmp_path: Path) -> None:
    assert await run_agent("none", tmp_path) == []
    assert await run_agent("none", tmp_path, load=True) == []


async def test_a_file_read_the_client_advertised_raises_none(tmp_path: Path) -> None:
    assert await run_agent("fs", tmp_path, capabilities={"fs": {"readTextFile": True}}) == []


async def test_the_warnings_name_what_the_frame_did(tmp_path: Path) -> None:
    (fs,) = await run_agent("fs", tmp_path)
    assert fs["message"] == (
        "the agent called fs/read_text_file, "
        "but the client did not advertise clientCapabilities.fs.readTextFile"
    )
    assert fs["spec"] == "https://agentclientprotocol.com/protocol/v1/file-system#checking-support"
    (noise,) = await run_agent("noise", tmp_path)
    assert noise["message"] == "the agent wrote a line that is not JSON: 'Starting my agent, please wait...'"
    (nothing,) = await run_agent("response-to-nothing", tmp_path)
    assert "777" in nothing["message"]
