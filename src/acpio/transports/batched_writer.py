"""The writing side of a line transport: :class:`BatchedWriter` queues frames and writes them in batches.

``send()`` only appends the frame to a list; one writer task joins everything queued so far into a
single ``write`` call and awaits it. Frames sent while a write is in flight wait in the list and go
out together in the next one, so a burst of messages costs one system call, not one per message,
and a slow reader makes the batches larger instead of the queue longer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections import deque
from collections.abc import Awaitable, Callable

from acpio.errors import ConnectionClosed, TransportError
from acpio.transports._progress import Waiters, wait_for_count, wake_all, wake_reached

__all__ = ["BatchedWriter"]

logger = logging.getLogger("acpio.transports")


class BatchedWriter:
    """Queues outgoing frames, each with its newline, and writes them in batches (see the module docstring).

    ``write(data)`` writes all of ``data``; ``write_nowait(data)``, if given, writes what it can
    without waiting and returns the number of bytes written: a lone frame then goes out in
    :meth:`send` itself, and a sender that never yields to the event loop hands its output over
    while it goes on, instead of queueing all of it. ``write_failed(exc)`` makes the error kept when
    a write raises ``exc``; ``label`` names the peer in error messages.

    :class:`~acpio.transports.streams.Lines` writes through one, and gives it as its ``frame_sink``.
    """

    def __init__(
        self,
        write: Callable[[bytes], Awaitable[object]],
        *,
        write_nowait: Callable[[bytes], int] | None = None,
        write_failed: Callable[[BaseException], TransportError],
        label: str = "peer",
    ) -> None:
        self._write = write
        self._write_nowait = write_nowait
        self._write_failed = write_failed
        self._label = label
        # Queue length at which send() writes without waiting (never without write_nowait).
        self._eager_at = _EAGER_WRITE_ENTRIES if write_nowait is not None else sys.maxsize
        self._closed = False
        #: Frames and newlines waiting for the writer task.
        self._queued: list[bytes] = []
        self._writing = False
        #: send() wrote a lone frame at once since the writer's last pass or new input: the frames
        #: after it wait for the writer (see send()). The reader owns the reset: whoever reads
        #: the peer's input must set it back to ``False`` each time input arrives, so that its
        #: answer is written at once again (a plain attribute: it is cleared on every chunk read).
        #: Nothing else writes it.
        self.wrote_lone_frame = False
        self._task: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Future[None] | None = None
        #: drain() calls: (bytes that must have been written, waiter), in order.
        self._drain_waiters: Waiters = deque()
        #: Bytes queued and bytes written since the start (a drain waits for its own target).
        self._queued_total = 0
        self._written_total = 0
        self._write_failure: TransportError | None = None
        self._writes = 0
        self._timed_out = False
        #: Set once :meth:`finish` ended; created by its first call.
        self._finished: asyncio.Event | None = None

    @property
    def queued(self) -> int:
        """Bytes queued but not yet written."""
        return sum(map(len, self._queued))

    @property
    def timed_out(self) -> bool:
        """Whether :meth:`finish` gave up on frames the peer did not read in time."""
        return self._timed_out

    def statistics(self) -> dict[str, int]:
        """Counters for tests and tuning: ``writes`` done, bytes ``queued`` but not yet written."""
        return {"writes": self._writes, "queued": self.queued}

    def send(self, frame: bytes) -> None:
        """Queue one frame (a single line of compact JSON, without the newline); never blocks.

        Raises :class:`~acpio.ConnectionClosed` after :meth:`finish` or after a write failed, and
        ``ValueError`` if the frame contains a newline.
        """
        if self._closed:
            raise ConnectionClosed(f"The transport to {self._label} is closed; no more frames can be sent")
        if self._write_failure is not None:
            raise ConnectionClosed(
                f"The transport to {self._label} can no longer send: {self._write_failure}"
            ) from self._write_failure
        # partition, not `in`: `bytes in bytes` first tries its operand as an integer, and the
        # TypeError it raises and clears costs more than the search (2.1k against 0.8k instructions).
        if frame.partition(b"\n")[1]:
            raise ValueError("A frame must be one line, but this one contains a newline: serialize compactly")
        queued = self._queued
        if len(frame) < _LARGE_FRAME:
            # A copy with its newline, not the frame itself: orjson's bytes keep ~4 KB allocated however
            # short they are (200,000 queued frames of 65 bytes held 786 MB; copies hold 23 MB).
            queued.append(frame + b"\n")
        else:  # a large frame is queued as it is: a copy would double the memory it takes
            queued += (frame, b"\n")
        self._queued_total += len(frame) + 1
        if not self._writing:
            if len(queued) == 1 and not self.wrote_lone_frame and self._idle():
                # A lone frame while the writer sleeps (an answer, a request): written now, not a
                # loop turn later by the writer, which sleeps on. Later frames go to it, out in one
                # write (a burst is not written frame by frame) until new input (its answer goes out
                # at once again) or the writer's next pass: a callback to end the turn cost each
                # round trip one more pass of the event loop on each side.
                self._write_queued_now()
                if not self._queued:
                    self.wrote_lone_frame = True
                    return
            elif len(queued) >= self._eager_at:  # a long queue: written now, without waiting
                self._write_queued_now()
        wakeup = self._wakeup
        if wakeup is not None:
            self._wakeup = None
            if not wakeup.done():
                wakeup.set_result(None)
        elif self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._write_loop(), name=f"acpio writer for {self._label}"
            )

    def _idle(self) -> bool:
        """Whether the writer task sleeps with nothing queued (or was never started), and may write now."""
        if self._write_nowait is None:
            return False
        return self._task is None or (self._wakeup is not None and not self._wakeup.done())

    def _write_queued_now(self) -> None:
        """Write what the queue holds without waiting; what could not be written stays queued."""
        assert self._write_nowait is not None
        queued_before = self._queued
        data = b"".join(queued_before)
        self._queued = []
        try:
            written = self._write_nowait(data)
        except OSError:
            written = 0  # the writer task meets the same error and reports it
        self._written_total += written
        if written and self._drain_waiters:
            self._wake_drained()
        if written < len(data):
            # The peer is not keeping up: try again once the queue has doubled (so the joins stay
            # linear overall); the writer task, when it runs, waits for the peer properly.
            self._queued.append(data[written:])
            self._eager_at = 2 * len(queued_before)
        else:
            self._eager_at = _EAGER_WRITE_ENTRIES
        if written:
            self._writes += 1

    async def drain(self) -> None:
        """Wait until every frame queued before this call has been written.

        Frames queued after the call do not delay it, however fast other senders go.
        Raises :class:`~acpio.TransportError` if a write failed (the peer went away).
        """
        if self._written_total < self._queued_total and self._write_failure is None:
            await wait_for_count(self._drain_waiters, self._queued_total)
        if self._write_failure is not None:
            raise self._write_failure

    async def _write_loop(self) -> None:
        """The single writer: join whatever is queued, write it, repeat; sleep while idle."""
        loop = asyncio.get_running_loop()
        try:
            while True:
                if not self._queued:
                    self.wrote_lone_frame = False  # what send() wrote at once went out before this
                    if self._write_nowait is not None:
                        self._eager_at = _EAGER_WRITE_ENTRIES  # the peer caught up
                    wake_all(self._drain_waiters)
                    if self._closed:
                        return
                    self._wakeup = loop.create_future()
                    await self._wakeup
                    continue
                queued, self._queued = self._queued, []
                self._writing = True
                try:
                    for data in _batches(queued):
                        await self._write(data)
                        self._writes += 1
                        self._written_total += len(data)
                        self._wake_drained()
                finally:
                    self._writing = False
                    queued.clear()
        except Exception as exc:
            self._write_failure = self._write_failed(exc)
            self._write_failure.__cause__ = exc
            logger.debug("%s", self._write_failure)
            self._queued.clear()
            wake_all(self._drain_waiters)

    def _wake_drained(self) -> None:
        """Wake the drains whose frames are all written now."""
        wake_reached(self._drain_waiters, self._written_total)

    async def finish(self, seconds: float, unwritten: Callable[[], int]) -> None:
        """Refuse further sends, write what is queued and stop; give up after ``seconds``.

        On giving up, a warning names the ``unwritten()`` bytes (the queue and what the ``write``
        callable itself still holds) and later sends and drains fail with it. A call while another
        waits waits for that one to end (one warning at most); a call after it does nothing.
        """
        self._closed = True
        finished = self._finished
        if finished is not None:
            await finished.wait()
            return
        self._finished = finished = asyncio.Event()
        try:
            await self._finish(seconds, unwritten)
        finally:
            finished.set()

    async def _finish(self, seconds: float, unwritten: Callable[[], int]) -> None:
        task = self._task
        if task is None or task.done():
            return
        wakeup = self._wakeup
        if wakeup is not None:
            self._wakeup = None
            if not wakeup.done():
                wakeup.set_result(None)
        try:
            async with asyncio.timeout(seconds):
                await asyncio.shield(task)
        except TimeoutError:
            self._timed_out = True
            message = (
                f"{self._label} did not read its input for {seconds:.1f} s; "
                f"closing with {unwritten()} queued bytes unwritten"
            )
            logger.warning("%s", message)
            if self._write_failure is None:
                self._write_failure = TransportError(message)
        finally:
            if not task.done():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            self._queued.clear()
            wake_all(self._drain_waiters)


# Queued frames after which send() writes without waiting.
_EAGER_WRITE_ENTRIES = 256
# Frames from this size on are queued and written as they are, never copied into a batch.
_LARGE_FRAME = 64 * 1024


def _batches(queued: list[bytes]) -> list[bytes]:
    """What to write for the ``queued`` lines: small ones joined, a large frame on its own (no copy)."""
    if len(queued) == 1:
        return queued
    out: list[bytes] = []
    start = 0
    for i, item in enumerate(queued):
        if len(item) >= _LARGE_FRAME:
            if start < i:
                out.append(b"".join(queued[start:i]))
            out.append(item)
            start = i + 1
    if start == 0:
        return [b"".join(queued)]
    if start < len(queued):
        out.append(b"".join(queued[start:]))
    return out
