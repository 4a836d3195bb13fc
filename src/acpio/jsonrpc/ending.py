"""How a connection ends: what each way of ending does once its phase is entered, and the final shutdown.

The :class:`~acpio.jsonrpc.lifecycle.Lifecycle` moves the phase forward and fails the requests in
flight; :class:`ConnectionEnding` does what is specific to each end: at the end of input the parked
messages fall back and the ``on_close`` callbacks run; ``close`` stops the reader; the shutdown runs
the callbacks that did not run yet (unless the connection failed), cancels every task and closes the
transport.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from acpio.jsonrpc.chain import HandlerChain
from acpio.jsonrpc.lifecycle import Lifecycle, Phase
from acpio.jsonrpc.tasks import ConnectionTasks
from acpio.transports.base import Transport

__all__ = ["ConnectionEnding"]

_log = logging.getLogger("acpio.jsonrpc")


class ConnectionEnding:
    """The end of one connection: its ``on_close`` callbacks (run once), stopping the reader, the shutdown.

    ``cx`` is what the callbacks are called with (the :class:`~acpio.jsonrpc.Connection`). A
    callback that raises fails the connection with the first such error, after the others ran.
    """

    __slots__ = ("_callbacks", "_chain", "_cx", "_life", "_tasks", "_transport")

    def __init__(
        self,
        cx: object,
        life: Lifecycle,
        chain: HandlerChain,
        tasks: ConnectionTasks,
        transport: Transport,
        close_callbacks: Iterable[Callable[..., Awaitable[object]]],
    ) -> None:
        self._cx = cx
        self._life = life
        self._chain = chain
        self._tasks = tasks
        self._transport = transport
        self._callbacks = list(close_callbacks)

    async def end_of_input(self) -> None:
        """Clean end of input: requests fail, parked messages fall back, close callbacks run."""
        if not self._life.enter(Phase.INPUT_ENDED):
            return
        self._chain.release_parked()
        await self._run_close_callbacks()
        self._life.input_done()

    def close(self, reader: asyncio.Task[None] | None) -> None:
        """Enter ``CLOSING`` and cancel ``reader`` (the dispatch loop's task) unless it is the caller.

        Does nothing once the connection is closing or past it.
        """
        if not self._life.enter(Phase.CLOSING):
            return
        if reader is not None and asyncio.current_task() is not reader:
            reader.cancel()

    async def shutdown(self, *running: asyncio.Task[Any] | None) -> None:
        """Close cleanly (unless failed), cancel ``running`` and every task, close the transport.

        Raises the error the connection failed with, if it failed.
        """
        life = self._life
        if life.phase < Phase.CLOSING:
            life.enter(Phase.CLOSING)
        self._chain.release_parked()
        if life.failure is None:
            await self._run_close_callbacks()
        life.enter(Phase.FINISHED)
        pending: list[asyncio.Task[Any]] = [task for task in running if task is not None]
        pending.extend(self._tasks.take_all())
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        try:
            # aclose flushes queued output within the transport's own time limit; an unbounded
            # drain() here would hang on a peer that stopped reading.
            await self._transport.aclose()
        except Exception as exc:
            _log.debug("Closing connection %r failed", life.name, exc_info=exc)
        if life.failure is not None:
            raise life.failure

    async def _run_close_callbacks(self) -> None:
        callbacks, self._callbacks = self._callbacks, []  # they run once
        first_error: BaseException | None = None
        for callback in callbacks:
            try:
                await callback(self._cx)
            except Exception as exc:
                _log.debug("An on_close callback failed", exc_info=exc)
                if first_error is None:
                    exc.add_note(f"(raised by an on_close callback of connection {self._life.name!r})")
                    first_error = exc
        if first_error is not None:
            self._life.fail(first_error)
