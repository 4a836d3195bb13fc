"""The tasks a connection runs beside its dispatch loop, and whose failure is whose.

A task spawned while a request handler runs (or from a task spawned there, at any depth) belongs
to that request: if it raises, the request is answered with the error and the connection goes
on. Any other task that raises fails the connection. Every task is cancelled when the connection
shuts down.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeAlias, cast

from acpio.errors import ConnectionClosed, RequestError
from acpio.jsonrpc.chain import HandlerChain, unowned_context
from acpio.jsonrpc.lifecycle import Lifecycle, Phase
from acpio.jsonrpc.responses import Responder

__all__ = ["ConnectionTasks", "Work"]

_log = logging.getLogger("acpio.jsonrpc")

#: What a task runs: a coroutine, or an async function called with the arguments given beside it.
Work: TypeAlias = Coroutine[object, object, object] | Callable[..., Awaitable[object]]


class ConnectionTasks:
    """The running tasks of one connection; a task of no request that raises fails ``life``."""

    __slots__ = ("_chain", "_life", "_tasks")

    def __init__(self, life: Lifecycle, chain: HandlerChain) -> None:
        self._life = life
        self._chain = chain
        self._tasks: set[asyncio.Task[object]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn_unowned(self, work: Work, *args: object) -> asyncio.Task[object]:
        """:meth:`spawn` a task of no request, whatever runs now: its failure fails the connection."""
        return self.spawn(work, args, owned=False)

    def spawn(self, work: Work, args: tuple[object, ...], *, owned: bool) -> asyncio.Task[object]:
        """Start ``work`` (a coroutine, or an async function called with ``args``).

        With ``owned``, the task belongs to the request whose handler runs now, if any; without, to
        no request, whatever runs now.
        """
        # an async function's awaitable is its coroutine (create_task refuses anything else)
        coro = cast("Coroutine[object, object, object]", work(*args) if callable(work) else work)
        if self._life.phase is Phase.FINISHED:
            if isinstance(coro, Coroutine):
                coro.close()
            raise ConnectionClosed(f"Connection {self._life.name!r} has ended; cannot spawn a task on it")
        request = self._chain.request_in_context() if owned else None
        loop = asyncio.get_running_loop()
        if request is None:
            task: asyncio.Task[object] = loop.create_task(coro, context=unowned_context())
        else:
            task = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(lambda done: self._done(done, request))
        return task

    def take_all(self) -> list[asyncio.Task[object]]:
        """Every task still running, forgotten (the connection is shutting down and cancels them)."""
        tasks = list(self._tasks)
        self._tasks.clear()
        return tasks

    def _done(self, task: asyncio.Task[object], request: Responder[Any] | None) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is None:
            return
        if request is not None and isinstance(error, Exception):
            self._request_failed(request, error)
            return
        error.add_note(f"(raised by a task spawned on connection {self._life.name!r})")
        self._life.fail(error)

    def _request_failed(self, request: Responder[Any], error: Exception) -> None:
        """A task spawned for ``request`` raised: the request answers it, the connection goes on."""
        answered = "already answered" if request.done else "answered with the error"
        if isinstance(error, RequestError):
            _log.debug(
                "A task of request %r (%s) raised %s (%s)", request.id, request.method, error, answered
            )
        else:
            _log.error(
                "A task spawned by the handler of request %r (%s) failed; the request is %s and "
                "connection %r goes on",
                request.id,
                request.method,
                answered,
                self._life.name,
                exc_info=error,
            )
        request.respond_with_error(self._chain.error_for(error))
