"""The stdin and stdout of this process as a transport: how an agent started by an editor talks.

Each end is handled according to what it is:

* a pipe or a socket (the usual case) is made non-blocking and watched by the event loop;
* a regular file (``agent < requests.jsonl > replies.jsonl``) is read and written directly, since
  file I/O never waits for a peer (asyncio's pipe transports refuse regular files);
* anything else, a terminal for instance, is read and written in a daemon thread, so the shared
  terminal is never switched to non-blocking mode under the feet of the shell or of ``stderr``.

Nothing but protocol reaches stdout: by default :class:`Stdio` keeps a private copy of the stdout
file descriptor for the protocol and points descriptor 1 at stderr, so a stray ``print()``, a C
library or a child process writing to "stdout" lands on stderr instead of corrupting the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import queue
import stat
import sys
import threading
from collections.abc import Callable
from typing import ClassVar, Literal, TypeVar

from acpio.transports.lines import DEFAULT_MAX_LINE
from acpio.transports.streams import DEFAULT_CLOSE_TIMEOUT, READ_SIZE, Lines

__all__ = ["Stdio"]

T = TypeVar("T")

_Mode = Literal["loop", "direct", "thread"]


class _Worker:
    """A daemon thread that runs blocking calls one at a time and hands results back to the loop.

    A daemon thread (not an executor) so that a read blocked on a terminal never holds up the
    interpreter's exit.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[
            tuple[asyncio.AbstractEventLoop, asyncio.Future[object], Callable[[], object]] | None
        ] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, call: Callable[[], T]) -> asyncio.Future[T]:
        """Start ``call()`` in the thread; the future gets its result or exception."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
            self._thread.start()
        self._jobs.put((loop, future, call))  # type: ignore[arg-type]
        return future

    def stop(self) -> None:
        """Let the thread end after its current call."""
        if self._thread is not None:
            self._jobs.put(None)

    def _run(self) -> None:
        while (job := self._jobs.get()) is not None:
            loop, future, call = job
            try:
                result = call()
            except BaseException as exc:
                _resolve_threadsafe(loop, future, None, exc)
            else:
                _resolve_threadsafe(loop, future, result, None)


def _resolve_threadsafe(
    loop: asyncio.AbstractEventLoop, future: asyncio.Future[object], result: object, exc: BaseException | None
) -> None:
    def resolve() -> None:
        if future.done():
            return
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # the loop is already closed: nobody is waiting
        loop.call_soon_threadsafe(resolve)


def _mode_for(fd: int) -> _Mode:
    st_mode = os.fstat(fd).st_mode
    if stat.S_ISFIFO(st_mode) or stat.S_ISSOCK(st_mode):
        return "loop"
    if stat.S_ISREG(st_mode):
        return "direct"
    return "thread"


class _StdioEnd:
    """Reads or writes one file descriptor without blocking the event loop (see module docstring)."""

    def __init__(self, fd: int, name: str) -> None:
        self.fd = fd
        self.mode = _mode_for(fd)
        self._restore_blocking: bool | None = None
        if self.mode == "loop":
            self._restore_blocking = os.get_blocking(fd)
            os.set_blocking(fd, False)
        self._worker = _Worker(f"acpio {name}") if self.mode == "thread" else None
        self._inflight: asyncio.Future[bytes] | None = None
        #: What a wait for the descriptor resolves: the chunk read (reads), ``None`` (writes, closing).
        self._waiter: asyncio.Future[bytes | None] | None = None
        #: The chunk the readable callback read for a wait that was cancelled before it resumed.
        self._unclaimed: bytes | None = None
        self._reading_loop: asyncio.AbstractEventLoop | None = None
        self._closed = False

    async def read(self) -> bytes:
        """The next chunk; ``b""`` at end of input or once closed."""
        if self._closed:
            return b""
        if self.mode == "direct":
            return os.read(self.fd, READ_SIZE)
        if self._worker is not None:
            # Shielded and kept across calls: a cancelled receive() never loses a chunk in flight.
            if self._inflight is None:
                self._inflight = self._worker.submit(functools.partial(os.read, self.fd, READ_SIZE))
            inflight = self._inflight
            data = await asyncio.shield(inflight)
            self._inflight = None
            return data
        return await self._read_watched()

    async def _read_watched(self) -> bytes:
        """The next chunk of a descriptor the event loop watches (a pipe, a socket)."""
        data = self._unclaimed
        if data is not None:
            self._unclaimed = None
        else:
            # What is there already is read now (the peer often wrote while this side worked);
            # otherwise the watched descriptor's callback reads it (see _on_readable).
            with contextlib.suppress(BlockingIOError):
                data = os.read(self.fd, READ_SIZE)
        if data is None:
            data = await self._wait_readable()
            if data is None:  # closed while waiting
                return b""
        if not data:
            self._stop_reading()  # end of input: the descriptor would read as ready forever
        return data

    async def write(self, data: bytes) -> None:
        """Write all of ``data``."""
        view = memoryview(data)
        fd = self.fd
        while view:
            if self._worker is not None:
                written = await self._worker.submit(functools.partial(os.write, fd, view))
            else:
                try:
                    written = os.write(fd, view)
                except BlockingIOError:
                    await self._wait_writable()
                    if self._closed:
                        raise BrokenPipeError("stdout was closed while a write was waiting") from None
                    continue
            view = view[written:]

    def write_nowait(self, data: bytes) -> int:
        """Write what the descriptor takes without waiting; the bytes written (maybe 0). Loop mode only."""
        if self._closed:
            return 0
        try:
            return os.write(self.fd, data)
        except BlockingIOError:
            return 0

    async def _wait_readable(self) -> bytes | None:
        """The next chunk, read by :meth:`_on_readable` once the descriptor is ready; ``None``: closed."""
        # The reader stays registered across waits while input keeps arriving and being read:
        # registering and removing it around every wait cost two epoll_ctl calls per message. It
        # is removed when input is ready but nobody waits for it (the loop would report it again
        # on every pass: a busy loop while a handler runs, or forever after end of input).
        loop = asyncio.get_running_loop()
        if self._reading_loop is not loop:
            self._stop_reading()
            loop.add_reader(self.fd, self._on_readable)
            self._reading_loop = loop
        waiter: asyncio.Future[bytes | None] = loop.create_future()
        self._waiter = waiter
        try:
            return await waiter
        except asyncio.CancelledError:
            # Cancelled after the callback read a chunk for it: the next read() returns that chunk.
            if waiter.done() and not waiter.cancelled() and waiter.exception() is None:
                self._unclaimed = waiter.result()
            raise
        finally:
            self._waiter = None

    def _on_readable(self) -> None:
        # Reads here, in the loop's callback: the waiting task is woken once, with the chunk (a
        # wake-up to read it would leave the descriptor ready for one more pass of the loop).
        waiter = self._waiter
        if waiter is None or waiter.done():
            self._stop_reading()
            return
        try:
            data = os.read(self.fd, READ_SIZE)
        except BlockingIOError:
            return  # not ready after all: wait on
        except OSError as exc:
            waiter.set_exception(exc)
            return
        waiter.set_result(data)

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _stop_reading(self) -> None:
        loop, self._reading_loop = self._reading_loop, None
        if loop is not None and not loop.is_closed():
            loop.remove_reader(self.fd)

    async def _wait_writable(self) -> None:
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        loop.add_writer(self.fd, self._wake)
        try:
            await waiter
        finally:
            self._waiter = None
            loop.remove_writer(self.fd)

    def close(self) -> None:
        """Wake a pending read (it returns end of input), stop the thread, restore blocking mode."""
        if self._closed:
            return
        self._closed = True
        self._stop_reading()
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)
        if self._inflight is not None and not self._inflight.done():
            self._inflight.set_result(b"")
        if self._worker is not None:
            self._worker.stop()
        if self._restore_blocking is not None:
            with contextlib.suppress(OSError):
                os.set_blocking(self.fd, self._restore_blocking)


class Stdio(Lines):
    """The stdin (frames in) and stdout (frames out) of this process, for an agent started by a client.

    Works whether each end is a pipe, a socket, a regular file or a terminal. Writes are batched
    like every :class:`~acpio.transports.streams.Lines` transport. With ``guard_stdout`` (the
    default), file descriptor 1 points at stderr while the transport is open, so nothing but
    protocol reaches the real stdout; :meth:`aclose` puts it back. Only one ``Stdio`` may be open
    at a time. POSIX only.
    """

    _open_instance: ClassVar[Stdio | None] = None

    def __init__(
        self,
        *,
        max_line: int = DEFAULT_MAX_LINE,
        guard_stdout: bool = True,
        close_timeout: float = DEFAULT_CLOSE_TIMEOUT,
    ) -> None:
        if Stdio._open_instance is not None:
            raise RuntimeError(
                "A Stdio transport is already open in this process; close it before opening another"
            )
        out_fd = 1
        self._guarded = False
        if guard_stdout:
            if sys.stdout is not None:
                with contextlib.suppress(OSError, ValueError):
                    sys.stdout.flush()
            out_fd = os.dup(1)
            try:
                os.dup2(2, 1)
                self._guarded = True
            except OSError:  # no usable stderr: keep writing to fd 1 as it is
                os.close(out_fd)
                out_fd = 1
        try:
            self._stdin = _StdioEnd(0, "stdin reader")
            try:
                self._stdout = _StdioEnd(out_fd, "stdout writer")
            except BaseException:
                self._stdin.close()
                raise
        except BaseException:
            self._restore_stdout(out_fd)
            raise
        Stdio._open_instance = self
        super().__init__(
            self._stdin.read,
            self._stdout.write,
            write_nowait=self._stdout.write_nowait if self._stdout.mode == "loop" else None,
            max_line=max_line,
            label="stdin/stdout",
            close_timeout=close_timeout,
        )

    async def _release(self) -> None:
        self._stdin.close()
        self._stdout.close()
        self._restore_stdout(self._stdout.fd)
        if Stdio._open_instance is self:
            Stdio._open_instance = None

    def _restore_stdout(self, private_fd: int) -> None:
        """Point descriptor 1 back at the real stdout (undoing ``guard_stdout``)."""
        if self._guarded:
            self._guarded = False
            with contextlib.suppress(OSError):
                os.dup2(private_fd, 1)
                os.close(private_fd)
