"""The MCP-over-ACP examples run and do what their docstrings say, as real processes."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpio import Client, SessionConnection
from acpio import schema as acp
from acpio.session import SessionMessage
from acpio.transports import AcpAgent

from ._support import TIMEOUT

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PYTHON = sys.executable
#: `acpio` on PATH, as the examples expect: this interpreter's.
ENV = {**os.environ, "PATH": f"{Path(PYTHON).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def test_the_client_hosts_a_tool_that_testy_calls() -> None:
    done = subprocess.run(
        [PYTHON, str(EXAMPLES / "mcp_client_tools.py")],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "completed: tools: today | 2026-01-02\n"


async def test_the_notes_proxy_gives_testy_its_tool_under_the_conductor() -> None:
    proxy = shlex.join([PYTHON, str(EXAMPLES / "mcp_notes_proxy.py")])
    testy = shlex.join([PYTHON, "-m", "acpio", "testy", "--mcp-acp"])
    conductor = AcpAgent([PYTHON, "-m", "acpio", "conductor", "agent", proxy, testy], cwd=ROOT, env=ENV)

    async def main(cx: SessionConnection) -> list[Any]:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        ended: list[Any] = []
        async with await cx.build_session(ROOT).start_session() as session:
            session.send_prompt(
                'mcp notes add_note {"text": "ship it"}\nmcp notes add_note {"text": "then rest"}'
            )
            while isinstance(message := await session.read_update(), SessionMessage):
                update = message.update
                if isinstance(update, acp.ToolCallUpdate) and update.status == "completed":
                    ended.append([c.to_wire()["content"]["text"] for c in update.content or ()])
        return ended

    async with asyncio.timeout(TIMEOUT * 3):
        ended = await Client.builder().connect_with(conductor, main)
    assert ended == [["tools: add_note", "ship it"], ["tools: add_note", "ship it\nthen rest"]]


@pytest.mark.parametrize("bridge", ["process", "--mcp-bridge after the mode", "--mcp-bridge before the mode"])
async def test_the_bridge_gives_an_http_only_testy_the_notes_tool(bridge: str) -> None:
    proxy = shlex.join([PYTHON, str(EXAMPLES / "mcp_notes_proxy.py")])
    testy = shlex.join([PYTHON, "-m", "acpio", "testy"])  # HTTP MCP servers only
    if bridge == "process":
        words = ["agent", proxy, shlex.join([PYTHON, "-m", "acpio.mcp.bridge"]), testy]
    elif bridge.endswith("after the mode"):
        words = ["agent", "--mcp-bridge", proxy, testy]
    else:  # as the conductor's documentation says its options may be given
        words = ["--mcp-bridge", "agent", proxy, testy]
    conductor = AcpAgent([PYTHON, "-m", "acpio", "conductor", *words], cwd=ROOT, env=ENV)

    async def main(cx: SessionConnection) -> list[Any]:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        ended: list[Any] = []
        async with await cx.build_session(ROOT).start_session() as session:
            session.send_prompt('mcp notes add_note {"text": "over http"}')
            while isinstance(message := await session.read_update(), SessionMessage):
                update = message.update
                if isinstance(update, acp.ToolCallUpdate) and update.status in ("completed", "failed"):
                    ended.append([c.to_wire()["content"]["text"] for c in update.content or ()])
        return ended

    async with asyncio.timeout(TIMEOUT * 3):
        ended = await Client.builder().connect_with(conductor, main)
    assert ended == [["tools: add_note", "over http"]]
