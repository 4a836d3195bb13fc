""":class:`PostgresStore`: sessions in a PostgreSQL database shared by several agent processes.

Install the extra: ``pip install 'acpio[postgres]'`` (psycopg 3). Every worker opens its own
store on the same database (``postgresql://user@host/db``). A session a worker opens is leased to
it in the database (the ``session_leases`` table: one owner per session, taken over by the worker
that opens it next), so two workers never both own a session and ``session/status`` answers the
same everywhere: ``open`` on the owner, ``saved`` elsewhere. A worker's leases end when it closes
the session or the store. Updates are written by one task per store, in order, batched in one
transaction per burst. The schema is versioned (the ``acpio_schema`` table) and migrated forward.
"""

from __future__ import annotations

import asyncio
import importlib
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import TYPE_CHECKING, Any, Final

import orjson

from acpio.store.base import (
    DEFAULT_PAGE,
    ArchiveFilter,
    SessionPage,
    SessionRecord,
    SessionStatusName,
    SessionStore,
    StoreError,
    now_us,
    page_query,
)

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStore"]

#: Rows of a history read per query (a row holds the updates of one batch for one session).
_CHUNK: Final = 64
#: Updates in one row at most (so a chunk of rows read back stays small).
_RUN: Final = 256
#: Between the updates of one row: NUL never occurs in JSON text.
_SEPARATOR: Final = b"\x00"

#: The migrations, in order: applying ``MIGRATIONS[:n]`` makes schema version ``n``.
MIGRATIONS: Final[tuple[str, ...]] = (
    """
    CREATE TABLE acpio_sessions (
        id TEXT PRIMARY KEY,
        cwd TEXT NOT NULL,
        additional_directories JSONB NOT NULL DEFAULT '[]',
        mcp_servers JSONB NOT NULL DEFAULT '[]',
        config JSONB NOT NULL DEFAULT '{}',
        mode TEXT,
        title TEXT,
        archived BOOLEAN NOT NULL DEFAULT FALSE,
        parent_id TEXT,
        created BIGINT NOT NULL,
        updated BIGINT NOT NULL
    );
    CREATE INDEX acpio_sessions_recent ON acpio_sessions (archived, updated DESC, id DESC);
    CREATE INDEX acpio_sessions_cwd ON acpio_sessions (cwd, updated DESC, id DESC);
    CREATE TABLE acpio_updates (
        id BIGSERIAL PRIMARY KEY,
        session_id TEXT NOT NULL,
        body BYTEA NOT NULL  -- the JSON texts of one or more updates, in order, separated by NUL
    );
    CREATE INDEX acpio_updates_session ON acpio_updates (session_id, id);
    CREATE TABLE acpio_session_leases (
        session_id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        acquired BIGINT NOT NULL
    );
    """,
    # the affinity cookie that routes a client to the lease's owner, as JSON (NULL: none)
    "ALTER TABLE acpio_session_leases ADD COLUMN route TEXT;",
)
SCHEMA_VERSION: Final = len(MIGRATIONS)

_COLUMNS: Final = (
    "id, cwd, additional_directories, mcp_servers, config, mode, title, archived, parent_id, created, updated"
)
# Serializes the migrations of workers starting together (pg_advisory_xact_lock's key).
_MIGRATION_LOCK: Final = 0x616370696F


class PostgresStore(SessionStore):
    """A :class:`~acpio.store.SessionStore` in a PostgreSQL database (``conninfo``: a URL or ``key=value``).

    The connection is made on first use; failures raise :class:`~acpio.store.StoreError` naming the
    server. :attr:`owner` is this store's id in the lease table.
    """

    def __init__(self, conninfo: str) -> None:
        super().__init__()
        # Said here, not at the first query: a server with a store it can never open should not start.
        try:
            importlib.import_module("psycopg")
        except ImportError:
            raise StoreError(
                "PostgresStore needs psycopg 3: install acpio with the postgres extra "
                "(pip install 'acpio[postgres]')"
            ) from None
        self.conninfo = conninfo
        #: This worker's name in ``acpio_session_leases.owner``.
        self.owner = uuid.uuid4().hex
        self._connection: psycopg.AsyncConnection[Any] | None = None
        self._connecting = asyncio.Lock()
        # One statement or transaction at a time on the connection: tasks would interleave them.
        self._using = asyncio.Lock()

    def __repr__(self) -> str:
        return f"<PostgresStore owner={self.owner[:8]}>"

    # --- the connection -----------------------------------------------------------------------------

    def _fail(self, exc: Exception) -> StoreError:
        return StoreError(
            f"The PostgreSQL session database cannot be used: {exc}. Check that the server is up and the "
            "URL (postgresql://user@host/dbname) names a database this user may write."
        )

    async def _db(self) -> psycopg.AsyncConnection[Any]:
        if self._connection is not None and not self._connection.closed:
            return self._connection
        import psycopg

        async with self._connecting:
            if self._connection is None or self._connection.closed:
                try:
                    db = await psycopg.AsyncConnection.connect(self.conninfo, autocommit=True)
                    await self._migrate(db)
                except psycopg.Error as exc:
                    raise self._fail(exc) from exc
                self._connection = db
        assert self._connection is not None
        return self._connection

    async def _migrate(self, db: psycopg.AsyncConnection[Any]) -> None:
        async with db.transaction():
            await db.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            await db.execute("CREATE TABLE IF NOT EXISTS acpio_schema (version INTEGER NOT NULL)")
            row = await (await db.execute("SELECT version FROM acpio_schema")).fetchone()
            version = 0 if row is None else row[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"The PostgreSQL session database has schema version {version}, newer than this "
                    f"acpio's ({SCHEMA_VERSION}): upgrade acpio."
                )
            for script in MIGRATIONS[version:]:
                for statement in script.split(";"):
                    if statement.strip():
                        await db.execute(statement)
            if row is None:
                await db.execute("INSERT INTO acpio_schema (version) VALUES (%s)", (SCHEMA_VERSION,))
            else:
                await db.execute("UPDATE acpio_schema SET version = %s", (SCHEMA_VERSION,))

    async def _fetch(self, sql: str, args: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        import psycopg

        db = await self._db()
        try:
            async with self._using:
                cursor = await db.execute(sql, args)
                return await cursor.fetchall() if cursor.description is not None else []
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    async def _transaction(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> list[int]:
        import psycopg

        db = await self._db()
        counts: list[int] = []
        try:
            async with self._using, db.transaction():
                for sql, args in statements:
                    cursor = await db.execute(sql, args)
                    counts.append(cursor.rowcount)
        except psycopg.errors.UniqueViolation:
            raise
        except psycopg.Error as exc:
            raise self._fail(exc) from exc
        return counts

    # --- records ----------------------------------------------------------------------------------

    async def get(self, session_id: str) -> SessionRecord | None:
        """The session with this id, or ``None``."""
        rows = await self._fetch(f"SELECT {_COLUMNS} FROM acpio_sessions WHERE id = %s", (session_id,))
        return _record(rows[0]) if rows else None

    async def list(
        self,
        *,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = DEFAULT_PAGE,
        archived: ArchiveFilter = "exclude",
    ) -> SessionPage:
        """A page of sessions, most recently updated first (see :meth:`SessionStore.list`)."""
        select = f"SELECT {_COLUMNS} FROM acpio_sessions"
        query = page_query(select, "%s", cwd=cwd, cursor=cursor, limit=limit, archived=archived)
        return query.page(await self._fetch(query.sql, query.args), _record)

    async def delete(self, session_id: str) -> bool:
        """Forget the session, its history and its lease; whether there was one."""
        self.claimed.discard(session_id)
        await self.flush()
        counts = await self._transaction(
            [
                ("DELETE FROM acpio_sessions WHERE id = %s", (session_id,)),
                ("DELETE FROM acpio_updates WHERE session_id = %s", (session_id,)),
                ("DELETE FROM acpio_session_leases WHERE session_id = %s", (session_id,)),
            ]
        )
        return counts[0] > 0

    # --- history ----------------------------------------------------------------------------------

    async def append(self, session_id: str, update: bytes) -> None:
        """Add one update to the session's history, committed before this returns."""
        _check(update)
        await self._append_many([(session_id, update)])

    def append_soon(self, session_id: str, update: bytes) -> None:
        """Queue the update for the writer task, which commits what is queued in one transaction."""
        _check(update)
        super().append_soon(session_id, update)

    async def _append_many(self, updates: Sequence[tuple[str, bytes]]) -> None:
        import psycopg

        now = now_us()
        touched = [(now, session_id) for session_id in dict.fromkeys(sid for sid, _ in updates)]
        db = await self._db()
        try:
            async with self._using, db.transaction(), db.cursor() as cursor:
                # executemany pipelines the rows: one round trip for the burst, not one per update.
                await cursor.executemany(
                    "INSERT INTO acpio_updates (session_id, body) VALUES (%s, %s)", _runs(updates)
                )
                await cursor.executemany(
                    "UPDATE acpio_sessions SET updated = GREATEST(updated + 1, %s) WHERE id = %s", touched
                )
        except psycopg.Error as exc:
            raise self._fail(exc) from exc

    async def history(self, session_id: str) -> AsyncIterator[bytes]:
        """The session's updates in order, read :data:`_CHUNK` rows at a time."""
        await self.flush()
        last = -1
        while True:
            rows = await self._fetch(
                "SELECT id, body FROM acpio_updates WHERE session_id = %s AND id > %s ORDER BY id LIMIT %s",
                (session_id, last, _CHUNK),
            )
            for _, body in rows:
                for update in bytes(body).split(_SEPARATOR):
                    yield update
            if len(rows) < _CHUNK:
                return
            last = rows[-1][0]

    # --- leases -------------------------------------------------------------------------------------

    async def open(self, session_id: str) -> None:
        """Lease the session to this worker (taking it over from any other)."""
        await self._transaction(
            [
                (
                    "INSERT INTO acpio_session_leases (session_id, owner, acquired, route) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET "
                    "owner = EXCLUDED.owner, acquired = EXCLUDED.acquired, route = EXCLUDED.route",
                    (session_id, self.owner, now_us(), self._route_json),
                )
            ]
        )
        self.claimed.add(session_id)

    async def close(self, session_id: str) -> None:
        """End this worker's lease on the session (a lease another worker took over stays)."""
        self.claimed.discard(session_id)
        await self._transaction(
            [
                (
                    "DELETE FROM acpio_session_leases WHERE session_id = %s AND owner = %s",
                    (session_id, self.owner),
                )
            ]
        )

    async def route_of(self, session_id: str) -> dict[str, str] | None:
        """The route (affinity cookie) of the other worker holding the session's lease, if it has one."""
        rows = await self._fetch(
            "SELECT route FROM acpio_session_leases WHERE session_id = %s AND owner <> %s",
            (session_id, self.owner),
        )
        found = orjson.loads(rows[0][0]) if rows and rows[0][0] is not None else None
        return {str(k): str(v) for k, v in found.items()} if isinstance(found, dict) else None

    @property
    def _route_json(self) -> str | None:
        return orjson.dumps(self.route).decode() if self.route is not None else None

    async def status(self, session_id: str) -> SessionStatusName | None:
        """``open`` when this worker holds the session's lease, else ``saved``; ``None``: no such session."""
        rows = await self._fetch(
            "SELECT l.owner FROM acpio_sessions s LEFT JOIN acpio_session_leases l ON l.session_id = s.id "
            "WHERE s.id = %s",
            (session_id,),
        )
        if not rows:
            return None
        return "open" if rows[0][0] == self.owner else "saved"

    async def aclose(self) -> None:
        """Write what is queued, end this worker's leases, and close the connection."""
        await super().aclose()
        if self._connection is not None:
            await self._connection.close()
            self._connection = None

    # --- the rest -----------------------------------------------------------------------------------

    async def _insert(self, record: SessionRecord) -> None:
        import psycopg

        try:
            await self._transaction([_insert_row(record)])
        except psycopg.errors.UniqueViolation:
            raise ValueError(f"A session with id {record.session_id!r} exists already") from None

    async def _replace(self, record: SessionRecord) -> None:
        await self._transaction(
            [
                (
                    "UPDATE acpio_sessions SET cwd = %s, additional_directories = %s, mcp_servers = %s, "
                    "config = %s, mode = %s, title = %s, archived = %s, updated = %s WHERE id = %s",
                    (*_row(record)[1:8], record.updated, record.session_id),
                )
            ]
        )

    async def _copy(self, source_id: str, record: SessionRecord) -> None:
        import psycopg

        try:
            await self._transaction(
                [
                    _insert_row(record),
                    (
                        "INSERT INTO acpio_updates (session_id, body) "
                        "SELECT %s, body FROM acpio_updates WHERE session_id = %s ORDER BY id",
                        (record.session_id, source_id),
                    ),
                ]
            )
        except psycopg.errors.UniqueViolation:
            raise ValueError(f"A session with id {record.session_id!r} exists already") from None


def _check(update: bytes) -> None:
    if _SEPARATOR in update:
        raise ValueError("A session update is JSON text, which never holds a NUL byte")


def _runs(updates: Sequence[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """One row per run of updates of the same session (at most :data:`_RUN`), joined by NUL."""
    rows: list[tuple[str, bytes]] = []
    start = 0
    for end in range(1, len(updates) + 1):
        if end == len(updates) or updates[end][0] != updates[start][0] or end - start == _RUN:
            rows.append((updates[start][0], _SEPARATOR.join(update for _, update in updates[start:end])))
            start = end
    return rows


def _row(record: SessionRecord) -> tuple[Any, ...]:
    return (
        record.session_id,
        record.cwd,
        orjson.dumps(list(record.additional_directories)).decode(),
        orjson.dumps(list(record.mcp_servers)).decode(),
        orjson.dumps(dict(record.config)).decode(),
        record.mode,
        record.title,
        record.archived,
        record.parent_id,
        record.created,
        record.updated,
    )


def _insert_row(record: SessionRecord) -> tuple[str, Sequence[Any]]:
    return (
        f"INSERT INTO acpio_sessions ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        _row(record),
    )


def _record(row: Sequence[Any]) -> SessionRecord:
    return SessionRecord(
        session_id=row[0],
        cwd=row[1],
        additional_directories=tuple(row[2]),
        mcp_servers=tuple(row[3]),
        config=row[4],
        mode=row[5],
        title=row[6],
        archived=bool(row[7]),
        parent_id=row[8],
        created=row[9],
        updated=row[10],
    )
