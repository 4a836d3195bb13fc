r"""Newline-delimited JSON framing, without I/O.

:class:`LineSplitter` turns byte chunks, cut anywhere, into frames (one line each, without its line
ending); :func:`encode_frame` is the way back. Nothing here reads, writes or imports asyncio, so the
rules are tested without an event loop and every byte-stream transport shares them:

* a line ends at ``\n``; a ``\r`` just before it is dropped, so ``\r\n`` works too;
* blank lines (empty, or only spaces, tabs and ``\r``) are skipped;
* a line longer than ``max_line`` bytes (whatever it holds) is reported once as an
  :class:`OversizedFrame` carrying its size and its first :data:`HEAD_SIZE` bytes, and is discarded
  while it streams past: the splitter never holds more than ``max_line + 1`` bytes of one line,
  however long the line is.
"""

from __future__ import annotations

from acpio.transports.base import OversizedFrame

__all__ = ["DEFAULT_MAX_LINE", "HEAD_SIZE", "LineSplitter", "encode_frame"]

DEFAULT_MAX_LINE = 100 * 1024 * 1024
"""The default longest line accepted: 100 MiB."""

HEAD_SIZE = 200
"""How many leading bytes of an oversized line are kept, to show in the error about it."""


def encode_frame(frame: bytes) -> bytes:
    """The bytes that put ``frame`` on the wire: the frame and a newline.

    ``frame`` must be one line (compact JSON); a newline inside it would split the message in two.
    """
    return frame + b"\n"


class LineSplitter:
    r"""Cuts a byte stream into lines: feed it chunks as they arrive, take the frames it returns.

    >>> splitter = LineSplitter()
    >>> splitter.feed(b'{"a":1}\n{"b"')
    [b'{"a":1}']
    >>> splitter.feed(b":2}\r\n\n")
    [b'{"b":2}']

    A line longer than ``max_line`` bytes (not counting its line ending) comes out as one
    :class:`OversizedFrame` when its newline arrives; its bytes are dropped as they are fed.
    """

    __slots__ = ("_buffer", "_head", "_max_line", "_skip_ends_with_cr", "_skipped", "_skipping")

    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        if max_line < 1:
            raise ValueError(f"max_line must be at least 1 byte, got {max_line}")
        self._max_line = max_line
        self._buffer = bytearray()
        # While a line longer than max_line streams past: its first bytes and how many were dropped.
        self._skipping = False
        self._head = b""
        self._skipped = 0
        self._skip_ends_with_cr = False

    @property
    def max_line(self) -> int:
        """The longest line, in bytes, that is returned as a frame."""
        return self._max_line

    @property
    def empty(self) -> bool:
        """Whether no part of a line is held (nor a long line being skipped): the next chunk starts a line."""
        return not self._buffer and not self._skipping

    @property
    def buffered(self) -> int:
        """How many bytes of an unfinished line are held (never more than ``max_line + 1``)."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes | OversizedFrame]:
        """Add a chunk of the stream; return the lines it completed, in order.

        Returns frames (``bytes``, without the line ending) and :class:`OversizedFrame` markers.
        An unfinished last line is kept for the next call.
        """
        if not data:
            return []
        parts = data.split(b"\n")
        tail = parts.pop()
        out: list[bytes | OversizedFrame] = []
        if parts:
            first = parts[0]
            if self._skipping:
                self._end_skip(first, out)
                parts[0] = b""
            elif self._buffer:
                self._buffer += first
                parts[0] = bytes(self._buffer)
                self._buffer.clear()
            max_line = self._max_line
            # Without a \r in the chunk (nor at the end of the line held from the last one), no line
            # ends with one: not checked line by line.
            crlf = data.find(b"\r") != -1 or parts[0].endswith(b"\r")  # not `in`: it tries an int first
            for line in parts:
                if crlf and line.endswith(b"\r"):
                    line = line[:-1]
                if len(line) > max_line:
                    out.append(OversizedFrame(len(line), line[:HEAD_SIZE]))
                elif line and not line.isspace():
                    out.append(line)
        if tail:
            self._keep(tail)
        return out

    def finish(self) -> bytes | OversizedFrame | None:
        """Take what is left at end of input: an unfinished line, or ``None`` if there is none.

        The unfinished line is returned as ``bytes`` (or as an :class:`OversizedFrame` if it was
        already too long) and the splitter is ready for a new stream. Byte-stream transports drop
        it: a line that never got its newline is not a message.
        """
        if self._skipping:
            rest = OversizedFrame(self._skipped, self._head)
            self._reset_skip()
            return rest
        if not self._buffer or self._buffer.isspace():
            self._buffer.clear()
            return None
        line = bytes(self._buffer)
        self._buffer.clear()
        return line

    def _keep(self, tail: bytes) -> None:
        """Hold the unfinished end of a chunk, or start skipping once the line is too long."""
        if self._skipping:
            self._skipped += len(tail)
            self._skip_ends_with_cr = tail.endswith(b"\r")
            if len(self._head) < HEAD_SIZE:
                self._head += tail[: HEAD_SIZE - len(self._head)]
            return
        held = len(self._buffer)
        # max_line + 1: the last byte may turn out to be the \r of a \r\n.
        if held + len(tail) <= self._max_line + 1:
            self._buffer += tail
            return
        self._skipping = True
        if held >= HEAD_SIZE:
            self._head = bytes(self._buffer[:HEAD_SIZE])
        else:
            self._head = bytes(self._buffer) + tail[: HEAD_SIZE - held]
        self._skipped = held + len(tail)
        self._skip_ends_with_cr = tail.endswith(b"\r")
        self._buffer.clear()

    def _end_skip(self, last_part: bytes, out: list[bytes | OversizedFrame]) -> None:
        """The newline of a skipped line arrived: report it once."""
        size = self._skipped + len(last_part)
        ends_with_cr = last_part.endswith(b"\r") if last_part else self._skip_ends_with_cr
        if ends_with_cr:
            size -= 1
        head = self._head
        if len(head) < HEAD_SIZE:
            head += last_part[: HEAD_SIZE - len(head)]
        out.append(OversizedFrame(size, head[:size]))
        self._reset_skip()

    def _reset_skip(self) -> None:
        self._skipping = False
        self._head = b""
        self._skipped = 0
        self._skip_ends_with_cr = False
