"""Agents for the pool's tests: testy (in memory or on SQLite) and deaf_app.py, as real processes."""

from __future__ import annotations

import sys
from pathlib import Path

from acpio.pool import PoolEvent

HERE = Path(__file__).parent

#: Bounds every wait of a test (a few seconds of work, on a loaded machine).
TIMEOUT = 30.0


def memory_testy(*flags: str) -> list[str]:
    """``acpio testy`` with ``flags`` (its sessions in memory), as this interpreter runs it."""
    return [sys.executable, "-m", "acpio", "testy", *flags]


def sqlite_testy(database: Path, *flags: str) -> list[str]:
    """testy keeping its sessions in the SQLite file ``database`` (shared by every process of the pool)."""
    return memory_testy("--store", f"sqlite:///{database}", *flags)


def deaf_app(database: Path) -> list[str]:
    """The AgentApp of deaf_app.py, its sessions in the SQLite file ``database``."""
    return [sys.executable, str(HERE / "deaf_app.py"), str(database)]


def names(events: tuple[PoolEvent, ...] | list[PoolEvent]) -> list[str]:
    """The class names of ``events``, in order."""
    return [type(event).__name__ for event in events]
