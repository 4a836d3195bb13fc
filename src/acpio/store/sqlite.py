""":class:`SqliteStore`: sessions in one SQLite file, the embedded default (``sqlite:////absolute/path``).

The file is opened in WAL mode with a busy timeout, so two processes can share it (each write is
one short transaction); ``synchronous=NORMAL`` keeps every committed write through a crash of the
process. The updates an agent sends in one burst (without yielding to the event loop) are
committed together as soon as it yields, a session's run of them in one row, before the
transport writes them (the recorder sees each update before it is queued): a SIGKILL loses at
most the burst being written, none of which the client has.

The schema is versioned with ``PRAGMA user_version`` and migrated forward when the store opens a
file written by an older acpio; a file from a newer acpio is refused. Calls run on the event loop's
thread: each is one short statement or transaction, and histories are read a chunk at a time.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import sqlite3
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any, Final, TypeVar

import orjson

from acpio._private_files import open_private, private_directory, restrict_to_owner
from acpio.store.base import (
    DEFAULT_PAGE,
    ArchiveFilter,
    SessionPage,
    SessionRecord,
    SessionStore,
    StoreError,
    now_us,
    page_query,
)

__all__ = ["SCHEMA_VERSION", "SqliteStore", "default_sqlite_path"]

T = TypeVar("T")

#: Rows of a history read per query (a row holds one burst: at most :data:`_BURST` updates).
_CHUNK: Final = 64
#: Updates committed in one transaction at most.
_BURST: Final = 256
#: Between the updates of one burst in one row: NUL never occurs in JSON text.
_SEPARATOR: Final = b"\x00"
#: What SQLite adds to the database's name for the files it keeps beside it.
_SIDE_FILES: Final = ("-wal", "-shm", "-journal")
#: The session id and the body of a pending ``(session_id, update)``.
_SESSION: Final = itemgetter(0)
_BODY: Final = itemgetter(1)
#: How long a statement waits for another connection's write lock before it fails, in milliseconds.
_BUSY_TIMEOUT_MS: Final = 10_000
#: Seconds before committing again the updates a failed commit kept in memory (the last repeats).
_RETRY_DELAYS: Final = (0.1, 0.5, 2.0, 5.0)

_log = logging.getLogger("acpio.store")

#: The migrations, in order: applying ``MIGRATIONS[:n]`` makes schema version ``n``.
MIGRATIONS: Final[tuple[str, ...]] = (
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        additional_directories TEXT NOT NULL DEFAULT '[]',
        mcp_servers TEXT NOT NULL DEFAULT '[]',
        config TEXT NOT NULL DEFAULT '{}',
        mode TEXT,
        title TEXT,
        archived INTEGER NOT NULL DEFAULT 0,
        parent_id TEXT,
        created INTEGER NOT NULL,
        updated INTEGER NOT NULL
    );
    CREATE INDEX sessions_recent ON sessions (archived, updated DESC, id DESC);
    CREATE INDEX sessions_cwd ON sessions (cwd, updated DESC, id DESC);
    CREATE TABLE updates (
        id INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL,
        -- the JSON texts of one or more updates, in order, separated by NUL bytes
        body BLOB NOT NULL
    );
    CREATE INDEX updates_session ON updates (session_id, id);
    """,
)
#: The schema version this acpio writes.
SCHEMA_VERSION: Final = len(MIGRATIONS)

_COLUMNS: Final = (
    "id, cwd, additional_directories, mcp_servers, config, mode, title, archived, parent_id, created, updated"
)


def default_sqlite_path() -> Path:
    """Where ``sqlite:`` without a path keeps sessions: ``sessions.db`` in acpio's user data directory.

    ``$XDG_DATA_HOME/acpio`` (default ``~/.local/share/acpio``); on macOS
    ``~/Library/Application Support/acpio``; on Windows ``acpio`` in ``%LOCALAPPDATA%``.
    """
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return base / "acpio" / "sessions.db"


def _require_directory(path: Path) -> None:
    directory = path.parent
    if not directory.is_dir():
        raise StoreError(
            f"The directory {str(directory.absolute())!r} of the session database does not exist: "
            "create it, or give another path (sqlite:///relative/path.db is relative to the current "
            "directory, sqlite:////absolute/path.db is absolute)."
        )


def _create_private(path: Path, *, ours: bool) -> None:
    """The database file (and acpio's own directory), owner-only before SQLite first opens it."""
    if ours:
        private_directory(path.parent)
        _restrict(path.parent)
    else:
        _require_directory(path)
    os.close(open_private(path, os.O_RDONLY))
    for each in (path, *(path.with_name(path.name + end) for end in _SIDE_FILES)):
        _restrict(each)


def _restrict(path: Path) -> None:
    try:
        if restrict_to_owner(path):
            _log.warning("%s was readable by others: it is now readable by its owner only", path)
    except OSError as exc:
        _log.warning("%s is readable by others and cannot be made owner-only: %s", path, exc)


class SqliteStore(SessionStore):
    """A :class:`~acpio.store.SessionStore` in one SQLite file, which only its owner can read.

    The file is created if missing, with mode 0600 (SQLite gives its ``-wal``, ``-shm`` and
    ``-journal`` files the same). Its directory must exist (:class:`~acpio.store.StoreError`
    otherwise), except acpio's user data directory (the default), created with mode 0700. An
    existing file that others could read is made owner-only, and so is acpio's data directory.

    The file is opened on first use; a file that is not a SQLite database, is corrupt or cannot be
    read makes each call raise :class:`~acpio.store.StoreError` naming it.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        super().__init__()
        #: The database file.
        self.path = Path(path) if path is not None else default_sqlite_path()
        self._ours = self.path.parent == default_sqlite_path().parent
        if not self._ours:
            _require_directory(self.path)
        self._connection: sqlite3.Connection | None = None
        self._touched: dict[str, int] = {}
        self._pending: list[tuple[str, bytes]] = []
        self._commit_scheduled = False
        self._failed_commits = 0

    def __repr__(self) -> str:
        return f"<SqliteStore {str(self.path)!r}>"

    # --- the connection -----------------------------------------------------------------------------

    def _fail(self, exc: Exception) -> StoreError:
        return StoreError(
            f"The session database {str(self.path)!r} cannot be used: {exc}. If the file is corrupt or "
            "not a database, move it aside (acpio then starts a new one) or give another path "
            "(sqlite:////absolute/path/to/sessions.db)."
        )

    def _db(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        try:
            _create_private(self.path, ours=self._ours)
            db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        except (OSError, sqlite3.Error) as exc:
            raise self._fail(exc) from exc
        try:
            db.execute(f"PRAGMA busy_timeout = {_BUSY_TIMEOUT_MS}")
            _use_wal(db)
            db.execute("PRAGMA synchronous = NORMAL")
            self._migrate(db)
        except sqlite3.Error as exc:
            db.close()
            raise self._fail(exc) from exc
        self._connection = db
        return db

    def _migrate(self, db: sqlite3.Connection) -> None:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        if version == SCHEMA_VERSION:
            return
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"The session database {str(self.path)!r} has schema version {version}, newer than this "
                f"acpio's ({SCHEMA_VERSION}): upgrade acpio, or give another path."
            )
        db.execute("BEGIN IMMEDIATE")
        try:
            # Another process may have migrated while this one waited for the lock.
            version = db.execute("PRAGMA user_version").fetchone()[0]
            for script in MIGRATIONS[version:]:
                for statement in script.split(";"):
                    if statement.strip():
                        db.execute(statement)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        db = self._db()
        try:
            return work(db)
        except sqlite3.IntegrityError:
            raise
        except sqlite3.Error as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise self._fail(exc) from exc

    def _transaction(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        def run(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                for sql, args in statements:
                    db.execute(sql, args)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

        self._run(run)

    # --- records ----------------------------------------------------------------------------------

    async def get(self, session_id: str) -> SessionRecord | None:
        """The session with this id, or ``None``."""
        row = self._run(
            lambda db: db.execute(f"SELECT {_COLUMNS} FROM sessions WHERE id = ?", (session_id,)).fetchone()
        )
        return None if row is None else _record(row)

    async def list(
        self,
        *,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = DEFAULT_PAGE,
        archived: ArchiveFilter = "exclude",
    ) -> SessionPage:
        """A page of sessions, most recently updated first (see :meth:`SessionStore.list`)."""
        select = f"SELECT {_COLUMNS} FROM sessions"
        query = page_query(select, "?", cwd=cwd, cursor=cursor, limit=limit, archived=archived)
        return query.page(self._run(lambda db: db.execute(query.sql, query.args).fetchall()), _record)

    async def delete(self, session_id: str) -> bool:
        """Forget the session and its history; whether there was one."""
        self.claimed.discard(session_id)
        self._touched.pop(session_id, None)
        self._commit_pending()

        def run(db: sqlite3.Connection) -> bool:
            db.execute("BEGIN IMMEDIATE")
            try:
                found = db.execute("DELETE FROM sessions WHERE id = ?", (session_id,)).rowcount > 0
                db.execute("DELETE FROM updates WHERE session_id = ?", (session_id,))
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return found

        return self._run(run)

    # --- history ----------------------------------------------------------------------------------

    async def append(self, session_id: str, update: bytes) -> None:
        """Add one update to the session's history, committed before this returns."""
        self.append_soon(session_id, update)
        self._commit_pending()

    def append_soon(self, session_id: str, update: bytes) -> None:
        """Append in the transaction that commits the updates of this burst (one row per session).

        The updates an agent sends without yielding to the event loop are committed together
        right after (:data:`_BURST` at most per transaction): a commit per update would cost a
        streaming agent several times its sending time.
        """
        if _SEPARATOR in update:
            raise ValueError("A session update is JSON text, which never holds a NUL byte")
        self._pending.append((session_id, update))
        if self._commit_scheduled:
            if len(self._pending) >= _BURST and not self._failed_commits:
                # A failure keeps the updates pending: the scheduled commit tries again and says so.
                with contextlib.suppress(StoreError):
                    self._commit_pending()
        else:
            self._commit_scheduled = True
            asyncio.get_running_loop().call_soon(self._commit_soon)

    def _commit_soon(self) -> None:
        self._commit_scheduled = False
        try:
            self._commit_pending()
        except StoreError as exc:
            # Another writer held the file past the busy timeout (a checkpointer sharing it, a
            # long backup): the updates stay in memory and are committed on the next try.
            delay = _RETRY_DELAYS[min(self._failed_commits, len(_RETRY_DELAYS) - 1)]
            self._failed_commits += 1
            _log.warning(
                "%d session updates are not recorded yet, kept in memory; trying again in %s s: %s",
                len(self._pending),
                delay,
                exc,
            )
            self._commit_scheduled = True
            asyncio.get_running_loop().call_later(delay, self._commit_soon)
        else:
            self._failed_commits = 0

    def _commit_pending(self) -> None:
        """Write the updates given to :meth:`append_soon` so far, in one transaction."""
        if not self._pending:
            return
        pending, self._pending = self._pending, []
        now = now_us()
        # A session's updated time moves at most every 100 ms: one row write less per update.
        # One row per run of updates of the same session: a row per update cost SQLite about 5 us
        # each, several times what sending it costs a streaming agent.
        rows = [
            (session_id, _SEPARATOR.join(map(_BODY, run)))
            for session_id, run in itertools.groupby(pending, _SESSION)
        ]
        touched = [
            (now, session_id)
            for session_id in {session_id for session_id, _ in rows}
            if now - self._touched.get(session_id, 0) > 100_000
        ]
        for _, session_id in touched:
            self._touched[session_id] = now

        def run(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany("INSERT INTO updates (session_id, body) VALUES (?, ?)", rows)
                db.executemany("UPDATE sessions SET updated = max(updated + 1, ?) WHERE id = ?", touched)
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

        try:
            self._run(run)
        except StoreError:
            self._pending[:0] = pending
            raise

    async def flush(self) -> None:
        """Commit the updates given to :meth:`append_soon` that are not yet."""
        self._commit_pending()

    async def history(self, session_id: str) -> AsyncIterator[bytes]:
        """The session's updates in order, read :data:`_CHUNK` rows at a time."""
        self._commit_pending()
        last = -1
        while True:
            rows = self._run(partial(_chunk, session_id=session_id, after=last))
            for _, body in rows:
                for update in body.split(_SEPARATOR):
                    yield update
            if len(rows) < _CHUNK:
                return
            last = rows[-1][0]

    # --- the rest -----------------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Give up this process's sessions and close the file."""
        await super().aclose()
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    async def _insert(self, record: SessionRecord) -> None:
        try:
            self._transaction([_insert_row(record)])
        except sqlite3.IntegrityError:
            raise ValueError(f"A session with id {record.session_id!r} exists already") from None

    async def _replace(self, record: SessionRecord) -> None:
        self._transaction(
            [
                (
                    "UPDATE sessions SET cwd = ?, additional_directories = ?, mcp_servers = ?, config = ?, "
                    "mode = ?, title = ?, archived = ?, updated = ? WHERE id = ?",
                    (*_row(record)[1:8], record.updated, record.session_id),
                )
            ]
        )

    async def _copy(self, source_id: str, record: SessionRecord) -> None:
        try:
            self._transaction(
                [
                    _insert_row(record),
                    (
                        "INSERT INTO updates (session_id, body) "
                        "SELECT ?, body FROM updates WHERE session_id = ? ORDER BY id",
                        (record.session_id, source_id),
                    ),
                ]
            )
        except sqlite3.IntegrityError:
            raise ValueError(f"A session with id {record.session_id!r} exists already") from None


def _use_wal(db: sqlite3.Connection) -> None:
    """Switch ``db`` to WAL, waiting up to the busy timeout for the other connections to let it.

    SQLite answers the switch with ``SQLITE_BUSY`` at once, without its busy handler, while another
    connection holds the write lock (it could deadlock otherwise): processes opening a new file
    together, such as an :class:`~acpio.pool.AgentPool`'s agents, would see "database is locked".
    """
    deadline = time.monotonic() + _BUSY_TIMEOUT_MS / 1000
    pause = 0.001
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _chunk(db: sqlite3.Connection, *, session_id: str, after: int) -> list[Any]:
    """The next rows of a session's history after update ``after``."""
    sql = "SELECT id, body FROM updates WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?"
    return db.execute(sql, (session_id, after, _CHUNK)).fetchall()


def _row(record: SessionRecord) -> tuple[Any, ...]:
    return (
        record.session_id,
        record.cwd,
        orjson.dumps(list(record.additional_directories)).decode(),
        orjson.dumps(list(record.mcp_servers)).decode(),
        orjson.dumps(dict(record.config)).decode(),
        record.mode,
        record.title,
        int(record.archived),
        record.parent_id,
        record.created,
        record.updated,
    )


def _insert_row(record: SessionRecord) -> tuple[str, Sequence[Any]]:
    return (f"INSERT INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", _row(record))


def _record(row: Sequence[Any]) -> SessionRecord:
    return SessionRecord(
        session_id=row[0],
        cwd=row[1],
        additional_directories=tuple(orjson.loads(row[2])),
        mcp_servers=tuple(orjson.loads(row[3])),
        config=orjson.loads(row[4]),
        mode=row[5],
        title=row[6],
        archived=bool(row[7]),
        parent_id=row[8],
        created=row[9],
        updated=row[10],
    )
