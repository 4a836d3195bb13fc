"""The sending side of both client transports: :class:`QueuedSender` over a :class:`SendQueue`."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable

from acpio.errors import ConnectionClosed, TransportError
from acpio.transports._progress import Waiters, wait_for_count, wake_reached

__all__ = ["QueuedSender", "SendQueue"]

#: Seconds :meth:`SendQueue.close` lets the writer finish what is queued.
_CLOSE_TIMEOUT = 5.0


class SendQueue:
    """Messages a transport sent and has not written yet, and the task that writes them, one at a time.

    ``write(frame)`` writes one message; when the connection broke it calls :meth:`fail`, and what
    is queued is dropped. ``closed_message`` is what :meth:`put` raises once the queue is closed.
    """

    def __init__(self, write: Callable[[bytes], Awaitable[None]], closed_message: str) -> None:
        self._write = write
        self._closed_message = closed_message
        self._frames: deque[bytes] = deque()
        #: Bytes put and not yet written.
        self.queued = 0
        self.closed = False
        #: Why the connection broke: what :meth:`drain` raises.
        self.failure: TransportError | None = None
        #: Messages put, and messages written or dropped: a drain waits for the mark of its call.
        self._put = 0
        self._settled = 0
        self._drains: Waiters = deque()
        self._wake: asyncio.Future[None] | None = None
        self._writer = asyncio.ensure_future(self._run())

    def put(self, frame: bytes) -> None:
        """Queue a message; raises :class:`~acpio.ConnectionClosed` once closed or broken."""
        if self.closed or self.failure is not None:
            raise ConnectionClosed(self._closed_message)
        self._frames.append(frame)
        self.queued += len(frame)
        self._put += 1
        self._wake_writer()

    async def drain(self) -> None:
        """Wait until the messages put before this call are written; raises the failure once broken."""
        if self._settled < self._put:
            await wait_for_count(self._drains, self._put)
        if self.failure is not None:
            raise self.failure

    def fail(self, failure: TransportError) -> None:
        """The connection broke: stop writing, drop what is queued (the first failure is kept)."""
        if self.failure is None:
            self.failure = failure

    async def close(self) -> None:
        """Write what is queued (for at most 5 s), then stop."""
        self.closed = True
        self._wake_writer()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._writer), _CLOSE_TIMEOUT)
        await self.cancel()

    def cancel(self) -> Awaitable[object]:
        """Stop at once, dropping what is queued; what it returns is done once the writer has stopped."""
        self.closed = True
        self._writer.cancel()
        return asyncio.gather(self._writer, return_exceptions=True)

    def _wake_writer(self) -> None:
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                while self._frames and self.failure is None:
                    frame = self._frames[0]
                    await self._write(frame)
                    self._frames.popleft()
                    self.queued -= len(frame)
                    self._settled += 1
                    wake_reached(self._drains, self._settled)
                self._drop()
                if self.closed or self.failure is not None:
                    return
                self._wake = loop.create_future()
                await self._wake
                self._wake = None
        finally:
            self._drop()

    def _drop(self) -> None:
        """Forget what is queued (nothing, or what a broken connection cannot write): drains return."""
        self._frames.clear()
        self.queued = 0
        self._settled = self._put
        wake_reached(self._drains, self._settled)


class QueuedSender:
    """A transport's ``send()``, ``statistics()`` and ``drain()`` over the :class:`SendQueue` given."""

    def __init__(self, queue: SendQueue) -> None:
        self._queue = queue

    def send(self, frame: bytes) -> None:
        """Queue a message; they are written one after the other, in order."""
        self._queue.put(frame)

    def statistics(self) -> dict[str, int]:
        """``queued``: bytes sent and not yet written."""
        return {"queued": self._queue.queued}

    async def drain(self) -> None:
        """Wait until what was sent before this call is written; raises ``TransportError`` once broken."""
        await self._queue.drain()
