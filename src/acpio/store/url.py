"""``open_store(url)``: a session store from a URL, as ``acpio testy --store URL`` takes it.

SQLite URLs read as SQLAlchemy's do: three slashes before a relative path, four before an absolute one.

========================================  ==============================================================
``memory:``                               :class:`~acpio.store.MemoryStore` (nothing outlives the process)
``sqlite:`` (no path)                     :class:`~acpio.store.SqliteStore` in the user data directory
``sqlite:///relative/path.db``            a path relative to the current directory (``sqlite:relative``
                                          too)
``sqlite:////abs/path.db``                the file ``/abs/path.db``
``postgresql://user@host/db``             :class:`~acpio.store.PostgresStore` (``postgres://`` too)
========================================  ==============================================================

The directory of a SQLite file must exist (:class:`~acpio.store.StoreError` naming it otherwise):
only acpio's user data directory is created.
"""

from __future__ import annotations

from urllib.parse import unquote

from acpio.store.base import SessionStore

__all__ = ["STORE_SCHEMES", "open_store"]

#: The URL schemes :func:`open_store` takes.
STORE_SCHEMES = ("memory:", "sqlite:", "postgresql://", "postgres://")


def open_store(url: str) -> SessionStore:
    """The session store ``url`` names (see the module docstring); :class:`ValueError` for any other URL.

    Nothing is opened yet: the database is opened (and created or migrated) on first use. A SQLite
    file whose directory is missing is refused at once (:class:`~acpio.store.StoreError`).
    """
    if url == "memory:" or url == "memory://":
        from acpio.store.memory import MemoryStore

        return MemoryStore()
    if url.startswith("sqlite:"):
        from acpio.store.sqlite import SqliteStore

        rest = url.removeprefix("sqlite:")
        if not rest:
            return SqliteStore()
        if rest.startswith("//"):
            # The authority (between // and the next /) is empty in a SQLite URL: what follows is the
            # path. sqlite:// alone is an in-memory database to SQLAlchemy: it is refused, not guessed.
            if not rest.startswith("///") or rest == "///":
                raise ValueError(
                    f"Cannot open the session store {url!r}: write sqlite:///relative/path.db (three "
                    "slashes), sqlite:////absolute/path.db (four), sqlite: alone for the user data "
                    "directory, or memory: for nothing kept"
                )
            rest = rest[3:]
        return SqliteStore(unquote(rest))
    if url.startswith(("postgresql://", "postgres://")):
        from acpio.store.postgres import PostgresStore

        return PostgresStore(url)
    raise ValueError(
        f"Cannot open the session store {url!r}: use memory:, sqlite:////absolute/path/to/sessions.db "
        "(sqlite:///relative/path.db, sqlite: alone for the user data directory) or "
        "postgresql://user@host/dbname"
    )
