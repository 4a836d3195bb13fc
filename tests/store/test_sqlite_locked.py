"""A SQLite file another writer holds past the busy timeout: the updates wait in memory, none is lost."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from pathlib import Path

import pytest

from acpio.store import SqliteStore, StoreError
from acpio.store import sqlite as sqlite_store


async def _history(store: SqliteStore, session_id: str) -> list[bytes]:
    return [update async for update in store.history(session_id)]


async def test_updates_committed_while_another_writer_holds_the_file_are_kept_and_written_later(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(sqlite_store, "_BUSY_TIMEOUT_MS", 50)
    monkeypatch.setattr(sqlite_store, "_RETRY_DELAYS", (0.05,))
    path = tmp_path / "sessions.db"
    store = SqliteStore(path)
    record = await store.create("/tmp")
    session_id = record.session_id
    await store.append(session_id, b'{"n":0}')

    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's long write transaction
    with caplog.at_level(logging.WARNING, logger="acpio.store"):
        for n in range(1, 4):
            store.append_soon(session_id, b'{"n":%d}' % n)
        await asyncio.sleep(0.3)
    assert "3 session updates are not recorded yet, kept in memory" in caplog.text

    other.execute("COMMIT")
    other.close()
    await asyncio.sleep(0.2)
    assert await _history(store, session_id) == [b'{"n":%d}' % n for n in range(4)]
    await store.aclose()


async def test_a_commit_that_must_happen_now_still_raises_and_keeps_the_updates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "_BUSY_TIMEOUT_MS", 50)
    path = tmp_path / "sessions.db"
    store = SqliteStore(path)
    session_id = (await store.create("/tmp")).session_id
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreError, match="database is locked"):
        await store.append(session_id, b'{"n":1}')
    other.execute("COMMIT")
    other.close()
    await store.flush()
    assert await _history(store, session_id) == [b'{"n":1}']
    await store.aclose()


async def test_a_new_file_another_process_is_writing_is_opened_once_its_write_ends(tmp_path: Path) -> None:
    """SQLite refuses the switch to WAL at once while another connection writes: the store waits instead.

    An AgentPool's processes open a new file together; one of them failed with "database is locked".
    """
    path = tmp_path / "sessions.db"
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")  # another process creating the file holds the write lock
    release = threading.Timer(0.2, other.execute, ("COMMIT",))
    release.start()
    try:
        store = SqliteStore(path)
        session_id = (await store.create("/tmp")).session_id
        assert [record.session_id for record in (await store.list()).sessions] == [session_id]
        assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)
        await store.aclose()
    finally:
        release.join()
        other.close()


async def test_a_file_written_past_the_busy_timeout_while_opened_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_store, "_BUSY_TIMEOUT_MS", 50)
    path = tmp_path / "sessions.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    with pytest.raises(StoreError, match=r"sessions\.db' cannot be used: database is locked"):
        await SqliteStore(path).create("/tmp")
    other.execute("COMMIT")
    other.close()
