"""The SessionStore behaviour, the same for the memory, SQLite and PostgreSQL stores (fixture ``store``)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from acpio.store import InvalidCursor, SessionStore, UnknownSession, open_store
from acpio.store.base import SessionRecord


async def test_create_get_and_every_field_round_trips(store: SessionStore) -> None:
    server = {"name": "fs", "command": "/usr/bin/mcp-fs", "args": ["--ro"], "env": [], "x-extra": {"a": 1}}
    made = await store.create(
        "/work/a",
        additional_directories=["/work/lib"],
        mcp_servers=[server],
        config={"verbosity": "brief", "fast": True},
        mode="plan",
        title="First",
    )
    assert made.session_id.startswith("sess_")
    got = await store.get(made.session_id)
    assert got == made
    assert got.mcp_servers == (server,)
    assert got.updated_at.endswith("Z")
    assert got.created == got.updated
    assert await store.get("sess_nope") is None
    with pytest.raises(UnknownSession) as raised:
        await store.require("sess_nope")
    assert raised.value.code == -32002
    assert raised.value.data == {"sessionId": "sess_nope"}


async def test_ids_are_unique_and_a_taken_id_is_refused(store: SessionStore) -> None:
    ids = {(await store.create("/w")).session_id for _ in range(20)}
    assert len(ids) == 20
    await store.create("/w", session_id="mine")
    with pytest.raises(ValueError, match="exists already"):
        await store.create("/w", session_id="mine")
    with pytest.raises(ValueError, match="absolute"):
        await store.create("relative/dir")


async def test_history_keeps_each_update_byte_for_byte_in_order(store: SessionStore) -> None:
    record = await store.create("/w")
    other = await store.create("/w")
    updates = [
        orjson.dumps(
            {"sessionId": record.session_id, "update": {"sessionUpdate": "x_future", "n": n, "é": "ü"}}
        )
        for n in range(2500)  # more than one chunk
    ]
    for update in updates[:1000]:
        await store.append(record.session_id, update)
        store.append_soon(other.session_id, b'{"other":true}')
    for update in updates[1000:]:
        store.append_soon(record.session_id, update)
    await store.flush()
    assert [u async for u in store.history(record.session_id)] == updates
    assert len([u async for u in store.history(other.session_id)]) == 1000
    assert [u async for u in store.history("sess_nope")] == []


async def test_updates_move_the_session_to_the_front_of_the_list(store: SessionStore) -> None:
    first = await store.create("/w")
    second = await store.create("/w")
    assert [r.session_id for r in (await store.list()).sessions] == [second.session_id, first.session_id]
    await store.set_title(first.session_id, "now newest")
    page = await store.list()
    assert [r.session_id for r in page.sessions] == [first.session_id, second.session_id]
    assert page.next_cursor is None


async def test_list_filters_by_cwd_and_pages_newest_first_with_opaque_cursors(store: SessionStore) -> None:
    made = [await store.create("/a" if n % 2 else "/b") for n in range(7)]
    in_a = [r.session_id for r in reversed(made) if r.cwd == "/a"]
    seen: list[str] = []
    cursor = None
    while True:
        page = await store.list(cwd="/a", cursor=cursor, limit=2)
        seen += [r.session_id for r in page.sessions]
        assert all(r.cwd == "/a" for r in page.sessions)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == in_a
    assert (await store.list(cwd="/nowhere")).sessions == []
    with pytest.raises(InvalidCursor) as raised:
        await store.list(cursor="not-a-cursor")
    assert raised.value.code == -32602


async def test_settings_change_and_unknown_ids_raise(store: SessionStore) -> None:
    record = await store.create("/w", config={"a": 1})
    sid = record.session_id
    await store.set_mode(sid, "plan")
    await store.set_config(sid, "b", "two")
    await store.set_mcp_servers(sid, [{"type": "http", "name": "h", "url": "http://x", "headers": []}])
    await store.update(sid, additional_directories=["/x"])
    got = await store.require(sid)
    assert (got.mode, dict(got.config), got.additional_directories) == ("plan", {"a": 1, "b": "two"}, ("/x",))
    assert got.mcp_servers[0]["type"] == "http"
    assert got.updated > record.updated
    await store.set_title(sid, None)
    assert (await store.require(sid)).title is None
    with pytest.raises(UnknownSession):
        await store.set_title("sess_nope", "x")
    with pytest.raises(TypeError, match="cannot change"):
        await store.update(sid, created=0)


async def test_archive_hides_from_the_default_listing(store: SessionStore) -> None:
    kept = await store.create("/w")
    hidden = await store.create("/w")
    await store.archive(hidden.session_id)
    assert [r.session_id for r in (await store.list()).sessions] == [kept.session_id]
    assert [r.session_id for r in (await store.list(archived="only")).sessions] == [hidden.session_id]
    assert len((await store.list(archived="include")).sessions) == 2
    await store.unarchive(hidden.session_id)
    assert len((await store.list()).sessions) == 2


async def test_fork_copies_settings_and_history_and_leaves_the_source(store: SessionStore) -> None:
    source = await store.create("/w", mode="plan", title="Src", mcp_servers=[{"name": "a"}])
    await store.append(source.session_id, b'{"n":1}')
    fork = await store.fork(source.session_id, "/elsewhere")
    assert fork.session_id != source.session_id
    assert (fork.cwd, fork.mode, fork.title, fork.parent_id) == (
        "/elsewhere",
        "plan",
        "Src",
        source.session_id,
    )
    assert fork.mcp_servers == source.mcp_servers
    await store.append(fork.session_id, b'{"n":2}')
    assert [u async for u in store.history(fork.session_id)] == [b'{"n":1}', b'{"n":2}']
    assert [u async for u in store.history(source.session_id)] == [b'{"n":1}']
    with pytest.raises(UnknownSession):
        await store.fork("sess_nope", "/w")


async def test_delete_forgets_the_session_and_its_history(store: SessionStore) -> None:
    record = await store.create("/w")
    await store.append(record.session_id, b"{}")
    assert await store.delete(record.session_id) is True
    assert await store.get(record.session_id) is None
    assert [u async for u in store.history(record.session_id)] == []
    assert (await store.list()).sessions == []
    assert await store.delete(record.session_id) is False


async def test_status_is_open_while_claimed_here_and_saved_otherwise(store: SessionStore) -> None:
    record = await store.create("/w")
    assert await store.status(record.session_id) == "saved"
    await store.open(record.session_id)
    assert await store.status(record.session_id) == "open"
    await store.close(record.session_id)
    assert await store.status(record.session_id) == "saved"
    assert await store.status("sess_nope") is None


async def test_a_second_store_on_the_same_database_sees_the_sessions(store_url: str) -> None:
    if store_url == "memory:":
        pytest.skip("a memory store is its own database")
    async with open_store(store_url) as one, open_store(store_url) as two:
        record = await one.create("/w", title="shared")
        await one.append(record.session_id, b'{"n":1}')
        await one.open(record.session_id)
        assert (await two.require(record.session_id)).title == "shared"
        assert [u async for u in two.history(record.session_id)] == [b'{"n":1}']
        assert await one.status(record.session_id) == "open"
        assert await two.status(record.session_id) == "saved"


async def test_the_route_to_the_process_holding_a_lease_is_shared_by_postgres_alone(store_url: str) -> None:
    async with open_store(store_url) as one, open_store(store_url) as two:
        one.route = {"acpio-server": "a"}
        record = await one.create("/w")
        await one.open(record.session_id)
        assert await one.route_of(record.session_id) is None  # held here: no need to go elsewhere
        # only a database several servers share can tell where a session runs
        shared = store_url.startswith("postgresql")
        assert await two.route_of(record.session_id) == ({"acpio-server": "a"} if shared else None)
        await two.open(record.session_id)  # taken over: the lease names the new holder's route (none)
        assert await one.route_of(record.session_id) is None
        await two.close(record.session_id)
        assert await one.route_of(record.session_id) is None


def test_open_store_urls() -> None:
    """The SQLite URLs: tests/store/test_sqlite_files.py."""
    from acpio.store import MemoryStore, PostgresStore

    assert isinstance(open_store("memory:"), MemoryStore)
    assert isinstance(open_store("postgresql://u@h/db"), PostgresStore)
    for bad in ("mysql://x", "sqlite://relative/x.db", "sqlite://", "sqlite:///", "/just/a/path"):
        with pytest.raises(ValueError, match="Cannot open the session store"):
            open_store(bad)


def test_a_record_is_frozen() -> None:
    record = SessionRecord(session_id="s", cwd="/w")
    with pytest.raises(AttributeError):
        record.title = "x"  # type: ignore[misc]


async def test_sqlite_keeps_a_burst_in_one_row_and_reads_each_update_back(tmp_path: Path) -> None:
    import sqlite3

    from acpio.store import SqliteStore

    async with SqliteStore(tmp_path / "s.db") as store:
        one, two = await store.create("/w"), await store.create("/w")
        for n in range(300):  # more than a burst: two transactions
            store.append_soon(one.session_id if n % 100 < 90 else two.session_id, b'{"n":%d}' % n)
        await store.flush()
        expected_one = [b'{"n":%d}' % n for n in range(300) if n % 100 < 90]
        assert [u async for u in store.history(one.session_id)] == expected_one
        assert len([u async for u in store.history(two.session_id)]) == 30
        with pytest.raises(ValueError, match="NUL"):
            store.append_soon(one.session_id, b'{"a":1}\x00')
    rows = sqlite3.connect(tmp_path / "s.db").execute("SELECT count(*) FROM updates").fetchone()[0]
    assert rows < 20  # runs of one session's updates share a row
