"""The lock a connection's chain runs under: taken without a coroutine when it is free.

The dispatch loop takes it for each message it reads, and a task activating dynamic handlers
outside the loop takes it too, so that the chain never runs twice at once. It is fair as
``asyncio.Lock`` is: a free lock is not taken past a task already waiting for it (its turn
comes first), and :meth:`release` hands it to the first waiter. Unlike ``asyncio.Lock``, a free
lock is taken by a plain call (:meth:`try_acquire`): the loop pays no coroutine per message.
"""

from __future__ import annotations

import asyncio
from collections import deque

__all__ = ["DispatchLock"]


class DispatchLock:
    """A fair asyncio lock with a synchronous fast path (see the module docstring)."""

    __slots__ = ("_locked", "_waiters")

    def __init__(self) -> None:
        self._locked = False
        self._waiters: deque[asyncio.Future[None]] = deque()

    def __repr__(self) -> str:
        state = "locked" if self._locked else "unlocked"
        return f"<DispatchLock {state}, {len(self._waiters)} waiting>"

    def locked(self) -> bool:
        """Whether someone holds the lock."""
        return self._locked

    def try_acquire(self) -> bool:
        """Take the lock if it is free and nobody waits for it; ``False`` (and nothing taken) otherwise."""
        if self._locked:
            return False
        waiters = self._waiters
        if waiters and not all(waiter.cancelled() for waiter in waiters):
            return False
        self._locked = True
        return True

    async def acquire(self) -> None:
        """Take the lock, waiting for it (after those already waiting) when it is held."""
        if self.try_acquire():
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            try:
                await waiter
            finally:
                self._waiters.remove(waiter)
        except asyncio.CancelledError:
            # Woken and cancelled at once: pass the turn on, or the lock stays free with waiters.
            if not self._locked:
                self._wake_first()
            raise
        self._locked = True

    def release(self) -> None:
        """Free the lock and wake the first waiter (which takes it when it runs)."""
        if not self._locked:
            raise RuntimeError("DispatchLock.release() called on a lock that is not held")
        self._locked = False
        if self._waiters:
            self._wake_first()

    def _wake_first(self) -> None:
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
                return
