"""acpio's negotiating client against ``acpio testy --protocol 2`` and ``both`` in a real subprocess.

The typed side of the v2 wire: ``cx.initialize()`` negotiates v2 (or v1 when asked), the session's
:class:`~acpio.session.TurnView` shows testy's agent terminal, structured diff, plan and cancelled
tool call, and ``read_to_string`` ends the turn at its idle state.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import pytest

from acpio.roles import Client
from acpio.session import SessionConnection, TurnView, build_session
from acpio.transports import AcpAgent

TESTY = (sys.executable, "-m", "acpio", "testy")


async def converse(
    argv: tuple[str, ...], cwd: Path, text: str, protocol: Literal[1, 2, "negotiate"] = "negotiate"
) -> tuple[int | None, TurnView]:
    """Negotiate with testy, prompt ``text``; the version and the session's view after the turn."""

    async def main(cx: SessionConnection) -> tuple[int | None, TurnView]:
        await cx.initialize()
        async with build_session(cx, cwd).start_session() as session:
            session.send_prompt(text)
            await session.read_to_string()
            return cx.protocol_version, session.view

    transport = await AcpAgent(list(argv)).open()
    result: tuple[int | None, TurnView] = await Client.builder(protocol=protocol).connect_with(
        transport, main
    )
    return result


async def test_the_typed_client_sees_testy_v2s_terminal_diff_plan_and_state(tmp_path: Path) -> None:
    version, view = await converse(
        (*TESTY, "--protocol", "2"), tmp_path, "plan build; ship\nrun echo built\nwrite out.txt done\necho ok"
    )
    assert version == 2
    terminal = view.terminals["terminal-1"]
    assert (terminal.command, bytes(terminal.output), terminal.exit_code) == ("echo built", b"built\n", 0)
    assert view.tool_calls["tool-2"].status == "completed"
    assert [entry.content for entry in view.plans["plan"]] == ["build", "ship"]
    assert (view.state, view.stop_reason) == ("idle", "end_turn")
    assert (tmp_path / "out.txt").read_text() == "done"


@pytest.mark.parametrize(("protocol", "expected"), [("negotiate", 2), (1, 1)])
async def test_testy_both_serves_the_version_the_client_asks_for(
    tmp_path: Path, protocol: Literal[1, "negotiate"], expected: int
) -> None:
    version, view = await converse((*TESTY, "--protocol", "both"), tmp_path, "echo same words", protocol)
    assert version == expected
    assert view.stop_reason == "end_turn"
    assert "same words" in "".join(m.text for m in view.messages)
