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
* A path of more than :data:`MAX_PATH_COMPONENTS` components is refused at once; the work on a
  path is linear in its length (the components up to the root are opened twice, the others once).

Files are read and written as UTF-8 with line endings kept as they are. A write replaces the
content of an existing file in place (its permissions stay). The methods are plain blocking
functions (no asyncio): a client that serves an event loop runs them in a thread
(``await asyncio.to_thread(files.read, request)``), one after the other, so that a write followed
by a read stays consistent.
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

__all__ = ["MAX_FILE_SIZE", "MAX_PATH_COMPONENTS", "ConfinedFiles", "select_lines"]

#: The largest file :class:`ConfinedFiles` reads or writes by default (bytes); larger ones are refused.
MAX_FILE_SIZE: Final = 16 * 1024 * 1024

#: The most components (the names between slashes) a path may have; a longer one is refused at once.
#: Linux takes paths of up to 4096 bytes, so 2048 components at most; no real tree is half that deep.
MAX_PATH_COMPONENTS: Final = 1024
#: Characters of a refused path shown in the refusal (the path may be kilobytes long).
_SHOWN_PATH: Final = 120

#: Symbolic links followed while opening one path, as the kernel allows (``ELOOP`` beyond).
_MAX_LINKS: Final = 40
#: Steps of one walk (components, links, directories created) before it gives up: a bound on races.
_MAX_STEPS: Final = 4096
#: How a directory is opened to serve as ``dir_fd``: the walk inside the root never follows a link.
_SEEK_FLAGS: Final = os.O_DIRECTORY | os.O_CLOEXEC | getattr(os, "O_PATH", os.O_RDONLY)
_DIR_FLAGS: Final = _SEEK_FLAGS | os.O_NOFOLLOW
#: Flags of the file itself, besides ``O_NOFOLLOW``: non-blocking, so that a FIFO cannot hang the open.
_READ_FLAGS: Final = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_WRITE_FLAGS: Final = os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_CHUNK: Final = 1024 * 1024


class _Escape(Exception):
    """The walk would leave the root: ``how`` says what leads out (``'..'``, or which symbolic link)."""

    def __init__(self, how: str | None = None) -> None:
        super().__init__(how)
        self.how = how


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
        self._set_by = f" (set by {set_by})" if set_by else ""
        if not resolved.is_dir():
            raise ValueError(
                f"The root of the agent's file access{self._set_by} must be an existing directory; "
                f"{root!s} is not one: create it first, or give a directory that exists"
            )
        if max_file_size < 0:
            raise ValueError(f"The largest file size cannot be negative, got {max_file_size}")
        self._root = resolved
        self._max_size = max_file_size

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
        """Where ``path`` leads, links and ``..`` resolved, if that is inside the root; else the refusal.

        ``verb`` ("run a command in") words the errors. ``path`` must name an existing directory
        (through links or not). Raises :class:`~acpio.InvalidParams` for a relative path, one of more
        than :data:`MAX_PATH_COMPONENTS` components, or one leading outside the root, and the
        errors of :meth:`read` for one that cannot be followed (``-32002`` for a missing component).
        The path is walked like :meth:`read` walks it, from a descriptor of the root; what it names
        may change afterwards, so to open a file, use :meth:`read` and :meth:`write`.
        """
        try:
            fd, names = self._open(path, verb, None)
        except OSError as exc:
            raise _os_error(verb, path, exc) from exc
        os.close(fd)
        return self._root.joinpath(*names)

    def read(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        """Answer ``fs/read_text_file``: the file's text, or the lines ``line`` .. ``line + limit - 1``.

        ``line`` is 1-based (0 is taken as 1); a ``line`` past the end gives empty text.
        """
        path = request.path
        try:
            fd, _ = self._open(path, "read", _READ_FLAGS)
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
        self._check_path(path, "write")
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
            fd, _ = self._open(path, "write", _WRITE_FLAGS, make_dirs=True)
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

    def _check_path(self, path: str, verb: str) -> None:
        """Refuse (``-32602``) a relative path, or one of more than :data:`MAX_PATH_COMPONENTS` components."""
        if not os.path.isabs(path):
            raise InvalidParams(
                {"path": path},
                message=f"Refused to {verb} {_shown(path)!r}: ACP requires an absolute path "
                f"(relative paths are resolved by the agent, against the session's cwd {self._root})",
            )
        components = path.count("/")
        if components > MAX_PATH_COMPONENTS:
            raise InvalidParams(
                {"path": path, "components": components, "limit": MAX_PATH_COMPONENTS},
                message=f"Refused to {verb} {_shown(path)}: it has {components} components, and this client "
                f"follows paths of up to {MAX_PATH_COMPONENTS} components; ask for a shorter path",
            )

    def _open(
        self, path: str, verb: str, flags: int | None, *, make_dirs: bool = False
    ) -> tuple[int, list[str]]:
        """Open ``path`` without ever leaving the root: its descriptor and its names below the root.

        With ``flags`` ``None``, ``path`` must name a directory (opened to serve as ``dir_fd``).
        Raises the refusal for a path :meth:`_check_path` refuses or one leading outside the root.
        """
        self._check_path(path, verb)
        try:
            parts = self._inside(path)
        except _Escape:
            raise InvalidParams(
                {"path": path, "root": str(self._root)},
                message=f"Refused to {verb} {_shown(path)}: it is outside {self._root}, the only "
                f"directory this client lets the agent use{self._set_by}",
            ) from None
        try:
            return self._walk(parts, flags, make_dirs)
        except _Escape as escape:
            raise InvalidParams(
                {"path": path, "root": str(self._root)},
                message=f"Refused to {verb} {_shown(path)}: {escape.how or 'it'} leads outside {self._root}, "
                f"the only directory this client lets the agent use{self._set_by}",
            ) from None

    def _inside(self, path: str) -> list[str]:
        """The components of absolute ``path`` that follow the root: after the first prefix naming it.

        The prefix may reach the root through links outside it (a root given through a link). The
        prefixes are opened in one pass from ``/``, following links as the system does, until one
        is the root (compared by identity); what follows is walked from the root's descriptor.
        Raises :class:`_Escape` when no prefix is the root.
        """
        root = os.stat(self._root)
        parts = path.split("/")
        fd = os.open("/", _SEEK_FLAGS)
        try:
            for end in range(1, len(parts) + 1):
                if end > 1 and parts[end - 1] not in ("", "."):
                    try:
                        step = os.open(parts[end - 1], _SEEK_FLAGS, dir_fd=fd)
                    except OSError:  # missing, not a directory, or changed meanwhile: not the root
                        break
                    os.close(fd)
                    fd = step
                status = os.fstat(fd)
                if (status.st_dev, status.st_ino) == (root.st_dev, root.st_ino):
                    return parts[end:]
        finally:
            os.close(fd)
        raise _Escape

    def _walk(self, parts: list[str], flags: int | None, make_dirs: bool) -> tuple[int, list[str]]:
        """Open ``parts`` (relative to the root) one by one from the root's descriptor.

        Returns the descriptor of the file (opened with ``flags``; with ``None``, of the directory
        they name) and the names of the directories and file walked, from the root. No component is
        opened through a symbolic link (``O_NOFOLLOW``): a link is read and its target walked
        instead, from the root when it is absolute; ``..`` goes back to the directory walked before.
        Leaving the root raises :class:`_Escape`. With ``make_dirs``, missing directories are
        created on the way.
        """
        # Each pending name with the symbolic link it comes from (to say which one leads out).
        pending: deque[tuple[str, str | None]] = deque(
            (part, None) for part in parts if part not in ("", ".")
        )
        stack = [os.open(self._root, _DIR_FLAGS)]
        names: list[str] = []
        links = steps = 0
        try:
            while pending:
                steps += 1
                if steps > _MAX_STEPS:
                    raise OSError(errno.ELOOP, "the path kept changing while it was opened")
                name, via = pending.popleft()
                if name == "..":
                    if not names:
                        raise _Escape(f"the symbolic link {via}" if via else "its '..'")
                    os.close(stack.pop())
                    names.pop()
                    continue
                last = not pending
                try:
                    if last and flags is not None:
                        fd = os.open(name, flags | os.O_NOFOLLOW, 0o666, dir_fd=stack[-1])
                        return fd, [*names, name]
                    stack.append(os.open(name, _DIR_FLAGS, dir_fd=stack[-1]))
                    names.append(name)
                    continue
                except FileNotFoundError:
                    if last or not make_dirs:
                        raise
                    with contextlib.suppress(FileExistsError):  # made meanwhile (perhaps as a link)
                        os.mkdir(name, 0o777, dir_fd=stack[-1])
                    pending.appendleft((name, via))
                    continue
                except OSError as exc:
                    try:
                        target = os.readlink(name, dir_fd=stack[-1])
                    except OSError:
                        raise exc from None
                links += 1
                if links > _MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP))
                link = f"{self._root.joinpath(*names, name)} -> {target}"
                if target.startswith("/"):
                    try:
                        target_parts = self._inside(target)
                    except _Escape:
                        raise _Escape(f"the symbolic link {link}") from None
                    while len(stack) > 1:
                        os.close(stack.pop())
                    names.clear()
                else:
                    target_parts = target.split("/")
                pending.extendleft(reversed([(part, link) for part in target_parts if part not in ("", ".")]))
            if flags is None:
                return stack.pop(), names
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


def _shown(path: str) -> str:
    """``path``, its middle left out if it is long (the whole path is in the error's data)."""
    if len(path) <= _SHOWN_PATH:
        return path
    half = _SHOWN_PATH // 2
    return f"{path[:half]}…{path[-half:]} ({len(path)} characters)"


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
    if isinstance(exc, FileNotFoundError):
        what = "file" if verb == "read" else "file or directory"
        return ResourceNotFound({"path": path}, message=f"Cannot {verb} {_shown(path)}: no such {what}")
    if isinstance(exc, IsADirectoryError):
        return InvalidParams({"path": path}, message=f"Cannot {verb} {_shown(path)}: it is a directory")
    if isinstance(exc, NotADirectoryError):
        return InvalidParams(
            {"path": path}, message=f"Cannot {verb} {_shown(path)}: a part of the path is not a directory"
        )
    if exc.errno in (errno.ENXIO, errno.ENODEV, errno.EOPNOTSUPP):  # a FIFO without reader, a socket
        return InvalidParams(
            {"path": path},
            message=f"Cannot {verb} {_shown(path)}: it is not a regular file; this client reads and writes "
            "regular files only",
        )
    reason = exc.strerror or type(exc).__name__
    return InternalError({"path": path}, message=f"Cannot {verb} {_shown(path)}: {reason}")
