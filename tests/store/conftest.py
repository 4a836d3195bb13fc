"""Fixtures of the store tests: ``store`` runs each test against the memory, SQLite and PostgreSQL stores."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from acpio.store import SessionStore, open_store

from ._postgres import Cluster, cluster


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Cluster | str]:
    """The throwaway cluster, started once for the session (or the reason it could not be)."""
    with cluster() as running:
        yield running


@pytest.fixture
def pg_url(pg_cluster: Cluster | str) -> str:
    """A fresh, empty database of the throwaway cluster; skips with the reason when there is none."""
    if isinstance(pg_cluster, str):
        pytest.skip(pg_cluster)
    return pg_cluster.new_database()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty store of each kind."""
    if request.param == "memory":
        return "memory:"
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'sessions.db'}"
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
async def store(store_url: str) -> AsyncIterator[SessionStore]:
    """An empty store of each kind, closed afterwards."""
    async with open_store(store_url) as opened:
        yield opened
