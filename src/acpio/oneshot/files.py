"""The agent's file reads and writes (``fs/read_text_file``, ``fs/write_text_file``), confined to one tree.

:class:`ConfinedFiles` serves both methods for paths inside its root (``acpio prompt --cwd``) and
refuses everything else with an error the agent receives. A path is checked after resolving
symbolic links and ``..`` components, so neither ``/root/../etc/passwd`` nor a link inside the root
pointing out of it gets through. The refusal is ``-32602`` with a message naming the path and the
root, so an agent (and the person reading its tool call) sees what happened::

    files = ConfinedFiles("/home/me/project")
    files.read(ReadTextFileRequest(session_id="s", path="/etc/passwd"))
    # InvalidParams: -32602 Refused to read /etc/passwd: it is outside /home/me/project, the only
    # directory this client lets the agent use (acpio prompt --cwd)

Files are read and written as UTF-8 with line endings kept as they are. The methods are plain
functions (no asyncio): reads and writes of text files are short, and doing them in the order the
agent asked keeps a write followed by a read consistent.
"""

from __future__ import annotations

import os
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

#: The largest file :meth:`ConfinedFiles.read` returns (bytes); a larger one is refused with -32602.
MAX_FILE_SIZE: Final = 16 * 1024 * 1024


class ConfinedFiles:
    """Reads and writes text files for the agent, inside ``root`` only.

    ``root`` is resolved once (symbolic links followed); it must be an existing directory.
    Every method raises a :class:`~acpio.RequestError` for the agent when it cannot do what was
    asked: ``-32602`` for a path outside the root, a relative path, a directory or a file that is
    not UTF-8 text; ``-32002`` for a file that does not exist; ``-32603`` for any other failure of
    the operating system (permission denied...), with its reason in the message.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        resolved = Path(os.path.realpath(root))
        if not resolved.is_dir():
            raise ValueError(f"The root of the agent's file access must be a directory; {root!s} is not one")
        self._root = resolved

    def __repr__(self) -> str:
        return f"ConfinedFiles({str(self._root)!r})"

    @property
    def root(self) -> Path:
        """The directory the agent may read and write in (symbolic links resolved)."""
        return self._root

    def resolve(self, path: str, verb: str = "use") -> Path:
        """``path`` with links and ``..`` resolved, if it lies inside the root; else the refusal.

        ``verb`` ("read", "write") words the error. Raises :class:`~acpio.InvalidParams` for a
        relative path or one outside the root.
        """
        if not os.path.isabs(path):
            raise InvalidParams(
                {"path": path},
                message=f"Refused to {verb} {path!r}: ACP requires an absolute path "
                f"(relative paths are resolved by the agent, against the session's cwd {self._root})",
            )
        resolved = Path(os.path.realpath(path))
        if resolved != self._root and not resolved.is_relative_to(self._root):
            via = "" if os.path.normpath(path) == str(resolved) else f" (it resolves to {resolved})"
            raise InvalidParams(
                {"path": path, "root": str(self._root)},
                message=f"Refused to {verb} {path}{via}: it is outside {self._root}, the only directory "
                "this client lets the agent use (acpio prompt --cwd)",
            )
        return resolved

    def read(self, request: ReadTextFileRequest) -> ReadTextFileResponse:
        """Answer ``fs/read_text_file``: the file's text, or the lines ``line`` .. ``line + limit - 1``.

        ``line`` is 1-based (0 is taken as 1); a ``line`` past the end gives empty text.
        """
        path = self.resolve(request.path, "read")
        try:
            size = path.stat().st_size
            if path.is_dir():
                raise InvalidParams(
                    {"path": request.path}, message=f"Cannot read {request.path}: it is a directory"
                )
            if size > MAX_FILE_SIZE:
                raise InvalidParams(
                    {"path": request.path, "size": size},
                    message=f"Cannot read {request.path}: it has {size} bytes, and this client reads text "
                    f"files of up to {MAX_FILE_SIZE} bytes; ask for fewer lines of a smaller file",
                )
            data = path.read_bytes()
        except OSError as exc:
            raise _os_error("read", request.path, exc) from exc
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidParams(
                {"path": request.path},
                message=f"Cannot read {request.path}: not UTF-8 text (invalid byte at offset {exc.start})",
            ) from exc
        return ReadTextFileResponse(content=select_lines(text, request.line, request.limit))

    def write(self, request: WriteTextFileRequest) -> WriteTextFileResponse:
        """Answer ``fs/write_text_file``: replace the file's text, creating it (and its directories)."""
        path = self.resolve(request.path, "write")
        try:
            data = request.content.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidParams(
                {"path": request.path},
                message=f"Cannot write {request.path}: the content is not valid Unicode text ({exc.reason})",
            ) from exc
        try:
            if path.is_dir():
                raise InvalidParams(
                    {"path": request.path}, message=f"Cannot write {request.path}: it is a directory"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        except OSError as exc:
            raise _os_error("write", request.path, exc) from exc
        return WriteTextFileResponse()


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


def _os_error(verb: str, path: str, exc: OSError) -> RequestError:
    if isinstance(exc, FileNotFoundError) and verb == "read":
        return ResourceNotFound({"path": path}, message=f"Cannot read {path}: no such file")
    if isinstance(exc, NotADirectoryError):
        return InvalidParams(
            {"path": path}, message=f"Cannot {verb} {path}: a part of the path is not a directory"
        )
    reason = exc.strerror or type(exc).__name__
    return InternalError({"path": path}, message=f"Cannot {verb} {path}: {reason}")
