"""The per-turn watchdog with real agent processes: cancel, grace, give up, kill, respawn, resume."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from acpio.pool import (
    AgentPool,
    CancelHonoured,
    CancelSent,
    PoolEvent,
    ProcessDied,
    ProcessKilled,
    ProcessStarted,
    SessionLost,
    SessionLostError,
    SessionResumed,
    TurnAbandoned,
    TurnTimedOut,
)
from tests.oneshot._processes import alive, wait_gone
from tests.pool._support import TIMEOUT, deaf_app, memory_testy, names, sqlite_testy

BOTH_EVENT_LOOPS = True


async def _started(pool: AgentPool, slot: int = 0) -> int:
    pid = pool.pids[slot]
    assert pid is not None
    return pid


@pytest.mark.slow
async def test_a_turn_that_ignores_cancel_is_ended_killed_respawned_and_resumed(tmp_path: Path) -> None:
    seen: list[PoolEvent] = []
    async with (
        asyncio.timeout(TIMEOUT),
        AgentPool(
            deaf_app(tmp_path / "sessions.db"),
            size=1,
            turn_timeout=0.6,
            cancel_grace=0.4,
            on_event=seen.append,
        ) as pool,
        pool.session() as session,
    ):
        old = await _started(pool)
        first = await session.prompt("first")
        assert first.ok
        assert first.text == "turn 1; earlier: \n"
        seen.clear()

        wedged = await session.prompt("grandchild")  # starts `sleep 300` in the agent's group, then hangs

        assert wedged.stop_reason == "cancelled"
        assert wedged.error is None
        assert wedged.text == "turn 2; earlier: first\n"  # what came before the end is kept
        assert 0.9 <= wedged.duration < 0.9 + 1.5  # timeout + grace, not the recovery
        assert names(wedged.events) == [
            "TurnTimedOut", "CancelSent", "TurnAbandoned",
            "ProcessKilled", "ProcessStarted", "SessionResumed",
        ]  # fmt: skip
        timed_out, cancel, abandoned, killed, started, resumed = wedged.events
        sid = session.session_id
        assert timed_out == TurnTimedOut(slot=0, session_id=sid, seconds=0.6)
        assert cancel == CancelSent(slot=0, session_id=sid, reason="timeout")
        assert abandoned == TurnAbandoned(slot=0, session_id=sid, grace=0.4)
        assert killed == ProcessKilled(slot=0, pid=old, session_id=sid)
        new = await _started(pool)
        assert new != old
        assert started == ProcessStarted(slot=0, pid=new, respawn=True)
        assert resumed == SessionResumed(slot=0, session_id=sid, pid=new, method="session/resume")
        assert seen == list(wedged.events)  # on_event got each step, in the same order
        await wait_gone([old], groups=[old])  # the whole group: the agent and its `sleep 300`

        third = await session.prompt("third")  # the new process remembers the session's turns
        assert third.ok
        assert third.text == "turn 3; earlier: first | grandchild\n"
        assert third.events == ()


async def test_a_turn_given_up_on_keeps_its_permission_asks_files_and_usage(tmp_path: Path) -> None:
    # The timeout must find testy in ``hang``: a cancel that reaches it earlier is honoured. Loaded
    # machines took over 0.6 s for the three steps before it.
    pool = AgentPool(
        memory_testy(), size=1, turn_timeout=2.0, cancel_grace=0.3, permissions="allow", cwd=tmp_path
    )
    async with asyncio.timeout(TIMEOUT), pool:
        wedged = await pool.prompt("write a.txt hello\npermission Change a.txt\nusage\nhang 60")

    assert wedged.stop_reason == "cancelled"
    assert "TurnAbandoned" in names(wedged.events)
    [ask] = wedged.permissions
    assert (ask.tool_call.title, ask.option_id, ask.allowed) == ("Change a.txt", "allow-once", True)
    assert [(Path(w.path).name, w.new_text) for w in wedged.files_written] == [("a.txt", "hello")]
    assert wedged.usage is not None
    assert wedged.usage.context_size == 200000
    assert wedged.text.endswith("permission: allow-once\n")


async def test_an_agent_that_honours_the_cancel_ends_the_turn_and_keeps_its_process() -> None:
    # 1.5 s: the timeout must come after testy's echo, which a loaded machine took over 0.3 s to send.
    pool = AgentPool(memory_testy(), size=1, turn_timeout=1.5, cancel_grace=10)
    async with asyncio.timeout(TIMEOUT), pool:
        pid = await _started(pool)
        result = await pool.prompt("echo waiting\nsleep 30")
        assert result.stop_reason == "cancelled"
        assert result.text == "waiting\n"
        assert names(result.events) == ["TurnTimedOut", "CancelSent", "CancelHonoured"]
        honoured = result.events[2]
        assert isinstance(honoured, CancelHonoured)
        assert honoured.seconds < 5
        assert pool.pids == [pid]
        assert alive(pid)
        assert result.duration < 5


async def test_the_caller_cancels_a_turn_with_session_cancel(tmp_path: Path) -> None:
    async with (
        asyncio.timeout(TIMEOUT),
        AgentPool(sqlite_testy(tmp_path / "t.db"), size=1, cancel_grace=0.3) as pool,
        pool.session() as session,
    ):
        old = await _started(pool)
        running = asyncio.ensure_future(session.prompt("hang 30"))
        await asyncio.sleep(0.5)
        session.cancel()
        result = await running
        assert result.stop_reason == "cancelled"
        assert names(result.events) == [
            "CancelSent", "TurnAbandoned", "ProcessKilled", "ProcessStarted", "SessionResumed",
        ]  # fmt: skip
        assert result.events[0] == CancelSent(slot=0, session_id=session.session_id, reason="caller")
        assert (await session.prompt("echo again")).text == "again\n"
        await wait_gone([old], groups=[old])


async def test_cancelling_the_awaiting_task_escalates_in_the_background_and_frees_the_slot(
    tmp_path: Path,
) -> None:
    seen: list[PoolEvent] = []
    async with (
        asyncio.timeout(TIMEOUT),
        AgentPool(sqlite_testy(tmp_path / "t.db"), size=1, cancel_grace=0.3, on_event=seen.append) as pool,
    ):
        old = await _started(pool)
        running = asyncio.ensure_future(pool.prompt("hang 30"))
        await asyncio.sleep(0.5)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        after = await pool.prompt("echo next")  # waits for the one slot, freed once recovered
        assert after.ok
        assert after.text == "next\n"
        assert names([e for e in seen if not isinstance(e, ProcessStarted) or e.respawn]) == [
            "CancelSent", "TurnAbandoned", "ProcessKilled", "ProcessStarted", "SessionResumed",
        ]  # fmt: skip
        assert pool.pids != [old]


async def test_an_agent_killed_by_sigkill_mid_turn_gives_a_failed_turn_and_the_session_goes_on(
    tmp_path: Path,
) -> None:
    async with (
        asyncio.timeout(TIMEOUT),
        AgentPool(sqlite_testy(tmp_path / "t.db"), size=1) as pool,
        pool.session() as session,
    ):
        assert (await session.prompt("echo one two three")).ok
        old = await _started(pool)
        running = asyncio.ensure_future(session.prompt("echo sleeping\nsleep 30"))
        await asyncio.sleep(0.5)
        os.killpg(old, signal.SIGKILL)
        result = await running
        assert result.stop_reason is None
        assert not result.ok
        assert result.error is not None
        assert result.error.endswith("was killed by signal 9")
        assert result.text == "sleeping\n"
        assert names(result.events) == ["ProcessDied", "ProcessStarted", "SessionResumed"]
        assert result.events[0] == ProcessDied(slot=0, pid=old, returncode=-signal.SIGKILL, stderr_tail=None)
        usage = await session.prompt("usage")  # the new process has the session's history
        assert usage.ok
        assert usage.events == ()


async def test_an_agent_that_exits_mid_turn_gives_its_stderr_tail(tmp_path: Path) -> None:
    async with asyncio.timeout(TIMEOUT), AgentPool(sqlite_testy(tmp_path / "t.db"), size=1) as pool:
        result = await pool.prompt("echo going\nexit 3 testy crashed on purpose")
        assert result.error is not None
        assert result.error.endswith("exited with exit code 3")
        assert result.stderr_tail is not None
        assert "testy crashed on purpose" in result.stderr_tail
        died = result.events[0]
        assert isinstance(died, ProcessDied)
        assert died.returncode == 3
        assert names(result.events) == ["ProcessDied", "ProcessStarted", "SessionResumed"]
        assert (await pool.prompt("echo alive")).ok


async def test_an_agent_that_cannot_resume_or_load_loses_the_session() -> None:
    agent = memory_testy("--no-session-resume", "--no-load-session")
    async with (
        asyncio.timeout(TIMEOUT),
        AgentPool(agent, size=1, turn_timeout=1.0, cancel_grace=0.2) as pool,
        pool.session() as session,
    ):
        result = await session.prompt("hang 30")
        assert names(result.events)[-2:] == ["ProcessStarted", "SessionLost"]
        lost = result.events[-1]
        assert lost == SessionLost(
            slot=0,
            session_id=session.session_id,
            reason="the agent advertises neither session/resume nor session/load",
        )
        with pytest.raises(SessionLostError, match="was lost: the agent advertises neither"):
            await session.prompt("echo hello")


@pytest.mark.slow
async def test_the_watchdog_keeps_its_time_under_load(tmp_path: Path) -> None:
    """Four wedged turns at once while the event loop is kept busy: each ends at timeout + grace."""
    timeout, grace = 1.0, 0.5

    async def busy_loop() -> None:  # the loop runs 5 ms callbacks back to back
        while True:
            time.sleep(0.005)  # noqa: ASYNC251 (blocking on purpose: a loop kept busy)
            await asyncio.sleep(0)

    async with (
        asyncio.timeout(TIMEOUT),
        AgentPool(sqlite_testy(tmp_path / "t.db"), size=4, turn_timeout=timeout, cancel_grace=grace) as pool,
    ):
        burner = asyncio.ensure_future(busy_loop())
        try:
            results = await asyncio.gather(*(pool.prompt("hang 30") for _ in range(4)))
        finally:
            burner.cancel()
        assert {r.slot for r in results} == {0, 1, 2, 3}
        for result in results:
            assert result.stop_reason == "cancelled"
            assert timeout + grace <= result.duration < timeout + grace + 1.0, result.duration
            assert names(result.events)[-1] == "SessionResumed"


async def test_a_slot_whose_new_process_cannot_start_still_gives_the_turn_given_up_on(tmp_path: Path) -> None:
    started = tmp_path / "started"  # the first process starts; every later one exits at once
    script = f'[ -e "{started}" ] && exit 3; touch "{started}"; exec "$@"'
    agent = ["sh", "-c", script, "sh", *deaf_app(tmp_path / "d.db")]
    async with (
        asyncio.timeout(TIMEOUT),
        AgentPool(agent, size=1, turn_timeout=0.5, cancel_grace=0.2, init_timeout=10) as pool,
        pool.session() as session,
    ):
        result = await session.prompt("hang")
        assert result.stop_reason == "cancelled"
        assert result.text.startswith("turn 1")
        assert names(result.events)[:3] == ["TurnTimedOut", "CancelSent", "TurnAbandoned"]
        assert names(result.events)[-1] == "SessionLost"
        assert session.lost is not None
        assert "could not be started" in session.lost
        with pytest.raises(SessionLostError, match="could not be started"):
            await session.prompt("again")
