"""The per-turn watchdog: a turn that will not end is cancelled, then given up on, killed and taken up again.

:func:`supervise` waits for a :class:`~acpio.pool.turn.TurnRun` to end. When the turn runs past
its timeout, or the caller cancels it, the escalation is:

1. ``session/cancel`` to the agent (:class:`~acpio.pool.CancelSent`);
2. a grace period, in which an agent that honours the cancel ends the turn ``cancelled`` itself
   (:class:`~acpio.pool.CancelHonoured`): nothing more happens;
3. past it, the turn is ended ``cancelled`` for the caller (:class:`~acpio.pool.TurnAbandoned`);
4. the agent's process group gets SIGKILL (:class:`~acpio.pool.ProcessKilled`);
5. a new process is started in the slot (:class:`~acpio.pool.ProcessStarted`);
6. the session is set up on it again with ``session/resume``, or ``session/load`` when that is
   what the agent advertises (:class:`~acpio.pool.SessionResumed`, or
   :class:`~acpio.pool.SessionLost` saying why not).

An agent whose process ends during the turn gives a failed turn (the error, the end of its
stderr, :class:`~acpio.pool.ProcessDied`), then steps 5 and 6. Every step is in the turn's
``events`` and goes to the pool's ``on_event`` as it happens.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from acpio.pool.events import (
    CancelHonoured,
    CancelSent,
    PoolEvent,
    ProcessDied,
    TurnAbandoned,
    TurnTimedOut,
)
from acpio.pool.result import SupervisedTurn
from acpio.pool.turn import TurnRun
from acpio.pool.worker import Incarnation, Worker

__all__ = ["TurnWatch", "supervise"]

#: Seconds to wait for a process whose connection broke to be seen exiting.
_DEATH_TIMEOUT = 5.0


@dataclass(slots=True)
class TurnWatch:
    """What the watchdog needs to know of one turn: where it runs, its limits, how to report and recover."""

    worker: Worker
    incarnation: Incarnation
    session_id: str
    #: Seconds the turn may run (``None``: no limit).
    timeout: float | None
    #: Seconds the agent has to end the turn after ``session/cancel``.
    grace: float
    #: Set by the caller to cancel the turn.
    cancel_requested: asyncio.Event
    #: Reports a step to the pool's ``on_event`` (the worker reports the steps of processes itself).
    report: Callable[[PoolEvent], None]
    #: Starts the slot's next process and takes the session up on it, adding each step to the list.
    recover: Callable[[list[PoolEvent]], Awaitable[None]]


async def supervise(run: TurnRun, watch: TurnWatch) -> SupervisedTurn:
    """Wait for the turn to end, escalating as the module docstring says; the turn's result."""
    events: list[PoolEvent] = []

    def note(event: PoolEvent) -> None:
        events.append(event)
        watch.report(event)

    slot = watch.worker.slot
    if await _ends_within(run, watch.timeout, watch.cancel_requested):
        return await _ended(run, watch, events)
    reason: Literal["timeout", "caller"] = "caller" if watch.cancel_requested.is_set() else "timeout"
    if reason == "timeout":
        assert watch.timeout is not None
        note(TurnTimedOut(slot=slot, session_id=watch.session_id, seconds=watch.timeout))
    run.send_cancel()
    note(CancelSent(slot=slot, session_id=watch.session_id, reason=reason))
    sent = time.monotonic()
    if await _ends_within(run, watch.grace, None):
        if run.reading.result().error is None:
            note(CancelHonoured(slot=slot, session_id=watch.session_id, seconds=time.monotonic() - sent))
        return await _ended(run, watch, events)
    note(TurnAbandoned(slot=slot, session_id=watch.session_id, grace=watch.grace))
    await run.stop_reading()
    result = run.abandon()  # before recovering: that is the pool's time, not the turn's
    events.append(watch.worker.kill(watch.incarnation, watch.session_id))
    await watch.recover(events)
    return SupervisedTurn.of(result, slot=slot, events=tuple(events))


async def _ends_within(run: TurnRun, seconds: float | None, cancel: asyncio.Event | None) -> bool:
    """Whether the turn ended (or failed) within ``seconds``, before ``cancel`` was set."""
    if cancel is not None and cancel.is_set():
        return run.reading.done()
    waits: list[asyncio.Future[Any]] = [run.reading]
    cancelled = None if cancel is None else asyncio.get_running_loop().create_task(cancel.wait())
    if cancelled is not None:
        waits.append(cancelled)
    try:
        await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if cancelled is not None:
            cancelled.cancel()
    return run.reading.done()


async def _ended(run: TurnRun, watch: TurnWatch, events: list[PoolEvent]) -> SupervisedTurn:
    """The turn ended by itself: normally, with the agent's error, or because the process ended."""
    slot = watch.worker.slot
    result = run.reading.result()  # a failure of the client itself (a policy callback's) is raised
    if result.error is None or result.error_code is not None:
        return SupervisedTurn.of(result, slot=slot, events=tuple(events))
    died = await _death(watch.incarnation)  # the connection ended: the process did, or is not to be trusted
    if died is None:
        events.append(watch.worker.kill(watch.incarnation, watch.session_id))
    else:
        events.append(died)  # the worker reported it
        if result.stderr_tail is None and died.stderr_tail is not None:
            result = dataclasses.replace(result, stderr_tail=died.stderr_tail)
    await watch.recover(events)
    return SupervisedTurn.of(result, slot=slot, events=tuple(events))


async def _death(incarnation: Incarnation) -> ProcessDied | None:
    """The death record of ``incarnation``, once its process is seen gone; ``None`` if it still runs."""
    try:
        async with asyncio.timeout(_DEATH_TIMEOUT):
            return await asyncio.shield(incarnation.ended)
    except TimeoutError:
        return None
