"""The life of a connection as one value: its :class:`Phase`, and the one function that changes it.

========================  =====================================================================
phase                     entered when
========================  =====================================================================
``OPEN``                  the connection is made; it reads, dispatches and sends
``INPUT_ENDED``           the peer closed its output (clean end of input); requests fail, the
                          ``on_close`` callbacks run, then serving stops (``connect_with``'s
                          main may go on)
``CLOSING``               :meth:`~acpio.jsonrpc.Connection.close` was called
``FAILED``                a read error; a task spawned outside any request handler, a response
                          callback or a close callback raised
``FINISHED``              the connection shut down: tasks cancelled, transport closed
========================  =====================================================================

Phases only move forward (``OPEN`` → ``INPUT_ENDED`` → ``CLOSING`` → ``FAILED`` → ``FINISHED``,
any step may be skipped). Entering any phase after ``OPEN`` fails the requests still waiting for
an answer with :class:`~acpio.ConnectionClosed`, saying why (this is the only place that does);
what is specific to a phase (cancelling the reader, running callbacks) is done after entering it
by :class:`~acpio.jsonrpc.ending.ConnectionEnding`. A connection that failed keeps its error in
:attr:`Lifecycle.failure` when it finishes, and ``serve``/``connect_with`` raise it.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable

from acpio.errors import ConnectionClosed

__all__ = ["Lifecycle", "Phase"]

_log = logging.getLogger("acpio.jsonrpc")


class Phase(enum.IntEnum):
    """Where a connection is in its life; phases only move forward (see the module docstring)."""

    OPEN = 0
    INPUT_ENDED = 1
    CLOSING = 2
    FAILED = 3
    FINISHED = 4


#: Builds the error a request waiting for ``method`` fails with.
PendingError = Callable[[str], BaseException]


class Lifecycle:
    """The phase of one connection, the error it failed with, and the events its tasks wait on.

    ``fail_pending`` is called with an error factory on every phase change after ``OPEN``: it
    fails the requests still waiting for an answer.
    """

    __slots__ = ("_fail_pending", "failed", "failure", "name", "phase", "stopped")

    def __init__(self, name: str, fail_pending: Callable[[PendingError], None]) -> None:
        self.name = name
        self.phase = Phase.OPEN
        #: The error the connection failed with (set on entering ``FAILED``).
        self.failure: BaseException | None = None
        self._fail_pending = fail_pending
        #: Set when serving is over: every phase but ``INPUT_ENDED``, which sets it once its close
        #: callbacks ran (see :meth:`input_done`).
        self.stopped = asyncio.Event()
        #: Resolved on entering ``FAILED`` (``connect_with`` waits on it beside its main).
        self.failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def __repr__(self) -> str:
        return f"<Lifecycle {self.name!r} {self.phase.name}>"

    @property
    def is_open(self) -> bool:
        """Whether the connection still takes requests."""
        return self.phase is Phase.OPEN

    def enter(self, phase: Phase, error: BaseException | None = None) -> bool:
        """Move to ``phase`` (with a failure's ``error``); ``False`` if it is not ahead of the current one.

        Fails the pending requests with the phase's error, and wakes what waits for the phase.
        """
        if phase <= self.phase:
            if error is not None:
                _log.debug(
                    "Connection %r: a further error after it %s", self.name, self.phase.name, exc_info=error
                )
            return False
        self.phase = phase
        if phase is Phase.FAILED:
            assert error is not None
            self.failure = error
            self.failed.set_result(None)
        self._fail_pending(self._pending_error(phase, error))
        if phase is not Phase.INPUT_ENDED:
            self.stopped.set()
        return True

    def fail(self, error: BaseException) -> None:
        """Enter ``FAILED`` with ``error`` (once failed or finished, a further error is only logged)."""
        self.enter(Phase.FAILED, error)

    def input_done(self) -> None:
        """The close callbacks of ``INPUT_ENDED`` ran: serving is over."""
        self.stopped.set()

    def refusal(self, method: str) -> BaseException:
        """The error for a request sent once the connection left ``OPEN``: what its pending requests got."""
        return self._pending_error(self.phase, self.failure)(method)

    def _pending_error(self, phase: Phase, error: BaseException | None) -> PendingError:
        name = self.name
        if phase is Phase.INPUT_ENDED:
            return lambda method: ConnectionClosed("Connection closed by the peer", method=method)
        if error is None:
            return lambda method: ConnectionClosed(f"Connection {name!r} closed", method=method)

        def failed(method: str) -> BaseException:
            exc = ConnectionClosed(f"Connection {name!r} failed ({error})", method=method)
            exc.__cause__ = error
            return exc

        return failed
