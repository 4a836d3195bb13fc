"""AgentPool with real testy processes: warm start, sessions, limits, files and permissions, health."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from pathlib import Path

import pytest

from acpio.client import AgentFailed
from acpio.driver.client import AgentSession
from acpio.pool import AgentPool, PoolEvent, ProcessDied, ProcessStarted
from acpio.pool.batch import BatchPrompt, run_prompts
from tests.oneshot._processes import alive
from tests.pool._support import TIMEOUT, memory_testy, names


async def test_the_processes_are_started_and_initialized_before_the_first_prompt(tmp_path: Path) -> None:
    seen: list[PoolEvent] = []
    async with (
        asyncio.timeout(TIMEOUT),
        AgentPool(memory_testy(), size=2, permissions="allow", cwd=tmp_path, on_event=seen.append) as pool,
    ):
        pids = pool.pids
        assert len(set(pids)) == 2
        assert all(pid is not None and alive(pid) for pid in pids)
        assert sorted(seen, key=lambda e: e.slot) == [
            ProcessStarted(slot=0, pid=pids[0], respawn=False),  # type: ignore[arg-type]
            ProcessStarted(slot=1, pid=pids[1], respawn=False),  # type: ignore[arg-type]
        ]
        result = await pool.prompt("echo hello\ntool Look around\nwrite out.txt one\\ntwo\npermission Go?")
        assert result.ok
        assert result.text == "hello\npermission: allow-once\n"
        calls = {call.title: call for call in result.tool_calls}
        assert calls["Look around"].status == "completed"
        assert calls["Look around"].kind == "other"
        assert (tmp_path / "out.txt").read_text() == "one\ntwo"  # written through the client, inside cwd
        assert [(w.path, w.new_text) for w in result.files_written] == [
            (str(tmp_path / "out.txt"), "one\ntwo")
        ]
        assert [(p.tool_call.title, p.option_id) for p in result.permissions] == [("Go?", "allow-once")]
        assert calls["Go?"].status == "completed"
        assert result.events == ()
        assert result.session_id.startswith("testy-")
    for pid in pids:
        assert pid is not None
        assert not alive(pid)  # closing the pool ends its processes


async def test_prompts_run_concurrently_up_to_max_turns() -> None:
    async with asyncio.timeout(TIMEOUT), AgentPool(memory_testy(), size=2, sessions_per_process=2) as pool:
        prompts = [BatchPrompt(f"echo {n}\nsleep 0.6", str(n)) for n in range(4)]
        began = time.monotonic()
        results = [result async for result in run_prompts(pool, prompts)]
        elapsed = time.monotonic() - began
        assert sorted(r.prompt_id or "" for r in results) == ["0", "1", "2", "3"]
        assert all(r.ok and r.text == f"{r.prompt_id}\n" for r in results)
        assert sorted(r.slot for r in results) == [0, 0, 1, 1]  # two sessions on each process
        assert elapsed < 4 * 0.6  # not one after the other

    async with asyncio.timeout(TIMEOUT), AgentPool(memory_testy(), size=2, max_turns=1) as pool:
        began = time.monotonic()
        results = await asyncio.gather(*(pool.prompt("sleep 0.3") for _ in range(3)))
        assert all(r.ok for r in results)
        assert time.monotonic() - began >= 3 * 0.3  # one turn at a time


async def test_a_leased_session_keeps_its_conversation_and_sessions_wait_for_a_free_slot() -> None:
    async with asyncio.timeout(TIMEOUT), AgentPool(memory_testy(), size=1) as pool:
        async with pool.session() as session:
            await session.prompt("echo one two")
            waiting = asyncio.ensure_future(pool.prompt("echo later"))  # the one slot is taken
            await asyncio.sleep(0.2)
            assert not waiting.done()
            usage = await session.prompt("usage")
            assert usage.ok  # the same session: testy counts the words of its history
        later = await waiting
        assert later.ok
        assert later.session_id != session.session_id


async def test_a_process_that_dies_while_idle_is_noticed_and_replaced() -> None:
    seen: list[PoolEvent] = []
    replaced = asyncio.Event()

    def note(event: PoolEvent) -> None:
        seen.append(event)
        if isinstance(event, ProcessStarted) and event.respawn:
            replaced.set()

    async with asyncio.timeout(TIMEOUT), AgentPool(memory_testy(), size=1, on_event=note) as pool:
        old = pool.pids[0]
        assert old is not None
        seen.clear()
        os.kill(old, signal.SIGKILL)
        await replaced.wait()
        assert len(seen) == 2
        assert seen[0] == ProcessDied(slot=0, pid=old, returncode=-signal.SIGKILL, stderr_tail=None)
        new = pool.pids[0]
        assert seen[1] == ProcessStarted(slot=0, pid=new, respawn=True)  # type: ignore[arg-type]
        result = await pool.prompt("echo still here")
        assert result.text == "still here\n"
        assert names(result.events) == []  # the turn itself saw nothing of it


async def test_mistakes_are_refused_with_what_to_do() -> None:
    with pytest.raises(ValueError, match="must be 1 or more"):
        AgentPool(memory_testy(), size=0)
    with pytest.raises(ValueError, match="turn_timeout"):
        AgentPool(memory_testy(), turn_timeout=0)
    pool = AgentPool(memory_testy())
    with pytest.raises(RuntimeError, match="use it inside `async with AgentPool"):
        async with pool.session():
            pass
    with pytest.raises(AgentFailed, match="command not found"):
        async with AgentPool(["acpio-no-such-agent"], size=2):
            pass


async def test_a_session_whose_close_fails_gives_its_slot_back(monkeypatch: pytest.MonkeyPatch) -> None:
    async def failing_close(self: AgentSession) -> None:
        raise RuntimeError("close failed")

    async with asyncio.timeout(TIMEOUT), AgentPool(memory_testy(), size=1) as pool:
        with monkeypatch.context() as patch:
            patch.setattr(AgentSession, "aclose", failing_close)
            with pytest.raises(RuntimeError, match="close failed"):
                async with pool.session() as session:
                    assert (await session.prompt("echo first")).ok
        # the only slot is free again: before, the next prompt waited for it forever
        result = await asyncio.wait_for(pool.prompt("echo second"), 10)
        assert result.text == "second\n"
