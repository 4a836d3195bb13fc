"""An in-process transport pair, for tests and for components that run in the same process."""

from __future__ import annotations

import asyncio
import logging
from collections import deque

from acpio.errors import ConnectionClosed
from acpio.transports._progress import Waiters, wait_for_count, wake_all, wake_reached
from acpio.transports.base import OversizedFrame

__all__ = ["Channel", "ServedChannel"]

_log = logging.getLogger("acpio.transports")


class Channel:
    """One end of an in-process duplex pair: what one end sends, the other receives, in order.

    Make a pair with :meth:`Channel.duplex`. Closing one end is end-of-input for the other.
    Frames are passed by reference: nothing is copied or serialized twice.
    """

    __slots__ = ("_closed", "_delivered", "_drainers", "_inbox", "_inbox_bytes", "_peer", "_taken", "_waiter")

    def __init__(self) -> None:
        self._inbox: deque[bytes | None] = deque()
        self._inbox_bytes = 0
        self._waiter: asyncio.Future[None] | None = None
        self._peer: Channel | None = None
        self._closed = False
        #: Frames put in this end's inbox, and taken out by :meth:`receive`, since the start.
        self._delivered = 0
        self._taken = 0
        #: The peer's :meth:`drain` calls: (frames this end must have taken, waiter), in order.
        self._drainers: Waiters = deque()

    @classmethod
    def duplex(cls) -> tuple[Channel, Channel]:
        """Two connected ends: ``a.send(x)`` is received by ``b`` and the reverse."""
        a, b = cls(), cls()
        a._peer, b._peer = b, a
        return a, b

    def _deliver(self, frame: bytes | None) -> None:
        self._inbox.append(frame)
        if frame is not None:
            self._delivered += 1
            self._inbox_bytes += len(frame)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next frame the peer sent; ``None`` once the peer (or this end) closed."""
        while not self._inbox:
            if self._closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        frame = self._inbox.popleft()
        if frame is None:
            self._inbox.append(None)  # keep reporting end of input
            self._wake_drainers()
            return None
        self._taken += 1
        self._inbox_bytes -= len(frame)
        if self._drainers:
            wake_reached(self._drainers, self._taken)
        return frame

    def _wake_drainers(self) -> None:
        wake_all(self._drainers)

    def send(self, frame: bytes) -> None:
        """Hand a frame to the peer. Raises :class:`ConnectionClosed` after either end closed."""
        if self._closed or self._peer is None or self._peer._closed:
            raise ConnectionClosed("The in-process channel is closed")
        self._peer._deliver(frame)

    async def drain(self) -> None:
        """Wait until the peer has received every frame sent before this call (or either end closed).

        Frames sent after the call do not delay it, however fast other senders go.
        """
        peer = self._peer
        if peer is None or self._closed or peer._closed or peer._taken >= peer._delivered:
            return
        await wait_for_count(peer._drainers, peer._delivered)

    def statistics(self) -> dict[str, int]:
        """``queued``: bytes sent that the peer has not received yet."""
        peer = self._peer
        return {"queued": peer._inbox_bytes if peer is not None else 0}

    async def aclose(self) -> None:
        """Close this end; the peer receives end of input after the frames already sent."""
        if self._closed:
            return
        self._closed = True
        if self._peer is not None and not self._peer._closed:
            self._peer._deliver(None)
        self._deliver(None)
        self._wake_drainers()
        if self._peer is not None:
            self._peer._wake_drainers()


class ServedChannel:
    """The client's end of a :class:`Channel` whose other end a task in this process serves.

    It owns that task (an in-process builder or conductor started by ``open()``): closing this
    end closes the channel, then waits up to ``close_timeout`` seconds for the task to finish,
    and cancels it after that. A failure of the task is logged (its peer sees the end of input).
    """

    __slots__ = ("_channel", "_close_timeout", "_task")

    def __init__(self, channel: Channel, task: asyncio.Task[None], *, close_timeout: float = 5.0) -> None:
        self._channel = channel
        self._task = task
        self._close_timeout = close_timeout
        task.add_done_callback(_log_served_failure)

    @property
    def task(self) -> asyncio.Task[None]:
        """The task serving the other end."""
        return self._task

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next frame from the served end; ``None`` once it closed."""
        return await self._channel.receive()

    def send(self, frame: bytes) -> None:
        """Hand a frame to the served end."""
        self._channel.send(frame)

    async def drain(self) -> None:
        """Wait until the served end has received what was sent."""
        await self._channel.drain()

    def statistics(self) -> dict[str, int]:
        """``queued``: bytes sent that the served end has not received yet."""
        return self._channel.statistics()

    async def aclose(self) -> None:
        """Close the channel, then wait (bounded) for the serving task to end."""
        await self._channel.aclose()
        await asyncio.wait((self._task,), timeout=self._close_timeout)
        if not self._task.done():  # it did not end with its input: stop it
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def _log_served_failure(task: asyncio.Task[None]) -> None:
    failure = None if task.cancelled() else task.exception()
    if failure is not None:
        _log.error("An in-process connection failed", exc_info=failure)
