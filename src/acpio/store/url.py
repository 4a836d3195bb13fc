"""``open_store(url)``: a session store from a URL, as ``acpio testy --store URL`` takes it.

========================================  ==============================================================
``memory:``                               :class:`~acpio.store.MemoryStore` (nothing outlives the process)
``sqlite:`` (no path)                     :class:`~acpio.store.SqliteStore` in the user data directory
``sqlite:///abs/path.db``                 the file ``/abs/path.db`` (``sqlite:///`` and an absolute path)
``sqlite:relative/path.db``               a path relative to the current directory
``postgresql://user@host/db``             :class:`~acpio.store.PostgresStore` (``postgres://`` too)
========================================  ==============================================================
"""

from __future__ import annotations

from urllib.parse import unquote

from acpio.store.base import SessionStore

__all__ = ["STORE_SCHEMES", "open_store"]

#: The URL schemes :func:`open_store` takes.
STORE_SCHEMES = ("memory:", "sqlite:", "postgresql://", "postgres://")


def open_store(url: str) -> SessionStore:
    """The session store ``url`` names (see the module docstring); :class:`ValueError` for any other URL.

    Nothing is opened yet: the database is opened (and created or migrated) on first use.
    """
    if url == "memory:" or url == "memory://":
        from acpio.store.memory import MemoryStore

        return MemoryStore()
    if url.startswith("sqlite:"):
        from acpio.store.sqlite import SqliteStore

        rest = url.removeprefix("sqlite:")
        if rest.startswith("//"):
            rest = rest[2:]
            if rest and not rest.startswith("/"):
                raise ValueError(
                    f"Cannot open the session store {url!r}: write sqlite:///absolute/path.db (three "
                    "slashes) or sqlite:relative/path.db"
                )
        return SqliteStore(unquote(rest) if rest else None)
    if url.startswith(("postgresql://", "postgres://")):
        from acpio.store.postgres import PostgresStore

        return PostgresStore(url)
    raise ValueError(
        f"Cannot open the session store {url!r}: use memory:, sqlite:///path/to/sessions.db (sqlite: alone "
        "for the user data directory) or postgresql://user@host/dbname"
    )
