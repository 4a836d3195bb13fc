"""What every session store is: :class:`SessionStore`, its records, pages and errors.

A store keeps an agent's sessions beyond the life of its process: each :class:`SessionRecord`
(the working directory, additional directories, MCP server declarations, config option values,
mode, title, archive flag, creation and update times) and the session's history, the JSON of
each ``session/update`` the agent sent for it, byte for byte (unknown fields included).

The methods are coroutines, except :meth:`SessionStore.append_soon`, which the recorder calls on
the sender's path. The three stores are :class:`~acpio.store.MemoryStore`,
:class:`~acpio.store.SqliteStore` and :class:`~acpio.store.PostgresStore`;
:func:`~acpio.store.open_store` picks one from a URL.
"""

from __future__ import annotations

import abc
import asyncio
import base64
import logging
import os
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, ClassVar, Final, Literal, Self, TypeAlias

import orjson

from acpio.errors import AcpError, InvalidParams, ResourceNotFound

__all__ = [
    "ArchiveFilter",
    "InvalidCursor",
    "SessionPage",
    "SessionRecord",
    "SessionStatusName",
    "SessionStore",
    "StoreError",
    "UnknownSession",
    "new_session_id",
]

_log = logging.getLogger("acpio.store")

#: Which sessions :meth:`SessionStore.list` shows by archive state (``exclude``: the default).
ArchiveFilter: TypeAlias = Literal["exclude", "include", "only"]
#: What :meth:`SessionStore.status` says: ``open`` (live in this process, or in this worker for a
#: shared database) or ``saved``.
SessionStatusName: TypeAlias = Literal["open", "saved"]

#: Sessions per :meth:`SessionStore.list` page unless asked otherwise, and at most.
DEFAULT_PAGE: Final = 50
MAX_PAGE: Final = 500


class StoreError(AcpError):
    """The store cannot do what was asked: its database is unreadable, corrupt, or newer than acpio.

    The message names the database (the file, or the server) and says what to do.
    """


class UnknownSession(ResourceNotFound):
    """``-32002``: no session has this id; ``data`` is ``{"sessionId": id}``, as the schema asks."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            {"sessionId": session_id},
            message=f"Unknown session {session_id!r}: no session has this id (see session/list)",
        )
        self.session_id = session_id


class InvalidCursor(InvalidParams):
    """``-32602``: a ``session/list`` cursor that this store did not give out."""

    def __init__(self, cursor: str) -> None:
        super().__init__(
            {"cursor": cursor},
            message="Invalid cursor: pass back the nextCursor of a session/list answer unchanged, "
            "or leave it out for the first page",
        )


def new_session_id() -> str:
    """A fresh session id: ``sess_`` and a random UUID's 32 hex digits."""
    return f"sess_{uuid.uuid4().hex}"


def now_us() -> int:
    """Now, in microseconds since the epoch (the stores' clock)."""
    return time.time_ns() // 1000


def iso(us: int) -> str:
    """Microseconds since the epoch as ISO 8601 in UTC (``2026-11-24T10:00:00.123456Z``)."""
    return datetime.fromtimestamp(us / 1_000_000, UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One stored session: what it was set up with and what the client changed since.

    ``mcp_servers`` are the declarations as the client sent them (JSON objects); ``config`` maps
    config option ids to their values. Times are microseconds since the epoch (UTC); ``updated``
    moves with every change and every recorded update.
    """

    session_id: str
    cwd: str
    additional_directories: tuple[str, ...] = ()
    mcp_servers: tuple[Mapping[str, Any], ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    mode: str | None = None
    title: str | None = None
    archived: bool = False
    #: The session this one was forked from, if any.
    parent_id: str | None = None
    created: int = 0
    updated: int = 0

    @property
    def created_at(self) -> str:
        """:attr:`created` as ISO 8601."""
        return iso(self.created)

    @property
    def updated_at(self) -> str:
        """:attr:`updated` as ISO 8601 (``SessionInfo.updatedAt``)."""
        return iso(self.updated)

    def changed(self, **changes: Any) -> SessionRecord:
        """A copy with ``changes``, :attr:`updated` moved to now."""
        return replace(self, **changes, updated=max(now_us(), self.updated + 1))


@dataclass(frozen=True, slots=True)
class SessionPage:
    """One page of :meth:`SessionStore.list`: newest first, and the cursor of the next (``None``: last)."""

    sessions: Sequence[SessionRecord]
    next_cursor: str | None = None


def encode_cursor(record: SessionRecord) -> str:
    """The opaque cursor that continues after ``record``."""
    return base64.urlsafe_b64encode(orjson.dumps([record.updated, record.session_id])).decode()


def decode_cursor(cursor: str) -> tuple[int, str]:
    """``(updated, session_id)`` of a cursor; :class:`InvalidCursor` if it is not one of ours."""
    try:
        updated, session_id = orjson.loads(base64.urlsafe_b64decode(cursor.encode()))
    except (ValueError, TypeError, orjson.JSONDecodeError):
        raise InvalidCursor(cursor) from None
    if type(updated) is not int or type(session_id) is not str:
        raise InvalidCursor(cursor)
    return updated, session_id


def page_size(limit: int) -> int:
    """``limit`` brought within 1..:data:`MAX_PAGE`."""
    return max(1, min(limit, MAX_PAGE))


@dataclass(frozen=True, slots=True)
class PageQuery:
    """The SQL of one :meth:`SessionStore.list` page, for the stores that keep sessions in SQL."""

    #: The statement (``mark`` placeholders), selecting one row more than :attr:`size`.
    sql: str
    #: Its arguments.
    args: tuple[Any, ...]
    #: The page size asked for.
    size: int

    def page(self, rows: Sequence[Any], record: Any) -> SessionPage:
        """The page the rows make (``record`` turns a row into a :class:`SessionRecord`)."""
        records = [record(row) for row in rows[: self.size]]
        return SessionPage(records, encode_cursor(records[-1]) if len(rows) > self.size else None)


def page_query(
    select: str, mark: str, *, cwd: str | None, cursor: str | None, limit: int, archived: ArchiveFilter
) -> PageQuery:
    """The query of a page of sessions, newest first: ``select`` (``SELECT ... FROM table``) filtered.

    ``mark`` is the driver's placeholder (``?``, ``%s``); the ``archived`` column is compared with
    a boolean, which SQLite reads as 0 or 1.
    """
    where: list[str] = []
    args: list[Any] = []
    if archived != "include":
        where.append(f"archived = {mark}")
        args.append(archived == "only")
    if cwd is not None:
        where.append(f"cwd = {mark}")
        args.append(cwd)
    if cursor is not None:
        updated, session_id = decode_cursor(cursor)
        where.append(f"(updated < {mark} OR (updated = {mark} AND id < {mark}))")
        args += [updated, updated, session_id]
    size = page_size(limit)
    sql = (
        select
        + (" WHERE " + " AND ".join(where) if where else "")
        + f" ORDER BY updated DESC, id DESC LIMIT {mark}"
    )
    return PageQuery(sql, (*args, size + 1), size)


def session_id_of(params: object) -> str | None:
    """The ``sessionId`` of ``session/update`` params, a typed object or a dict."""
    if isinstance(params, dict):
        value = params.get("sessionId")
        return value if isinstance(value, str) else None
    value = getattr(params, "session_id", None)
    return value if isinstance(value, str) else None


class SessionStore(abc.ABC):
    """The sessions of an agent and their histories, kept beyond the life of its process.

    Use one store per process (or per worker) and close it with :meth:`aclose` (or ``async with``).
    :meth:`status` is ``open`` for the sessions :meth:`open` claimed through this store object and
    not yet closed (:meth:`close`): a session live in this process. A store on a shared database
    (PostgreSQL) keeps that claim as a lease in the database, so every worker answers the same.

    Errors: :class:`UnknownSession` (``-32002``) for an id no session has,
    :class:`InvalidCursor` (``-32602``) for a cursor not given out, :class:`StoreError` when the
    database itself fails.
    """

    #: Whether the sessions outlive this process (``False``: a memory store). Clients are told, so
    #: that they do not offer to continue a session in another process.
    outlives_process: ClassVar[bool] = True

    def __init__(self) -> None:
        #: The sessions opened (:meth:`open`) through this store object and not closed since.
        self.claimed: set[str] = set()
        #: The affinity cookie a load balancer routes to this process by (``{"acpio-server": "a"}``),
        #: kept with the leases it takes so that another process can send a client here (see
        #: :meth:`route_of`; ``acpio serve --route``). ``None``: not behind a balancer.
        self.route: dict[str, str] | None = None
        self._queue: list[tuple[str, bytes]] = []
        self._writer: asyncio.Task[None] | None = None
        self._written = asyncio.Event()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- records ----------------------------------------------------------------------------------

    async def create(
        self,
        cwd: str,
        *,
        session_id: str | None = None,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[Mapping[str, Any]] = (),
        config: Mapping[str, Any] | None = None,
        mode: str | None = None,
        title: str | None = None,
    ) -> SessionRecord:
        """Store a new session in ``cwd`` (an id from :func:`new_session_id` unless given) and return it.

        A ``session_id`` already taken raises :class:`ValueError`.
        """
        if not os.path.isabs(cwd):
            raise ValueError(f"A session's cwd must be an absolute path, not {cwd!r}")
        now = now_us()
        record = SessionRecord(
            session_id=session_id if session_id is not None else new_session_id(),
            cwd=cwd,
            additional_directories=tuple(additional_directories),
            mcp_servers=tuple(dict(server) for server in mcp_servers),
            config=dict(config or {}),
            mode=mode,
            title=title,
            created=now,
            updated=now,
        )
        await self._insert(record)
        return record

    @abc.abstractmethod
    async def get(self, session_id: str) -> SessionRecord | None:
        """The session with this id, or ``None``."""

    async def require(self, session_id: str) -> SessionRecord:
        """The session with this id; :class:`UnknownSession` (``-32002``) if there is none."""
        record = await self.get(session_id)
        if record is None:
            raise UnknownSession(session_id)
        return record

    @abc.abstractmethod
    async def list(
        self,
        *,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = DEFAULT_PAGE,
        archived: ArchiveFilter = "exclude",
    ) -> SessionPage:
        """A page of sessions, most recently updated first; with ``cwd``, only those in that directory.

        ``cursor`` is the ``next_cursor`` of the page before (:class:`InvalidCursor` for anything
        else); ``limit`` is capped at 500.
        """

    async def update(self, session_id: str, **changes: Any) -> SessionRecord:
        """Change fields of a session and return the new record; :class:`UnknownSession` if there is none.

        The fields: ``title``, ``mode``, ``config``, ``mcp_servers``, ``cwd``,
        ``additional_directories``, ``archived``.
        """
        unknown = set(changes) - _CHANGEABLE
        if unknown:
            raise TypeError(f"update() cannot change {', '.join(sorted(unknown))}; it changes {_CHANGEABLE}")
        if "mcp_servers" in changes:
            changes["mcp_servers"] = tuple(dict(server) for server in changes["mcp_servers"])
        if "additional_directories" in changes:
            changes["additional_directories"] = tuple(changes["additional_directories"])
        if "config" in changes:
            changes["config"] = dict(changes["config"])
        record = (await self.require(session_id)).changed(**changes)
        await self._replace(record)
        return record

    async def set_title(self, session_id: str, title: str | None) -> SessionRecord:
        """Set (or with ``None`` clear) the session's title."""
        return await self.update(session_id, title=title)

    async def set_mode(self, session_id: str, mode: str | None) -> SessionRecord:
        """Record the session's current mode."""
        return await self.update(session_id, mode=mode)

    async def set_config(self, session_id: str, option_id: str, value: Any) -> SessionRecord:
        """Record the value of one config option (JSON: a string, a boolean...)."""
        record = await self.require(session_id)
        return await self.update(session_id, config={**record.config, option_id: value})

    async def set_mcp_servers(self, session_id: str, servers: Sequence[Mapping[str, Any]]) -> SessionRecord:
        """Record the MCP server declarations the client sent (on load or resume: the full list)."""
        return await self.update(session_id, mcp_servers=servers)

    async def archive(self, session_id: str) -> SessionRecord:
        """Hide the session from default listings (it keeps its id and history)."""
        return await self.update(session_id, archived=True)

    async def unarchive(self, session_id: str) -> SessionRecord:
        """Show the session in default listings again."""
        return await self.update(session_id, archived=False)

    async def fork(
        self,
        session_id: str,
        cwd: str,
        *,
        new_id: str | None = None,
        additional_directories: Sequence[str] = (),
        mcp_servers: Sequence[Mapping[str, Any]] | None = None,
    ) -> SessionRecord:
        """A new session with a copy of ``session_id``'s settings and history, in ``cwd``.

        The copy's title is the original's; ``mcp_servers`` default to the original's.
        :class:`UnknownSession` if there is no such session.
        """
        source = await self.require(session_id)
        await self.flush()
        now = now_us()
        record = replace(
            source,
            session_id=new_id if new_id is not None else new_session_id(),
            cwd=cwd,
            additional_directories=tuple(additional_directories),
            mcp_servers=source.mcp_servers
            if mcp_servers is None
            else tuple(dict(server) for server in mcp_servers),
            archived=False,
            parent_id=session_id,
            created=now,
            updated=now,
        )
        await self._copy(source.session_id, record)
        return record

    @abc.abstractmethod
    async def delete(self, session_id: str) -> bool:
        """Forget the session and its history; whether there was one."""

    # --- history ----------------------------------------------------------------------------------

    @abc.abstractmethod
    async def append(self, session_id: str, update: bytes) -> None:
        """Add one update to the session's history: the JSON text of its ``session/update`` params."""

    def append_soon(self, session_id: str, update: bytes) -> None:
        """:meth:`append` without waiting: the recorder's call, on the agent's sending path.

        Stores whose writes are quick and local write at once (so a crash loses nothing already
        sent); others queue the update for one writer task, in order. :meth:`flush` waits for it.
        """
        self._queue.append((session_id, update))
        if self._writer is None or self._writer.done():
            self._written.clear()
            self._writer = asyncio.get_running_loop().create_task(self._write_queued())

    async def _write_queued(self) -> None:
        try:
            while self._queue:
                batch, self._queue = self._queue, []
                try:
                    await self._append_many(batch)
                except Exception:
                    _log.exception("Recording %d session update(s) failed; they are lost", len(batch))
        finally:
            self._written.set()

    async def _append_many(self, updates: Sequence[tuple[str, bytes]]) -> None:
        for session_id, update in updates:
            await self.append(session_id, update)

    async def flush(self) -> None:
        """Wait until every update given to :meth:`append_soon` is stored."""
        if self._writer is not None and not self._writer.done():
            await self._written.wait()

    @abc.abstractmethod
    def history(self, session_id: str) -> AsyncIterator[bytes]:
        """The session's updates in the order they were appended, read a chunk at a time (never whole)."""

    # --- what is live here --------------------------------------------------------------------------

    async def open(self, session_id: str) -> None:
        """Claim the session for this process: :meth:`status` answers ``open`` until :meth:`close`."""
        self.claimed.add(session_id)

    async def close(self, session_id: str) -> None:
        """Give the session up: it stays stored, :meth:`status` answers ``saved``."""
        self.claimed.discard(session_id)

    async def route_of(self, session_id: str) -> dict[str, str] | None:
        """How to reach the other process holding the session's lease: its :attr:`route`, if it has one.

        ``None`` when no other process holds it, or the store is this process's alone (only
        :class:`~acpio.store.PostgresStore` is shared).
        """
        return None

    async def status(self, session_id: str) -> SessionStatusName | None:
        """``open`` while claimed by this process (:meth:`open`), else ``saved``; ``None``: no session."""
        if await self.get(session_id) is None:
            return None
        return "open" if session_id in self.claimed else "saved"

    async def aclose(self) -> None:
        """Write what is queued, give up this process's sessions, and release the database."""
        await self.flush()
        for session_id in list(self.claimed):
            await self.close(session_id)

    # --- what each store implements -----------------------------------------------------------------

    @abc.abstractmethod
    async def _insert(self, record: SessionRecord) -> None:
        """Store a new record; :class:`ValueError` if its id is taken."""

    @abc.abstractmethod
    async def _replace(self, record: SessionRecord) -> None:
        """Overwrite the record with the same id."""

    @abc.abstractmethod
    async def _copy(self, source_id: str, record: SessionRecord) -> None:
        """Insert ``record`` with a copy of ``source_id``'s history, as one change."""


_CHANGEABLE: Final = frozenset(
    {"title", "mode", "config", "mcp_servers", "cwd", "additional_directories", "archived"}
)
