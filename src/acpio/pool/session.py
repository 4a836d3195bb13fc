"""A session leased from the pool: several turns on one agent session, supervised by the watchdog."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Literal

from acpio.driver.client import AgentSession
from acpio.errors import AcpError
from acpio.pool.events import PoolEvent, SessionLost, SessionResumed
from acpio.pool.result import SupervisedTurn
from acpio.pool.turn import TurnRun
from acpio.pool.watchdog import TurnWatch, supervise
from acpio.pool.worker import Incarnation, Worker
from acpio.session import PromptContent

if TYPE_CHECKING:
    from acpio.pool.pool import AgentPool

__all__ = ["PooledSession", "SessionLostError"]


class SessionLostError(AcpError):
    """The session's agent process was replaced and the new one could not take the session up.

    The agent advertises neither ``session/resume`` nor ``session/load``, or refused them (an agent
    that keeps sessions in memory forgets them with its process). Open another session with
    :meth:`AgentPool.session() <acpio.pool.AgentPool.session>`.
    """


class PooledSession:
    """One agent session on one slot of an :class:`~acpio.pool.AgentPool`, for as many turns as you like.

    Made by ``async with pool.session() as session``; :meth:`prompt` runs a turn under the
    watchdog, :meth:`cancel` cancels the turn in progress (from another task). When the slot's
    process is replaced (killed by the watchdog, or died), the session is taken up by the new
    process before the next turn, and the steps are in that turn's ``events``.
    """

    def __init__(
        self, pool: AgentPool, worker: Worker, incarnation: Incarnation, session: AgentSession, cwd: str
    ) -> None:
        self._pool = pool
        self._worker = worker
        self._incarnation = incarnation
        self._session = session
        self._cwd = cwd
        self._cancel = asyncio.Event()
        self._busy: asyncio.Task[SupervisedTurn] | None = None
        #: Why the session was lost (its process replaced and the session not taken up), or ``None``.
        self.lost: str | None = None

    def __repr__(self) -> str:
        return f"<PooledSession {self.session_id!r} slot {self.slot}>"

    @property
    def session_id(self) -> str:
        """The agent's id of the session (the same after it was resumed on a new process)."""
        return self._session.session_id

    @property
    def slot(self) -> int:
        """The pool slot (the process) the session runs on."""
        return self._worker.slot

    @property
    def busy(self) -> asyncio.Task[SupervisedTurn] | None:
        """The task running the current turn (and its recovery), if any."""
        return self._busy if self._busy is not None and not self._busy.done() else None

    async def prompt(
        self, prompt: PromptContent, *, turn_timeout: float | None = None, prompt_id: str | None = None
    ) -> SupervisedTurn:
        """Run one turn; its result, with the pool's steps in ``events``.

        ``turn_timeout`` overrides the pool's for this turn. Cancelling the task that
        awaits this is a caller's cancel: the watchdog escalates in the background (reported to
        ``on_event``) and the session is free again once it is done. Raises
        :class:`SessionLostError` if the session was lost when its process was replaced.
        """
        if self.lost is not None:
            raise SessionLostError(
                f"Session {self.session_id!r} was lost: {self.lost}. Open another session."
            )
        if self.busy is not None:
            raise RuntimeError(
                f"Session {self.session_id!r} is already running a turn: wait for its result (an agent "
                "takes one prompt at a time per session), or lease another session."
            )
        self._cancel.clear()
        self._busy = self._pool.spawn(self._turn(prompt, turn_timeout, prompt_id))
        try:
            return await asyncio.shield(self._busy)
        except asyncio.CancelledError:
            self._cancel.set()  # the caller gave up: the watchdog escalates without it
            raise

    def cancel(self) -> None:
        """Cancel the turn in progress: ``session/cancel``, then the watchdog's grace period and kill."""
        self._cancel.set()

    async def _turn(
        self, prompt: PromptContent, turn_timeout: float | None, prompt_id: str | None
    ) -> SupervisedTurn:
        async with self._pool.turn_slot():
            if self._cancel.is_set():  # the caller gave up while the turn waited for its slot
                return SupervisedTurn.not_run(prompt_id, "cancelled before the turn started", 0.0)
            earlier: list[PoolEvent] = []
            if self._incarnation is not self._worker.current or not self._incarnation.alive:
                await self._take_up(earlier)  # the process was replaced since the last turn
                if self.lost is not None:
                    raise SessionLostError(
                        f"Session {self.session_id!r} was lost: {self.lost}. Open another session."
                    )
            pool = self._pool
            run = TurnRun(self._session, prompt)
            watch = TurnWatch(
                worker=self._worker,
                incarnation=self._incarnation,
                session_id=self.session_id,
                timeout=pool.turn_timeout if turn_timeout is None else turn_timeout,
                grace=pool.cancel_grace,
                cancel_requested=self._cancel,
                report=pool.report,
                recover=self._take_up,
            )
            result = await supervise(run, watch)
        if earlier or prompt_id is not None:
            result = result.with_context(earlier, prompt_id)
        return result

    async def _take_up(self, events: list[PoolEvent]) -> None:
        """Have the slot's next process running, and the session set up on it; steps added to ``events``."""
        try:
            incarnation = await self._worker.restart(self._incarnation.generation)
        except (AcpError, OSError) as exc:  # the turn's result still goes to its caller
            self.lost = f"the slot's new process could not be started: {exc}"
            lost = SessionLost(slot=self.slot, session_id=self.session_id, reason=self.lost)
            events.append(lost)
            self._pool.report(lost)
            return
        if incarnation.started is not None:
            events.append(incarnation.started)
        self._incarnation = incarnation
        client = incarnation.client
        method: Literal["session/resume", "session/load"] | None = None
        if self._worker.supports_resume:
            method = "session/resume"
        elif self._worker.supports_load:
            method = "session/load"
        else:
            self.lost = "the agent advertises neither session/resume nor session/load"
        if method is not None:
            try:
                if method == "session/resume":
                    self._session = await client.resume_session(self.session_id, self._cwd)
                else:
                    self._session = await client.load_session(self.session_id, self._cwd)
            except AcpError as exc:
                self.lost = f"{method} failed: {exc}"
        event: PoolEvent
        if method is not None and self.lost is None:
            event = SessionResumed(
                slot=self.slot, session_id=self.session_id, pid=incarnation.pid, method=method
            )
        else:
            event = SessionLost(slot=self.slot, session_id=self.session_id, reason=self.lost or "")
        events.append(event)
        self._pool.report(event)

    async def aclose(self) -> None:
        """Stop reading the session here and end the commands it started (it lives on at the agent)."""
        await self._session.aclose()
