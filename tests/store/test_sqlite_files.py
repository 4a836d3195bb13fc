"""The SQLite store's files: where its URLs put them, and that only their owner can read them."""

from __future__ import annotations

import logging
import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from acpio.cli import main
from acpio.store import SqliteStore, StoreError, default_sqlite_path, open_store

posix_only = pytest.mark.skipif(os.name == "nt", reason="Windows files have no permission bits for others")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask() -> Iterator[None]:
    """The most permissive umask: the modes seen are the ones acpio asks for, not the umask's doing."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)


async def use(store: SqliteStore) -> None:
    async with store:
        record = await store.create("/w")
        await store.append(record.session_id, b'{"n":1}')


# --- URLs ------------------------------------------------------------------------------------------


async def test_three_slashes_are_relative_four_absolute_as_in_sqlalchemy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rel").mkdir()
    relative = open_store("sqlite:///rel/s.db")
    assert isinstance(relative, SqliteStore)
    await use(relative)
    assert (tmp_path / "rel" / "s.db").is_file()

    absolute = open_store(f"sqlite:///{tmp_path}/a.db")  # sqlite:////tmp/...
    assert isinstance(absolute, SqliteStore)
    assert absolute.path == tmp_path / "a.db"
    short = open_store("sqlite:rel/s.db")
    assert isinstance(short, SqliteStore)
    assert short.path == Path("rel/s.db")
    default = open_store("sqlite:")
    assert isinstance(default, SqliteStore)
    assert default.path == default_sqlite_path()


def test_a_missing_directory_is_refused_naming_it_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "missing"
    with pytest.raises(StoreError, match=f"The directory '{missing}' of the session database does not exist"):
        open_store(f"sqlite:///{missing}/s.db")
    with pytest.raises(StoreError, match="create it"):
        SqliteStore(missing / "s.db")
    assert not missing.exists()


def test_an_absolute_path_with_three_slashes_is_named_with_the_four_slash_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """sqlite:///var/x.db, the old documented form, now names ./var: the message says how to go absolute."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreError) as refused:
        open_store("sqlite:///var/lib/s.db")
    assert f"'{tmp_path / 'var' / 'lib'}'" in str(refused.value)
    assert "sqlite:////absolute/path.db is absolute" in str(refused.value)


@pytest.mark.parametrize("command", [["testy"], ["agent", "--offline"]])
def test_the_commands_refuse_a_missing_directory_at_start(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*command, "--store", f"sqlite:///{tmp_path}/nowhere/s.db"]) != 0
    err = capsys.readouterr().err
    assert f"The directory '{tmp_path}/nowhere' of the session database does not exist: create it" in err
    assert not (tmp_path / "nowhere").exists()


# --- permissions -----------------------------------------------------------------------------------


@posix_only
async def test_the_database_and_its_side_files_are_owner_only_from_the_start(
    tmp_path: Path, umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    at_connect: list[int | None] = []
    connect = sqlite3.connect

    def spying(database: Any, *args: Any, **kwargs: Any) -> sqlite3.Connection:
        at_connect.append(mode(Path(database)) if Path(database).exists() else None)
        return connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", spying)
    async with SqliteStore(path) as store:
        record = await store.create("/w")
        await store.append(record.session_id, b'{"n":1}')
        side = [path.with_name(path.name + end) for end in ("-wal", "-shm")]
        assert [mode(p) for p in [path, *side]] == [0o600, 0o600, 0o600]
    assert at_connect == [0o600]  # never readable by others, not even before SQLite opened it


@posix_only
async def test_the_default_directory_is_created_owner_only(
    tmp_path: Path, umask: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    store = open_store("sqlite:")
    assert isinstance(store, SqliteStore)
    await use(store)
    assert store.path == tmp_path / "data" / "acpio" / "sessions.db"
    assert mode(store.path.parent) == 0o700
    assert mode(store.path) == 0o600


@posix_only
async def test_files_an_older_acpio_left_readable_are_made_owner_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    ours = tmp_path / "data" / "acpio"
    ours.mkdir(parents=True, mode=0o755)
    ours.chmod(0o755)
    mine = tmp_path / "project"
    mine.mkdir()
    mine.chmod(0o755)
    for path in (ours / "sessions.db", mine / "s.db"):
        sqlite3.connect(path).close()
        path.chmod(0o644)

    with caplog.at_level(logging.WARNING, logger="acpio.store"):
        await use(SqliteStore())
        await use(SqliteStore(mine / "s.db"))
    assert (mode(ours), mode(ours / "sessions.db")) == (0o700, 0o600)
    assert (mode(mine), mode(mine / "s.db")) == (0o755, 0o600)  # a directory of the user's is not acpio's
    assert f"{mine / 's.db'} was readable by others: it is now readable by its owner only" in caplog.text
