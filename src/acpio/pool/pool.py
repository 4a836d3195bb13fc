"""The supervised pool: warm agent processes, sessions on them, a limit on turns, health, the watchdog."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from types import TracebackType
from typing import Any, Self, TypeVar

from acpio.client.forms import FormChoice, form_policy
from acpio.client.permissions import PermissionChoice
from acpio.driver.client import AgentClient
from acpio.errors import AcpError
from acpio.pool.events import PoolEvent
from acpio.pool.result import SupervisedTurn
from acpio.pool.session import PooledSession
from acpio.pool.worker import Incarnation, Worker
from acpio.session import PromptContent
from acpio.transports import AgentCommand

__all__ = ["AgentPool"]

_log = logging.getLogger("acpio.pool")

T = TypeVar("T")

#: Seconds the agent has to end a cancelled turn before the pool gives up on it and kills the process.
DEFAULT_CANCEL_GRACE = 2.0


class AgentPool:
    """``size`` agent processes, started and initialized ahead of need, and sessions on them.

    ::

        async with AgentPool("acpio testy", size=4, turn_timeout=60) as pool:
            result = await pool.prompt("echo hello")          # a new session, one turn
            async with pool.session() as session:              # a session for several turns
                first = await session.prompt("echo one")
                second = await session.prompt("echo two")

    ``command`` is what ``AcpAgent`` takes (a shell-words string, an argv list...). Each process
    holds up to ``sessions_per_process`` sessions at a time; at most ``max_turns`` turns run at
    once across the pool (by default, every session the processes can hold). A process that ends
    is noticed and replaced (``on_event`` is told). ``turn_timeout`` bounds each turn: the watchdog
    then cancels it, waits ``cancel_grace`` seconds, gives up on it (``cancelled``), kills the
    process group, starts a new process and resumes the session there
    (:mod:`acpio.pool.watchdog`).

    Each process is driven by an :class:`~acpio.client.AgentClient`, which answers the agent's
    requests: permissions and commands by ``permissions`` (``"deny"`` by default, ``"allow"``, a
    callback or a :class:`~acpio.client.PermissionPolicy` such as a TOML rule file's), forms by
    ``forms`` (field values, ``"decline"``, ``"cancel"`` or a callback; none by default), files
    inside the session's directory, commands as real processes (``terminals``). Sessions work in
    ``cwd`` (the current directory by default) unless a prompt names another. ``env`` and
    ``init_timeout`` are the client's too. Each result is a :class:`~acpio.pool.SupervisedTurn`:
    the :class:`~acpio.client.TurnResult` (text, tool calls, files, usage...) and the pool's steps.
    """

    def __init__(
        self,
        command: str | Sequence[str] | Mapping[str, Any] | AgentCommand,
        *,
        size: int = 4,
        sessions_per_process: int = 1,
        max_turns: int | None = None,
        turn_timeout: float | None = None,
        cancel_grace: float = DEFAULT_CANCEL_GRACE,
        permissions: PermissionChoice = "deny",
        forms: FormChoice = None,
        cwd: str | os.PathLike[str] | None = None,
        terminals: bool = True,
        env: Mapping[str, str] | None = None,
        init_timeout: float | None = 30.0,
        on_event: Callable[[PoolEvent], None] | None = None,
    ) -> None:
        if size < 1 or sessions_per_process < 1 or (max_turns is not None and max_turns < 1):
            raise ValueError(
                f"size ({size}), sessions_per_process ({sessions_per_process}) and max_turns "
                f"({max_turns}) must be 1 or more"
            )
        if cancel_grace < 0 or (turn_timeout is not None and turn_timeout <= 0):
            raise ValueError(
                f"turn_timeout ({turn_timeout}) must be positive, cancel_grace ({cancel_grace}) 0 or more"
            )
        self._command = command if isinstance(command, AgentCommand) else AgentCommand.parse(command)
        #: Seconds a turn may run before the watchdog cancels it (``None``: no limit).
        self.turn_timeout = turn_timeout
        #: Seconds the agent has to end a cancelled turn before its process is killed.
        self.cancel_grace = cancel_grace
        #: The sessions' directory when a prompt names none (the current directory by default).
        self.cwd = _absolute(cwd if cwd is not None else os.getcwd())
        self._client_options: dict[str, Any] = {
            "cwd": self.cwd,
            "permissions": permissions,
            "forms": form_policy(forms),
            "terminals": terminals,
            "env": env,
            "init_timeout": init_timeout,
        }
        self._on_event = on_event
        self._sessions_per_process = sessions_per_process
        self._turns = asyncio.Semaphore(max_turns if max_turns is not None else size * sessions_per_process)
        self._workers = [
            Worker(slot, self._client, report=self.report, on_death=self._replace) for slot in range(size)
        ]
        self._free = asyncio.Condition()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._started = False
        self._closed = False

    def __repr__(self) -> str:
        return f"<AgentPool {self._command.display()!r} size {len(self._workers)}>"

    def _client(self, slot: int) -> AgentClient:
        """The client of a new process in ``slot``."""
        return AgentClient(self._command, name=f"acpio-pool-{slot}", **self._client_options)

    # --- life ---------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start and initialize every process, all at once; raises the first failure, the rest ended."""
        if self._started:
            return
        self._started = True
        try:
            async with asyncio.TaskGroup() as group:
                for worker in self._workers:
                    group.create_task(worker.start())
        except BaseException as exc:
            await self.aclose()
            if isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) >= 1:
                raise exc.exceptions[0] from None
            raise

    async def aclose(self) -> None:
        """Wait for turns still being recovered, then end every process."""
        if self._closed:
            return
        self._closed = True
        while self._tasks:  # a recovery may free a slot, which spawns the release: wait for all
            pending = list(self._tasks)
            await asyncio.gather(*pending, return_exceptions=True)
            self._tasks.difference_update(pending)
        await asyncio.gather(*(worker.aclose() for worker in self._workers), return_exceptions=True)

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    @property
    def pids(self) -> list[int | None]:
        """The process id in each slot (``None``: no process running there now)."""
        return [w.current.pid if w.healthy else None for w in self._workers]

    # --- turns --------------------------------------------------------------------------------------

    async def prompt(
        self,
        prompt: PromptContent,
        *,
        cwd: str | os.PathLike[str] | None = None,
        turn_timeout: float | None = None,
        prompt_id: str | None = None,
    ) -> SupervisedTurn:
        """Run ``prompt`` as the one turn of a new session (in ``cwd``, the pool's by default); its result.

        ``prompt_id`` is kept in the result (to match results to prompts run concurrently).
        ``turn_timeout`` overrides the pool's for this turn.
        """
        async with self.session(cwd=cwd) as session:
            return await session.prompt(prompt, turn_timeout=turn_timeout, prompt_id=prompt_id)

    @contextlib.asynccontextmanager
    async def session(self, *, cwd: str | os.PathLike[str] | None = None) -> AsyncIterator[PooledSession]:
        """A new session (``session/new`` in ``cwd``) on the least busy process, for the block.

        Waits while every process holds ``sessions_per_process`` sessions. Leaving the block
        detaches the session; its slot is free again once a turn still being recovered is done.
        """
        if not self._started or self._closed:
            raise RuntimeError("The pool is not running: use it inside `async with AgentPool(...) as pool:`")
        where = _absolute(cwd) if cwd is not None else self.cwd
        worker = await self._lease()
        try:
            incarnation = await self._running(worker)
            started = await incarnation.client.new_session(where)
        except BaseException:
            await self._release(worker)
            raise
        session = PooledSession(self, worker, incarnation, started, where)
        try:
            yield session
        finally:
            busy = session.busy
            if busy is None:
                try:
                    await session.aclose()
                finally:  # a close that fails or is cancelled must not take the slot with it
                    await self._release(worker)
            else:  # a cancelled turn is being recovered: the slot is freed when that is done
                busy.add_done_callback(lambda _: self.spawn(self._release_after(session, worker)))

    @contextlib.asynccontextmanager
    async def turn_slot(self) -> AsyncIterator[None]:
        """Held while a turn runs: at most ``max_turns`` at once."""
        async with self._turns:
            yield

    def spawn(self, work: Coroutine[Any, Any, T]) -> asyncio.Task[T]:
        """Run ``work`` in a task the pool keeps until it is done (and waits for when closing)."""
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def report(self, event: PoolEvent) -> None:
        """Give ``event`` to ``on_event`` (its failure is logged, never raised into the pool)."""
        _log.info("pool: %s", event)
        if self._on_event is not None:
            try:
                self._on_event(event)
            except Exception:
                _log.exception("The pool's on_event callback failed on %s", event)

    # --- slots --------------------------------------------------------------------------------------

    async def _lease(self) -> Worker:
        async with self._free:
            while True:
                free = [w for w in self._workers if w.leases < self._sessions_per_process]
                if free:
                    worker = min(free, key=lambda w: (not w.healthy, w.leases))
                    worker.leases += 1
                    return worker
                await self._free.wait()

    async def _release(self, worker: Worker) -> None:
        async with self._free:
            worker.leases -= 1
            self._free.notify()

    async def _release_after(self, session: PooledSession, worker: Worker) -> None:
        try:
            await session.aclose()
        finally:
            await self._release(worker)

    async def _running(self, worker: Worker) -> Incarnation:
        """The worker's process, started anew if it ended."""
        current = worker.current
        if current.alive:
            return current
        return await worker.restart(current.generation)

    def _replace(self, worker: Worker, incarnation: Incarnation) -> None:
        """The health watch: a process ended; start the next one now if no session uses the slot.

        A slot in use is restarted by its session: by the turn that saw the process end, or before
        the session's next turn, which then resumes the session and reports the steps.
        """
        if not self._closed and worker.leases == 0:
            self.spawn(self._restart(worker, incarnation))

    async def _restart(self, worker: Worker, incarnation: Incarnation) -> None:
        try:
            await worker.restart(incarnation.generation)
        except (AcpError, OSError, RuntimeError) as exc:
            _log.warning("pool: slot %d could not start a new process: %s", worker.slot, exc)


def _absolute(path: str | os.PathLike[str]) -> str:
    """``path`` made absolute against the current directory (no file system access beyond getcwd)."""
    return os.path.normpath(os.path.join(os.getcwd(), os.fspath(path)))
