"""Every frame of an inspected run, kept in one SQLite file: :class:`Capture`.

The file holds three tables: ``run`` (``key``/``value``: the command, the mode, when it started),
``frames`` (one row per frame or stderr line: its number, time, sender, the trace event it draws as
and the warnings it raised) and nothing else, so ``sqlite3 run.sqlite 'select * from frames'`` reads
it. :meth:`Capture.export_trace` writes the run as a trace file that ``acpio trace view`` and
``acpio trace show`` read; ``acpio inspect --open-run FILE`` shows it in the page again.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import orjson

__all__ = ["Capture", "CapturedFrame"]

_SCHEMA = """
create table if not exists run (key text primary key, value text not null);
create table if not exists frames (
    seq integer primary key,
    ts real not null,
    sender text not null,
    event blob not null,
    findings blob not null
);
"""


@dataclass(frozen=True, slots=True)
class CapturedFrame:
    """One frame of a run: what the page shows for it."""

    seq: int
    """Its number in the run, from 0."""
    ts: float
    """Seconds since the run started."""
    sender: str
    """``"client"``, ``"agent"`` or ``"stderr"``."""
    event: bytes
    """The trace event it draws as (JSON: see ``docs/trace.md``)."""
    findings: bytes
    """The warnings it raised, a JSON list of ``{rule, title, message, spec}``."""


class Capture:
    """One run's SQLite file at ``path`` (created if missing; a run already in it is read on)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._closed = False
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            # WAL without a sync per commit: what is committed survives the inspector crashing (only
            # the machine failing can lose the last commits), and a commit costs no disk flush.
            self._db.execute("pragma journal_mode=wal")
            self._db.execute("pragma synchronous=normal")
            self._db.executescript(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise OSError(f"{self.path} is not a run file the inspector can use: {exc}") from exc

    @classmethod
    def open_existing(cls, path: str | os.PathLike[str]) -> Capture:
        """An existing run file; ``FileNotFoundError`` when there is none at ``path``."""
        if not Path(path).is_file():
            raise FileNotFoundError(f"no run file at {path}: give a file `acpio inspect --capture` wrote")
        return cls(path)

    def set_info(self, **values: str) -> None:
        """Record facts about the run (``command``, ``mode``, ``started``...)."""
        self._db.executemany("insert or replace into run values (?, ?)", values.items())
        self._db.commit()

    def info(self) -> dict[str, str]:
        """The facts recorded with :meth:`set_info`."""
        return dict(self._db.execute("select key, value from run").fetchall())

    def add(self, frame: CapturedFrame) -> None:
        """Keep one frame; it is written to the file by the next :meth:`commit` (or :meth:`close`)."""
        self._db.execute(
            "insert or replace into frames values (?, ?, ?, ?, ?)",
            (frame.seq, frame.ts, frame.sender, frame.event, frame.findings),
        )

    def commit(self) -> None:
        """Write the frames added since the last commit to the file (nothing once closed)."""
        if not self._closed:
            self._db.commit()

    def frames(self) -> Iterator[CapturedFrame]:
        """The frames of the run, in order."""
        rows = self._db.execute("select seq, ts, sender, event, findings from frames order by seq")
        for seq, ts, sender, event, findings in rows:
            yield CapturedFrame(seq, ts, sender, bytes(event), bytes(findings))

    def export_trace(self, path: str | os.PathLike[str]) -> int:
        """Write the run as a trace file (a ``lanes`` event, then one event per frame); the count written."""
        info = self.info()
        lanes = [
            {"lane": "Client", "name": info.get("client", "client")},
            {"lane": "Agent", "name": info.get("command", "agent")},
        ]
        count = 0
        with open(path, "wb") as out:
            out.write(orjson.dumps({"type": "lanes", "ts": 0.0, "lanes": lanes}) + b"\n")
            for frame in self.frames():
                out.write(frame.event + b"\n")
                count += 1
        return count

    def close(self) -> None:
        """Commit what was added, then close the file (calling it again does nothing)."""
        if not self._closed:
            self._closed = True
            self._db.commit()
            self._db.close()

    def __enter__(self) -> Capture:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
