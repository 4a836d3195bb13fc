"""Newline-delimited JSON over byte streams: :class:`Lines` and :class:`ByteStreams`.

:class:`Lines` turns any pair of async callables (read a chunk, write bytes) into a
:class:`~acpio.transports.base.Transport`. :class:`ByteStreams` is ``Lines`` over an asyncio
``StreamReader``/``StreamWriter`` pair (sockets, pipes); ``Stdio`` and ``AcpAgent`` build on them.

``Lines`` reads: it cuts the input into frames with a
:class:`~acpio.transports.lines.LineSplitter`. It writes through a
:class:`~acpio.transports.batched_writer.BatchedWriter`, which batches the frames sent into as few
writes as it can; a connection hands its frames to that writer directly (``Lines.frame_sink``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections import deque
from collections.abc import Awaitable, Callable

from acpio.errors import TransportError
from acpio.transports.base import FrameSink, OversizedFrame
from acpio.transports.batched_writer import BatchedWriter
from acpio.transports.lines import DEFAULT_MAX_LINE, LineSplitter

__all__ = ["ByteStreams", "Lines"]

logger = logging.getLogger("acpio.transports")

READ_SIZE = 256 * 1024
"""How many bytes a byte-stream transport asks for per read."""

DEFAULT_CLOSE_TIMEOUT = 5.0
"""How long ``aclose()`` waits for queued frames to be written before dropping them."""


class Lines:
    """A transport over two async callables: one reads a chunk, the other writes bytes.

    ``read()`` returns the next chunk (``b""`` at end of input); ``write(data)`` writes all of it.
    ``write_nowait(data)``, if given, writes what it can without waiting and returns the number of
    bytes written: it lets a sender that never yields to the event loop (a tight loop of
    notifications) hand its output over while it goes on, instead of queueing all of it.

    Incoming bytes are cut into frames by :class:`~acpio.transports.lines.LineSplitter`; outgoing
    frames get a newline and are batched by a
    :class:`~acpio.transports.batched_writer.BatchedWriter`. ``close``, if given, is awaited by
    :meth:`aclose` after the last queued frame was written. ``label`` names the peer in error
    messages. To watch the frames, wrap the transport in a :class:`~acpio.transports.tap.Tap`.

    One task at a time may call :meth:`receive`. :meth:`aclose` does not interrupt a ``receive``
    that is waiting for input (unless ``close`` ends the input): cancel that task instead.
    """

    def __init__(
        self,
        read: Callable[[], Awaitable[bytes]],
        write: Callable[[bytes], Awaitable[object]],
        *,
        close: Callable[[], Awaitable[object]] | None = None,
        write_nowait: Callable[[bytes], int] | None = None,
        max_line: int = DEFAULT_MAX_LINE,
        label: str = "peer",
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        self._read = read
        self._close = close
        self._splitter = LineSplitter(max_line)
        self._frames: deque[bytes | OversizedFrame] = deque()
        self._nowait = type(self).receive is Lines.receive  # never past a subclass's own receive()
        self._label = label
        self._close_timeout = close_timeout
        self._at_end = False
        self._closed = False
        #: Offered a frame that arrives alone while receive() waits (see take_lone_frames).
        self._take_lone: Callable[[bytes], bool] | None = None
        #: receive() waits for a chunk with no frame left to return.
        self._waiting = False
        #: Shown each incoming frame as it is read (see watch_incoming).
        self._watch: Callable[[bytes | OversizedFrame], None] | None = None
        self._writer = BatchedWriter(
            write, write_nowait=write_nowait, write_failed=self._write_failed, label=label
        )

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"<{type(self).__name__} {self._label} {state}>"

    @property
    def label(self) -> str:
        """The peer's name, as used in error messages."""
        return self._label

    @property
    def max_line(self) -> int:
        """The longest incoming line, in bytes, delivered as a frame."""
        return self._splitter.max_line

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closed

    @property
    def frame_sink(self) -> FrameSink:
        """What :meth:`send` hands each frame to (:class:`~acpio.transports.base.SendsThrough`).

        The batched writer, whom a connection calls directly; the transport itself when a
        subclass has a ``send`` of its own.
        """
        return self._writer if type(self).send is Lines.send else self

    def statistics(self) -> dict[str, int]:
        """Counters for tests and tuning: ``writes`` done, bytes ``queued`` but not yet written."""
        return self._writer.statistics()

    # -- receiving -------------------------------------------------------------------------

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next frame; an :class:`OversizedFrame` for a line over ``max_line``; ``None`` at end.

        A partial line left when the input ends is dropped (and logged at debug level).
        Raises :class:`~acpio.TransportError` when reading fails.
        """
        frames = self._frames
        while not frames:
            if self._at_end or self._closed:
                return None
            self._waiting = True
            try:
                chunk = await self._read()
            except (OSError, EOFError) as exc:
                raise self._read_failed(exc) from exc
            finally:
                self._waiting = False
            if not chunk:
                self._at_end = True
                rest = self._splitter.finish()
                if rest is not None:
                    size = rest.size if isinstance(rest, OversizedFrame) else len(rest)
                    logger.debug(
                        "%s closed its output in the middle of a line; dropped %d bytes", self._label, size
                    )
                await self._on_end_of_input()
                return None
            fed = self._splitter.feed(chunk)
            if self._watch is not None:
                self._show(fed)
            frames.extend(fed)
            self._writer.wrote_lone_frame = False  # new input: its answer may go out at once
        return frames.popleft()

    def receive_nowait(self) -> bytes | OversizedFrame | None:
        """The frame :meth:`receive` would return at once if one is held; else (or if overridden) ``None``."""
        return self._frames.popleft() if self._frames and self._nowait else None

    def take_lone_frames(self, take: Callable[[bytes], bool] | None) -> None:
        """Offer ``take(frame)`` each frame that arrives alone while :meth:`receive` waits; ``None``: stop.

        Only transports fed by an input callback offer frames (:class:`~acpio.transports.AgentProcess`);
        the others keep ``take`` and never call it. ``take`` runs in that callback, outside any task:
        it returns ``True`` when it consumed the frame, which :meth:`receive` then never returns.
        """
        self._take_lone = take

    def watch_incoming(self, observer: Callable[[bytes | OversizedFrame], None] | None) -> None:
        """Show ``observer(frame)`` each incoming frame as it is read, until called with ``None``.

        For a short look (what an agent prints before it answers ``initialize``) that keeps the
        transport's fast paths, which a :class:`~acpio.transports.Tap` around it would hide for its
        whole life. While watching, no lone frame is offered (:meth:`take_lone_frames`): each one is
        read, and shown, in order. An observer that raises is logged and the frame goes on.
        """
        self._watch = observer

    def _show(self, frames: list[bytes | OversizedFrame]) -> None:
        watch = self._watch
        assert watch is not None
        for frame in frames:
            try:
                watch(frame)
            except Exception:
                logger.exception("The watch of %r failed on an incoming frame", self)

    def offer_lone_frame(self, data: bytes) -> bool:
        """Offer ``data``, a chunk just read, to ``take`` if it is one whole frame and nothing is pending.

        For subclasses fed by an input callback: called there, while nothing fed before is unread.
        A chunk with anything else (part of a line, a second frame, a line over the limit) is not
        offered: :meth:`receive` returns it in order.
        """
        take = self._take_lone
        if take is None or self._watch is not None or not self._waiting or self._frames:
            return False
        if not self._splitter.empty:
            return False
        if data.find(b"\n") != len(data) - 1:
            return False
        frame = data[:-2] if data.endswith(b"\r\n") else data[:-1]
        if not frame or len(frame) > self._splitter.max_line or frame.isspace() or not take(frame):
            return False
        self._writer.wrote_lone_frame = False  # new input: its answer may go out at once
        return True

    def _read_failed(self, exc: BaseException) -> TransportError:
        """The error raised when reading fails; subclasses add what they know (an exit code)."""
        return TransportError(
            f"Reading from {self._label} failed: {exc or type(exc).__name__}. "
            "The peer closed the connection abruptly or crashed; check that it is still running."
        )

    def _write_failed(self, exc: BaseException) -> TransportError:
        """The error stored when writing fails; subclasses add what they know."""
        return TransportError(
            f"Writing to {self._label} failed: {exc or type(exc).__name__}. "
            "The peer stopped reading (it exited or closed the connection)."
        )

    async def _on_end_of_input(self) -> None:
        """Called once when the input ends cleanly; a subclass may raise instead (a crashed child)."""

    # -- sending ---------------------------------------------------------------------------

    def send(self, frame: bytes) -> None:
        """Queue one frame (a single line of compact JSON, without the newline); never blocks.

        Raises :class:`~acpio.ConnectionClosed` after :meth:`aclose` or after a write failed, and
        ``ValueError`` if the frame contains a newline.
        """
        self._writer.send(frame)

    async def drain(self) -> None:
        """Wait until every frame queued before this call has been written.

        Frames queued after the call do not delay it, however fast other senders go.
        Raises :class:`~acpio.TransportError` if a write failed (the peer went away).
        """
        await self._writer.drain()

    # -- closing ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Write what is queued (waiting at most ``close_timeout`` seconds), then close.

        Further sends raise :class:`~acpio.ConnectionClosed`; calling ``aclose`` again does nothing.
        """
        if self._closed:
            return
        self._closed = True
        try:
            await self._writer.finish(self._close_timeout, self._unwritten)
        finally:
            await self._release()

    def _unwritten(self) -> int:
        """Bytes queued but not yet written (a subclass adds what its own buffers hold)."""
        return self._writer.queued

    async def _release(self) -> None:
        """Release the underlying resources once writing is over."""
        if self._close is not None:
            with contextlib.suppress(OSError):
                await self._close()


# The most bytes handed to an asyncio stream at once (it copies what the peer does not take at once).
_WRITE_SLICE = 1024 * 1024


def _open_pipe_fd(transport: asyncio.WriteTransport) -> int | None:
    """The descriptor of the pipe ``transport`` writes to; ``None`` for a socket or a pipe already closed.

    A peer that exits at once (a program that is no agent) may be gone before its streams are
    wrapped: the transport is then closing, its pipe closed (``fileno()`` would raise), and the
    writer task reports the failed write as it should.
    """
    pipe = transport.get_extra_info("pipe")
    if pipe is None or transport.is_closing():
        return None
    fd: int = pipe.fileno()
    return fd


class ByteStreams(Lines):
    """A transport over an asyncio ``StreamReader`` and ``StreamWriter`` (a socket, a pipe pair).

    Frames are newline-delimited; writes are batched and awaited with ``writer.drain()``.
    :meth:`aclose` flushes, then closes the writer and, when the reader has a transport of its own
    (a read pipe beside a write pipe), that one too: the peer's writes then fail instead of piling up
    unread. For a socket, closing the writer ends both directions.
    """

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        *,
        max_line: int = DEFAULT_MAX_LINE,
        label: str = "peer",
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        self._reader = reader
        self._stream_writer = writer
        # A pipe's descriptor, written directly while asyncio's buffer is empty (as the pipe transport
        # itself does): a lone answer then goes out in send(), without waiting for the writer task.
        self._pipe_fd: int | None = _open_pipe_fd(writer.transport)
        super().__init__(
            self._read_chunk,
            self._write_all,
            write_nowait=self._write_pipe_nowait if self._pipe_fd is not None else None,
            max_line=max_line,
            label=label,
            close_timeout=close_timeout,
        )

    async def _read_chunk(self) -> bytes:
        return await self._reader.read(READ_SIZE)

    async def _write_all(self, data: bytes) -> None:
        writer = self._stream_writer
        if writer.is_closing():
            raise ConnectionResetError("the stream is closed")
        if len(data) <= _WRITE_SLICE:
            writer.write(data)
            await writer.drain()
            return
        # In slices: the stream copies what the peer does not read at once, so a whole 50 MB frame
        # would be held twice.
        view = memoryview(data)
        for start in range(0, len(view), _WRITE_SLICE):
            if writer.is_closing():
                raise ConnectionResetError("the stream is closed")
            writer.write(view[start : start + _WRITE_SLICE])
            await writer.drain()

    def _write_pipe_nowait(self, data: bytes) -> int:
        transport = self._stream_writer.transport
        if self._pipe_fd is None or transport.is_closing() or transport.get_write_buffer_size():
            return 0  # what asyncio holds goes first: the writer task waits for it
        try:
            return os.write(self._pipe_fd, data)
        except (BlockingIOError, InterruptedError):
            return 0

    def _unwritten(self) -> int:
        return super()._unwritten() + self._stream_writer.transport.get_write_buffer_size()

    async def _release(self) -> None:
        writer = self._stream_writer
        if self._writer.timed_out:
            writer.transport.abort()  # a plain close would wait for the peer to read the rest
        else:
            writer.close()
        # asyncio gives no public way to the reader's transport; StreamReaderProtocol sets this one.
        read_transport = getattr(self._reader, "_transport", None)
        if isinstance(read_transport, asyncio.BaseTransport) and read_transport is not writer.transport:
            read_transport.close()
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(self._close_timeout):
                await writer.wait_closed()
