"""What exists in one ACP version only: a typed refusal (NotInProtocolVersion) on the other, never a no-op.

v2 only: the tool call statuses ``cancelled`` and ``paused``, a permission's ``description``;
v1 only: the client's files (see test_agent_app_v2), ``current_mode_update``. Each refusal names
the feature, the version and what to use instead, and nothing goes out for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acpio.app import AgentApp, StopReasonName, ToolStatusName, Turn
from acpio.errors import NotInProtocolVersion
from acpio.schema import CurrentModeUpdate
from acpio.testing import serving

from ._wire import open_session, send_prompt
from ._wire_v2 import open_session_v2, run_turn

TIMEOUT = 10.0


@pytest.mark.parametrize("status", ["cancelled", "paused"])
async def test_v2_tool_call_statuses_are_refused_on_v1(tmp_path: Path, status: ToolStatusName) -> None:
    app = AgentApp("statuses")
    raised: list[NotInProtocolVersion] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call("Work") as call:
            try:
                await call.update(status=status)
            except NotInProtocolVersion as error:
                raised.append(error)
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id = await open_session(peer, tmp_path, {})
        seen: list[Any] = []
        answer = await peer.response_to(send_prompt(peer, session_id, "go"), seen)
    (error,) = raised
    assert (error.version, error.feature) == (1, f"the tool call status {status!r}")
    assert "'failed'" in error.instead
    assert str(error) == f"the tool call status {status!r} does not exist in ACP v1: {error.instead}"
    statuses = [f["params"]["update"].get("status") for f in seen if f.get("method") == "session/update"]
    assert statuses == ["pending", "completed"]  # nothing was sent for the refused status
    assert answer["result"] == {"stopReason": "end_turn"}


async def test_a_cancelled_tool_call_goes_out_on_v2_and_stays_cancelled(tmp_path: Path) -> None:
    app = AgentApp("statuses", protocols=(2,))

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call("Work") as call:
            await call.update(status="paused")
            await call.update(status="cancelled")
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        _, updates = await run_turn(peer, session_id, "go")
    statuses = [u.get("status") for u in updates if u["sessionUpdate"] == "tool_call_update"]
    assert statuses == ["pending", "paused", "cancelled"]  # final: the block's end adds no 'completed'


async def test_a_permission_description_is_refused_on_v1(tmp_path: Path) -> None:
    app = AgentApp("permission")
    raised: list[NotInProtocolVersion] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call("Delete") as call:
            try:
                await turn.ask_permission(call, description="why")
            except NotInProtocolVersion as error:
                raised.append(error)
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id = await open_session(peer, tmp_path, {})
        seen: list[Any] = []
        await peer.response_to(send_prompt(peer, session_id, "go"), seen)
    assert raised[0].version == 1
    assert "description" in raised[0].feature
    assert "turn.say" in raised[0].instead
    assert all(f.get("method") != "session/request_permission" for f in seen)


def test_the_versions_an_app_serves_are_checked() -> None:
    with pytest.raises(ValueError, match="protocols is one or both of the ACP versions 1 and 2"):
        AgentApp("x", protocols=(3,))  # type: ignore[arg-type]
    app = AgentApp("x")

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        return "end_turn"

    with pytest.raises(ValueError, match=r"serves ACP \(1,\), not 2"):
        app.builder(2)
    with pytest.raises(ValueError, match="does not serve ACP v2"):
        app.on_login("token", "Token")


def test_an_option_named_mode_beside_modes_cannot_serve_v2() -> None:
    app = AgentApp("x", protocols=(1, 2))

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        return "end_turn"

    app.mode("ask", "Ask")
    app.select_option("mode", "Mode", {"a": "A"}, default="a")
    app.builder(1)  # v1 has both
    with pytest.raises(ValueError, match="on ACP v2 the modes are the option 'mode'"):
        app.builder(2)


async def test_a_v1_only_update_is_refused_on_v2(tmp_path: Path) -> None:
    app = AgentApp("modes", protocols=(2,))
    raised: list[NotInProtocolVersion] = []

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        try:
            await turn.update(CurrentModeUpdate(current_mode_id="ask"))
        except NotInProtocolVersion as error:
            raised.append(error)
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        _, updates = await run_turn(peer, session_id, "go")
    assert raised[0].version == 2
    assert raised[0].feature == "the current_mode_update update"
    assert "turn.set_mode()" in raised[0].instead
    assert [u["sessionUpdate"] for u in updates] == ["user_message", "state_update", "state_update"]
