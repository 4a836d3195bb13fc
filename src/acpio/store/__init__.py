"""Sessions that outlive the process: session stores, and the session methods served from one.

A :class:`SessionStore` keeps an agent's sessions (their settings and the JSON of every
``session/update`` sent for them) in memory (:class:`MemoryStore`), in a SQLite file
(:class:`SqliteStore`, the embedded default) or in a PostgreSQL database shared by several workers
(:class:`PostgresStore`, ``pip install 'acpio[postgres]'``); :func:`open_store` picks one from a
URL (``memory:``, ``sqlite:////absolute/path``, ``postgresql://...``). :func:`serve_sessions` serves
``session/new``, ``load``, ``resume``, ``list``, ``close`` and ``delete`` (and the unstable
``fork``, ``archive``, ``unarchive``, ``status`` and ``set_title``) from a store on an Agent
builder, and records what the agent sends::

    app = Agent.builder(name="my-agent")
    sessions = serve_sessions(app, open_store("sqlite:////var/lib/my-agent/sessions.db"))

See ``docs/sessions.md``. Names are imported on first use: ``import acpio.store`` loads no models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if TYPE_CHECKING:
    from acpio.store.base import (
        ArchiveFilter,
        InvalidCursor,
        SessionPage,
        SessionRecord,
        SessionStatusName,
        SessionStore,
        StoreError,
        UnknownSession,
        new_session_id,
    )
    from acpio.store.memory import MemoryStore
    from acpio.store.postgres import PostgresStore
    from acpio.store.serve import CloseHook, OpenHook, SessionSetup, StoredSessions, serve_sessions
    from acpio.store.sqlite import SqliteStore, default_sqlite_path
    from acpio.store.url import open_store

__all__ = [
    "ArchiveFilter",
    "CloseHook",
    "InvalidCursor",
    "MemoryStore",
    "OpenHook",
    "PostgresStore",
    "SessionPage",
    "SessionRecord",
    "SessionSetup",
    "SessionStatusName",
    "SessionStore",
    "SqliteStore",
    "StoreError",
    "StoredSessions",
    "UnknownSession",
    "default_sqlite_path",
    "new_session_id",
    "open_store",
    "serve_sessions",
]

if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
