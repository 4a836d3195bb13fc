"""Noticing that an agent's files changed, by polling their modification times (no dependency)."""

from __future__ import annotations

import asyncio
import fnmatch
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["FileWatcher"]

#: Directories never looked into: caches, virtual environments, version control.
_SKIPPED = frozenset(("__pycache__", "node_modules", ".git", ".venv", "venv", ".mypy_cache", ".ruff_cache"))

_Snapshot = dict[str, tuple[int, int]]


class FileWatcher:
    """Watches files and directories (recursively) for files matching ``patterns`` that change.

    A change is a file added, removed, or written (its modification time or size moved). It polls
    every ``interval`` seconds, and reports a change once the files have been still for one more
    poll (an editor's save is often several writes).
    """

    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]],
        *,
        patterns: Sequence[str] = ("*.py",),
        interval: float = 0.25,
    ) -> None:
        self.paths = [Path(p) for p in paths]
        self.patterns = tuple(patterns)
        self.interval = interval
        self._last = self.snapshot()

    def __repr__(self) -> str:
        return f"FileWatcher({[str(p) for p in self.paths]!r}, patterns={self.patterns!r})"

    def snapshot(self) -> _Snapshot:
        """The modification time and size of every watched file, by path."""
        found: _Snapshot = {}
        for path in self.paths:
            if path.is_dir():
                self._scan(str(path), found)
            else:
                self._add(str(path), found)
        return found

    def _scan(self, directory: str, found: _Snapshot) -> None:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in _SKIPPED and not entry.name.startswith("."):
                    self._scan(entry.path, found)
            elif any(fnmatch.fnmatch(entry.name, p) for p in self.patterns):
                self._add(entry.path, found)

    @staticmethod
    def _add(path: str, found: _Snapshot) -> None:
        try:
            status = os.stat(path)
        except OSError:
            return
        found[path] = (status.st_mtime_ns, status.st_size)

    async def wait_changed(self) -> list[str]:
        """Wait until a watched file changes, then until the files are still; the paths that changed."""
        while True:
            await asyncio.sleep(self.interval)
            now = self.snapshot()
            if now == self._last:
                continue
            while True:  # settled: one more poll with nothing new
                await asyncio.sleep(self.interval)
                later = self.snapshot()
                if later == now:
                    break
                now = later
            changed = sorted(p for p in now.keys() | self._last.keys() if now.get(p) != self._last.get(p))
            self._last = now
            return changed
