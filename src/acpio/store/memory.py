""":class:`MemoryStore`: sessions for the life of the process (``memory:``), for tests and demos."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Final

from acpio.store.base import (
    DEFAULT_PAGE,
    ArchiveFilter,
    SessionPage,
    SessionRecord,
    SessionStore,
    decode_cursor,
    encode_cursor,
    now_us,
    page_size,
)

__all__ = ["MemoryStore"]

_CHUNK: Final = 1000


class MemoryStore(SessionStore):
    """A :class:`~acpio.store.SessionStore` in this process's memory: nothing outlives it."""

    outlives_process = False

    def __init__(self) -> None:
        super().__init__()
        self._records: dict[str, SessionRecord] = {}
        self._histories: dict[str, list[bytes]] = {}

    def __repr__(self) -> str:
        return f"<MemoryStore sessions={len(self._records)}>"

    async def get(self, session_id: str) -> SessionRecord | None:
        """The session with this id, or ``None``."""
        return self._records.get(session_id)

    async def list(
        self,
        *,
        cwd: str | None = None,
        cursor: str | None = None,
        limit: int = DEFAULT_PAGE,
        archived: ArchiveFilter = "exclude",
    ) -> SessionPage:
        """A page of sessions, most recently updated first (see :meth:`SessionStore.list`)."""
        after = decode_cursor(cursor) if cursor is not None else None
        records = sorted(self._records.values(), key=lambda r: (r.updated, r.session_id), reverse=True)
        size = page_size(limit)
        page: list[SessionRecord] = []
        for record in records:
            if cwd is not None and record.cwd != cwd:
                continue
            if (archived == "exclude" and record.archived) or (archived == "only" and not record.archived):
                continue
            if after is not None and (record.updated, record.session_id) >= after:
                continue
            if len(page) == size:
                return SessionPage(page, encode_cursor(page[-1]))
            page.append(record)
        return SessionPage(page)

    async def delete(self, session_id: str) -> bool:
        """Forget the session and its history; whether there was one."""
        self.claimed.discard(session_id)
        self._histories.pop(session_id, None)
        return self._records.pop(session_id, None) is not None

    async def append(self, session_id: str, update: bytes) -> None:
        """Add one update to the session's history (ignored for a session that does not exist)."""
        self.append_soon(session_id, update)

    def append_soon(self, session_id: str, update: bytes) -> None:
        """Append at once: memory is written synchronously."""
        history = self._histories.get(session_id)
        if history is not None:
            history.append(update if type(update) is bytes else bytes(update))
            record = self._records[session_id]
            # The updated time moves at most every 100 ms: a new record per update would cost more.
            if now_us() - record.updated > 100_000:
                self._records[session_id] = record.changed()

    async def history(self, session_id: str) -> AsyncIterator[bytes]:
        """The session's updates in order (a snapshot of those appended so far)."""
        history = list(self._histories.get(session_id, ()))
        for start in range(0, len(history), _CHUNK):
            for update in history[start : start + _CHUNK]:
                yield update

    async def _insert(self, record: SessionRecord) -> None:
        if record.session_id in self._records:
            raise ValueError(f"A session with id {record.session_id!r} exists already")
        self._records[record.session_id] = record
        self._histories[record.session_id] = []

    async def _replace(self, record: SessionRecord) -> None:
        self._records[record.session_id] = record

    async def _copy(self, source_id: str, record: SessionRecord) -> None:
        await self._insert(record)
        self._histories[record.session_id] = list(self._histories.get(source_id, ()))
