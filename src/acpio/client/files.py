"""The agent's file reads and writes (``fs/read_text_file``, ``fs/write_text_file``), confined to one tree.

:class:`ConfinedFiles` serves both methods for paths inside its root and refuses everything else
with an error the agent receives. The refusal is ``-32602`` with a message naming the path and the
root, so an agent (and the person reading its tool call) sees what happened::

    files = ConfinedFiles("/home/me/project", set_by="acpio prompt --cwd")
    files.read(ReadTextFileRequest(session_id="s", path="/etc/passwd"))
    # InvalidParams: -32602 Refused to read /etc/passwd: it is outside /home/me/project, the only
    # directory this client lets the agent use (set by acpio prompt --cwd)

It answers the agent for ``acpio prompt`` (rooted at ``--cwd``) and for
:meth:`ActiveSession.read_to_string(files=root) <acpio.session.ActiveSession.read_to_string>`.

How the confinement holds, even against another process changing the tree meanwhile:

* Checking a path and then opening it would leave a window in which a directory of the path can
  be swapped for a symbolic link to the outside. So the file is opened *relative to a descriptor
  of the root*, one component at a time, never following a link implicitly (``O_NOFOLLOW`` with
  ``dir_fd``): a symbolic link met on the way is read and resolved here, and a link or a ``..``
  that would leave the root is refused. Links that stay inside the root work as usual. A write's
  missing directories are created the same way.
* Only regular files are read or written: the file is opened non-blocking and checked with
  ``fstat`` before anything is read, so a FIFO, a device (``/dev/zero``), or a socket is refused
  at once instead of hanging or filling memory.
* Files over ``max_file_size`` bytes (default :data:`MAX_FILE_SIZE`, 16 MiB) are neither read nor
  written; no more than that is ever read, even from a file that grows meanwhile.

Files are read and written as UTF-8 with line endings kept as they are. A write replaces the
content of an existing file in place (its permissions stay). The methods are plain functions (no
asyncio): reads and writes of bounded regular files are short, and doing them in the order the
agent asked keeps a write followed by a read consistent.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from pathlib import Path
from typing import Final

from acpio.errors import InternalError, InvalidParams, RequestError, ResourceNotFound
from acpio.schema import (
    ReadTextFileRequest,
    ReadTextFileResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)

__all__ = ["MAX_FILE_SIZE", "ConfinedFiles", "select_lines"]

#: The largest file :class:`ConfinedFiles` reads or writes by default (bytes); larger ones are refused.
MAX_FILE_SIZE: Final = 16 * 1024 * 1024

#: Symbolic links followed while opening one path, as the kernel allows (``ELOOP`` beyond).
_MAX_LINKS: Final = 40
#: Steps of one walk (components, links, directories created) before it gives up: a bound on races.
_MAX_STEPS: Final = 4096
#: How a directory on the way is opened: never through a link, only to serve as ``dir_fd``.
_DIR_FLAGS: Final = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
#: Flags of the file itself, besides ``O_NOFOLLOW``: non-blocking, so that a FIFO cannot hang the open.
_READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK: Final = 1024 * 1024


class _Escape(Exception):
    """The walk would leave the root (through ``..`` or a symbolic link)."""


class ConfinedFiles:
    """Reads and writes text files for the agent, inside ``root`` only.

    ``root`` is resolved once (symbolic links followed); it must be an existing directory.
    Every method raises a :class:`~acpio.RequestError` for the agent when it cannot do what was
    asked: ``-32602`` for a path outside the root, a relative path, a directory, something that is
    not a regular file (a FIFO, a device, a socket), a file over ``max_file_size`` bytes or one that
    is not UTF-8 text; ``-32002`` for a file that does not exist; ``-32603`` for any other failure
    of the operating system (permission denied...), with its reason in the message. ``set_by``
    names what chose the root (``"acpio prompt --cwd"``), for the refusals to say where to change it.
    """

    def __init__(
        self, root: str | os.PathLike[str], *, max_file_size: int = MAX_FILE_SIZE, set_by: str | None = None
    ) -> None:
        resolved = Path(os.path.realpath(root))
        if not resolved.is_dir():
            raise ValueError(f"The root of the agent's file access must be a directory; {root!s} is not one")
        if max_file_size < 0:
            raise ValueError(f"The largest file size cannot be negative, got {max_file_size}")
        self._root = resolved
        self._max_size = max_file_size
        self._set_by = f" (set by {set_by})" if set_by else ""

    def __repr__(self) -> str:
        return f"ConfinedFiles({str(self._root)!r})"

    @property
    def root(self) -> Path:
        """The directory the agent may read and write in (symbolic links resolved)."""
        return self._root

    @property
    def max_file_size(self) -> int:
        """The largest file, in bytes, read or written; a larger one is refused."""
        return self._max_size

    def resolve(self, path: str, verb: str = "use") -> Path:
        """``path`` with links and ``..`` resolved, if it lies inside the root; else the refusal.

        ``verb`` ("read", "write") words the error. Raises :class:`~acpio.InvalidParams` for a
        relative path or one outside the root. This is a check at one moment: to open a file,
        :meth:`read` and :meth:`write` walk the path again from a descriptor of the root, which no
        change of the tree made meanwhile can lead out of it.
        """
        if not os.path.isabs(path):
            raise InvalidParams(
                {"path": path},
                message=f"Refused to {verb} {path!r}: ACP requires an absolute path "
                f"(relative paths are resolved by the agent, against the session's cwd {self._root})",
            )
        try:
            resolved = Path(os.path.realpath(path))
        except OSError as exc:  # the path changed while it was resolved
            raise _os_error(verb, path, exc) from exc
        if resolved != self._root and not resolved.is_relative_to(self._root):
            via = "" if os.path.normpath(path) == str(resolved) else f" (it resolves to {resolved})"
            raise InvalidParams(
                {"path": path, "root": str(self._root)},
                message=f"Refused to {verb} {path}{via}: it is outside {self._root}, the only directory "
                f"this client lets the agent use{self._set_by}",
            )
        return resolved

    def read(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        """Answer ``fs/read_text_file``: the file's text, or the lines ``line`` .. ``line + limit - 1``.

        ``line`` is 1-based (0 is taken as 1); a ``line`` past the end gives empty text.
        """
        path = request.path
        self.resolve(path, "read")
        try:
            fd = self._open(path, "read", _READ_FLAGS)
            try:
                self._check_regular(os.fstat(fd), path, "read")
                data = self._read_bounded(fd, path)
            finally:
                os.close(fd)
        except OSError as exc:
            raise _os_error("read", path, exc) from exc
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidParams(
                {"path": path},
                message=f"Cannot read {path}: not UTF-8 text (invalid byte at offset {exc.start})",
            ) from exc
        return ReadTextFileResponse(content=select_lines(text, request.line, request.limit))

    def write(self, request: WriteTextFileRequest) -> WriteTextFileResponse:
        """Answer ``fs/write_text_file``: replace the file's text, creating it (and its directories)."""
        path = request.path
        self.resolve(path, "write")
        try:
            data = request.content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidParams(
                {"path": path},
                message=f"Cannot write {path}: the content is not valid Unicode text ({exc.reason})",
            ) from exc
        if len(data) > self._max_size:
            raise self._too_large(path, "write", len(data))
        try:
            fd = self._open(path, "write", _WRITE_FLAGS, make_dirs=True)
            try:
                self._check_regular(os.fstat(fd), path, "write")
                os.ftruncate(fd, 0)
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
        except OSError as exc:
            raise _os_error("write", path, exc) from exc
        return WriteTextFileResponse()

    # --- opening inside the root -----------------------------------------------------------------

    def _open(self, path: str, verb: str, flags: int, *, make_dirs: bool = False) -> int:
        """Open ``path`` with ``flags`` without ever leaving the root; the refusal if it would."""
        try:
            return self._walk(self._inside(path), flags, make_dirs)
        except _Escape:
            raise InvalidParams(
                {"path": path, "root": str(self._root)},
                message=f"Refused to {verb} {path}: it leads out of {self._root} (through a symbolic link "
                f"or '..'), the only directory this client lets the agent use{self._set_by}",
            ) from None

    def _inside(self, path: str) -> list[str]:
        """The components of absolute ``path`` that follow the root: after its longest prefix naming it.

        The prefix may reach the root through links outside it (a root given through a link); what
        follows is walked from the root's descriptor. Raises :class:`_Escape` when no prefix is the root.
        """
        parts = path.split("/")
        for end in range(len(parts), 0, -1):
            prefix = "/".join(parts[:end]) or "/"
            with contextlib.suppress(OSError):  # a prefix that changes meanwhile does not name the root
                if os.path.realpath(prefix) == str(self._root):
                    return parts[end:]
        raise _Escape

    def _walk(self, parts: list[str], flags: int, make_dirs: bool) -> int:
        """Open ``parts`` (relative to the root) one by one from the root's descriptor; the file's fd.

        No component is opened through a symbolic link (``O_NOFOLLOW``): a link is read and its
        target walked instead, from the root when it is absolute; ``..`` goes back to the directory
        walked before. Leaving the root raises :class:`_Escape`. With ``make_dirs``, missing
        directories are created on the way.
        """
        pending = deque(part for part in parts if part not in ("", "."))
        stack = [os.open(self._root, _DIR_FLAGS)]
        links = steps = 0
        try:
            while pending:
                steps += 1
                if steps > _MAX_STEPS:
                    raise OSError(errno.ELOOP, "the path kept changing while it was opened")
                name = pending.popleft()
                if name == "..":
                    if len(stack) == 1:
                        raise _Escape
                    os.close(stack.pop())
                    continue
                last = not pending
                try:
                    if last:
                        return os.open(name, flags | os.O_NOFOLLOW, 0o666, dir_fd=stack[-1])
                    stack.append(os.open(name, _DIR_FLAGS, dir_fd=stack[-1]))
                    continue
                except FileNotFoundError:
                    if last or not make_dirs:
                        raise
                    with contextlib.suppress(FileExistsError):  # made meanwhile (perhaps as a link)
                        os.mkdir(name, 0o777, dir_fd=stack[-1])
                    pending.appendleft(name)
                    continue
                except OSError as exc:
                    try:
                        target = os.readlink(name, dir_fd=stack[-1])
                    except OSError:
                        raise exc from None
                links += 1
                if links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
                if target.startswith("/"):
                    target_parts = self._inside(target)
                    while len(stack) > 1:
                        os.close(stack.pop())
                else:
                    target_parts = target.split("/")
                pending.extendleft(reversed([part for part in target_parts if part not in ("", ".")]))
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        finally:
            for fd in stack:
                os.close(fd)

    def _check_regular(self, status: os.stat_result, path: str, verb: str) -> None:
        mode = status.st_mode
        if stat.S_ISDIR(mode):
            raise InvalidParams({"path": path}, message=f"Cannot {verb} {path}: it is a directory")
        if not stat.S_ISREG(mode):
            raise InvalidParams(
                {"path": path},
                message=f"Cannot {verb} {path}: it is {_file_kind(mode)}, not a regular file; this client "
                "reads and writes regular files only",
            )
        if verb == "read" and status.st_size > self._max_size:
            raise self._too_large(path, verb, status.st_size)

    def _read_bounded(self, fd: int, path: str) -> bytes:
        """The file's bytes, reading no more than one byte past the limit (it may grow meanwhile)."""
        chunks: list[bytes] = []
        size = 0
        while size <= self._max_size:
            chunk = os.read(fd, min(_CHUNK, self._max_size + 1 - size))
            if not chunk:
                return b"".join(chunks)
            chunks.append(chunk)
            size += len(chunk)
        raise self._too_large(path, "read", size, grew=True)

    def _too_large(self, path: str, verb: str, size: int, *, grew: bool = False) -> InvalidParams:
        has = f"it has more than {self._max_size} bytes" if grew else f"it has {size} bytes"
        if verb == "write":
            has = f"the content has {size} bytes"
        return InvalidParams(
            {"path": path, "size": size, "limit": self._max_size},
            message=f"Cannot {verb} {path}: {has}, and this client reads and writes text files of up to "
            f"{self._max_size} bytes" + ("; ask for fewer lines of a smaller file" if verb == "read" else ""),
        )


def select_lines(text: str, line: int | None, limit: int | None) -> str:
    r"""The part of ``text`` from 1-based ``line`` on, at most ``limit`` lines, line endings kept.

    Lines end at ``\n`` (a ``\r\n`` ending is kept whole). ``None`` means from the start / to the end.
    """
    if line is None and limit is None:
        return text
    start = max(line or 1, 1) - 1
    pieces = text.split("\n")
    stop = len(pieces) if limit is None else min(start + limit, len(pieces))
    if start >= stop:
        return ""
    selected = "\n".join(pieces[start:stop])
    return selected + "\n" if stop < len(pieces) else selected


def _file_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a special file"


def _os_error(verb: str, path: str, exc: OSError) -> RequestError:
    if isinstance(exc, FileNotFoundError) and verb == "read":
        return ResourceNotFound({"path": path}, message=f"Cannot read {path}: no such file")
    if isinstance(exc, IsADirectoryError):
        return InvalidParams({"path": path}, message=f"Cannot {verb} {path}: it is a directory")
    if isinstance(exc, NotADirectoryError):
        return InvalidParams(
            {"path": path}, message=f"Cannot {verb} {path}: a part of the path is not a directory"
        )
    if exc.errno in (errno.ENXIO, errno.ENODEV, errno.EOPNOTSUPP):  # a FIFO without reader, a socket
        return InvalidParams(
            {"path": path},
            message=f"Cannot {verb} {path}: it is not a regular file; this client reads and writes "
            "regular files only",
        )
    reason = exc.strerror or type(exc).__name__
    return InternalError({"path": path}, message=f"Cannot {verb} {path}: {reason}")
