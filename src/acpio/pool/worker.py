"""One slot of the pool: an agent process, started and initialized ahead of need, replaced when it ends.

A :class:`Worker` owns a run of processes, one at a time: each is an :class:`Incarnation` (the
process, the :class:`~acpio.client.AgentClient` connected to it, its generation number). When the
process ends (it died, or the watchdog killed it), :meth:`Worker.restart` starts the next one; it
is idempotent per generation, so the pool's health watch and a turn that saw the death can both
ask for it and one process is started.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from acpio.driver.client import AgentClient
from acpio.errors import AcpError
from acpio.pool.events import PoolEvent, ProcessDied, ProcessKilled, ProcessStarted
from acpio.transports import AgentProcess

__all__ = ["Incarnation", "Worker"]

_log = logging.getLogger("acpio.pool")


class Incarnation:
    """One process of a :class:`Worker`: the :class:`~acpio.client.AgentClient` on it, and how it ended."""

    def __init__(self, slot: int, generation: int, client: AgentClient, process: AgentProcess) -> None:
        #: The pool slot it runs in.
        self.slot = slot
        #: Counts the processes of the slot, from 1.
        self.generation = generation
        self.client = client
        self.process = process
        #: The record of its start (set once it is initialized).
        self.started: ProcessStarted | None = None
        #: Set once the watchdog killed it (its end is then no death to report).
        self.killed_for: str | None = None
        #: Completes with the death record when the process ended on its own, or ``None`` when killed.
        self.ended: asyncio.Future[ProcessDied | None] = asyncio.get_running_loop().create_future()
        self._watch = asyncio.get_running_loop().create_task(
            self._wait_end(), name=f"acpio pool: watching {process.label}"
        )

    @property
    def pid(self) -> int:
        """The process id (and process group id)."""
        return self.process.pid

    @property
    def alive(self) -> bool:
        """Whether the process runs."""
        return self.process.returncode is None and not self.ended.done()

    async def _wait_end(self) -> None:
        await self.process.wait()
        if self.ended.done():
            return
        if self.killed_for is not None:
            self.ended.set_result(None)
            return
        self.ended.set_result(
            ProcessDied(
                slot=self.slot,
                pid=self.pid,
                returncode=self.process.returncode,
                stderr_tail=self.process.stderr_tail,
            )
        )

    def kill(self, session_id: str) -> None:
        """SIGKILL the whole process group now, for the turn of ``session_id`` that would not end."""
        self.killed_for = session_id
        self.process.kill()

    async def aclose(self) -> None:
        """Close the client (its sessions, the connection, the process group) and wait for the end."""
        if self.killed_for is None:
            self.killed_for = ""  # a close is no death either
        with contextlib.suppress(AcpError, OSError):
            await self.client.aclose()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.shield(self._watch)


class Worker:
    """Slot ``slot`` of the pool: keeps one agent process running, initialized, ready for sessions.

    ``connect(slot)`` makes the (not yet connected) :class:`~acpio.client.AgentClient` of each
    new process. ``report`` is given each :class:`~acpio.pool.PoolEvent` of the slot (process started, died,
    killed). :attr:`leases` counts the sessions that use the slot now.
    """

    def __init__(
        self,
        slot: int,
        connect: Callable[[int], AgentClient],
        *,
        report: Callable[[PoolEvent], None],
        on_death: Callable[[Worker, Incarnation], None],
    ) -> None:
        self.slot = slot
        self._connect = connect
        self._report = report
        self._on_death = on_death
        self._lock = asyncio.Lock()
        self._current: Incarnation | None = None
        self._generation = 0
        self._closing = False
        #: How many sessions of the pool use this slot now.
        self.leases = 0

    def __repr__(self) -> str:
        current = self._current
        state = f"pid {current.pid}" if current is not None else "not started"
        return f"<Worker {self.slot} {state} generation {self._generation} leases {self.leases}>"

    @property
    def current(self) -> Incarnation:
        """The running process; ``RuntimeError`` before :meth:`start`."""
        if self._current is None:
            raise RuntimeError(f"slot {self.slot} of the pool has no process: start the pool first")
        return self._current

    @property
    def healthy(self) -> bool:
        """Whether the slot's process runs."""
        return self._current is not None and self._current.alive

    @property
    def supports_resume(self) -> bool:
        """Whether the agent advertised ``session/resume``."""
        features = self.current.client.connection.agent_features
        return features is not None and features.resume_session

    @property
    def supports_load(self) -> bool:
        """Whether the agent advertised ``session/load``."""
        features = self.current.client.connection.agent_features
        return features is not None and features.load_session

    async def start(self) -> Incarnation:
        """Start the first process (spawned and initialized)."""
        async with self._lock:
            return await self._spawn(respawn=False)

    async def restart(self, generation: int) -> Incarnation:
        """Replace process ``generation`` with a new one, unless that was done already; the running one.

        Waits for the old process to be gone first.
        """
        async with self._lock:
            current = self._current
            if current is not None and current.generation != generation and current.alive:
                return current
            if current is not None:
                await current.aclose()
            return await self._spawn(respawn=True)

    async def _spawn(self, *, respawn: bool) -> Incarnation:
        if self._closing:
            raise RuntimeError(f"slot {self.slot} of the pool is closing: no new process is started")
        client = self._connect(self.slot)
        try:
            await client.connect()
        except BaseException:
            await client.aclose()
            raise
        process = client.process
        if process is None:
            await client.aclose()
            raise TypeError(
                "The pool runs agent processes: give it a command, not a URL or an in-process app"
            )
        self._generation += 1
        incarnation = Incarnation(self.slot, self._generation, client, process)
        incarnation.ended.add_done_callback(lambda _: self._ended(incarnation))
        self._current = incarnation
        incarnation.started = ProcessStarted(slot=self.slot, pid=process.pid, respawn=respawn)
        self._report(incarnation.started)
        return incarnation

    def _ended(self, incarnation: Incarnation) -> None:
        if incarnation.ended.cancelled():
            return
        died = incarnation.ended.result()
        if died is not None:
            self._report(died)
        if not self._closing and incarnation is self._current:
            self._on_death(self, incarnation)

    def kill(self, incarnation: Incarnation, session_id: str) -> ProcessKilled:
        """SIGKILL the process group for the turn of ``session_id``; report it, return the record."""
        killed = ProcessKilled(slot=self.slot, pid=incarnation.pid, session_id=session_id)
        if incarnation.killed_for is None:
            incarnation.kill(session_id)
            self._report(killed)
        return killed

    async def aclose(self) -> None:
        """End the slot's process; no new one is started afterwards."""
        self._closing = True
        async with self._lock:
            if self._current is not None:
                await self._current.aclose()
