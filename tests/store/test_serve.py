"""serve_sessions on the wire: one call serves the session methods from a store and records what is sent.

Every test runs against the memory, SQLite and PostgreSQL stores (the ``store`` fixture).
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from acpio import Agent
from acpio.jsonrpc import Builder, Connection
from acpio.jsonrpc.handlers import message_type_from
from acpio.schema import (
    AgentMessageChunk,
    PromptRequest,
    PromptResponse,
    SessionMode,
    SessionModeState,
    SessionNotification,
    StopReason,
    TextContent,
)
from acpio.store import SessionRecord, SessionSetup, SessionStore, StoredSessions, serve_sessions
from acpio.store.memory import MemoryStore
from acpio.testing import WirePeer, serving

INIT = {"protocolVersion": 1, "clientCapabilities": {}}


def echo_agent(
    store: SessionStore, *, unstable: bool = False, **hooks: Any
) -> tuple[Builder, StoredSessions]:
    """An agent whose sessions come from ``store``; a prompt's text comes back as one update per word,
    with an unknown field in each, as a future agent might send."""
    app = Agent.builder(name="echo", unstable=unstable)
    sessions = serve_sessions(app, store, **hooks)

    @app.on_request
    async def prompt(req: PromptRequest, cx: Connection) -> PromptResponse:
        for block in req.prompt:
            assert isinstance(block, TextContent)
            for word in block.text.split():
                cx.send_notification(
                    "session/update",
                    {
                        "sessionId": req.session_id,
                        "update": {
                            "sessionUpdate": "agent_message_chunk",
                            "content": {"type": "text", "text": word},
                        },
                        "x-future": [1, {"deep": None}],
                    },
                )
        cx.send_notification(
            SessionNotification(
                session_id=req.session_id, update=AgentMessageChunk(content=TextContent(text="!"))
            )
        )
        return PromptResponse(stop_reason=StopReason.END_TURN)

    return app, sessions


async def call(peer: WirePeer, method: str, params: Any, seen: list[Any] | None = None) -> Any:
    return await peer.response_to(peer.request(method, params), seen)


async def new_session(peer: WirePeer, cwd: str = "/work") -> str:
    answer = await call(peer, "session/new", {"cwd": cwd, "mcpServers": []})
    return str(answer["result"]["sessionId"])


async def test_initialize_advertises_exactly_the_served_session_capabilities(store: SessionStore) -> None:
    app, sessions = echo_agent(store)
    async with serving(app) as peer:
        caps = (await call(peer, "initialize", INIT))["result"]["agentCapabilities"]
    assert caps["loadSession"] is True
    assert caps["sessionCapabilities"] == {"list": {}, "resume": {}, "close": {}, "delete": {}}
    expected = sessions.agent_capabilities().to_wire()
    assert expected["sessionCapabilities"] == caps["sessionCapabilities"]

    app, _ = echo_agent(store, unstable=True)
    async with serving(app) as peer:
        caps = (await call(peer, "initialize", INIT))["result"]["agentCapabilities"]
    assert set(caps["sessionCapabilities"]) == {
        "list",
        "resume",
        "close",
        "delete",
        "fork",
        "archive",
        "status",
        "title",
    }


async def test_load_replays_every_update_as_sent_then_answers(store: SessionStore) -> None:
    app, _ = echo_agent(store)
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        sid = await new_session(peer)
        turn: list[Any] = []
        await call(
            peer, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "a b c"}]}, turn
        )
    sent = [frame["params"] for frame in turn]
    assert len(sent) == 4
    assert sent[0]["x-future"] == [1, {"deep": None}]

    app, _ = echo_agent(store)  # a new agent on the same store: as after a restart
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        replay: list[Any] = []
        answer = await call(
            peer, "session/load", {"sessionId": sid, "cwd": "/work", "mcpServers": []}, replay
        )
        assert answer["result"] == {}
        assert [frame["method"] for frame in replay] == ["session/update"] * 4
        assert [frame["params"] for frame in replay] == sent  # unknown fields and all
        # Loading again replays the same: the replay itself was not recorded a second time.
        replay2: list[Any] = []
        await call(peer, "session/load", {"sessionId": sid, "cwd": "/work", "mcpServers": []}, replay2)
        assert [frame["params"] for frame in replay2] == sent


async def test_resume_replays_nothing(store: SessionStore) -> None:
    app, _ = echo_agent(store)
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        sid = await new_session(peer)
        await call(peer, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}]})
        before: list[Any] = []
        answer = await call(
            peer, "session/resume", {"sessionId": sid, "cwd": "/work", "mcpServers": []}, before
        )
        assert answer["result"] == {}
        assert before == []


async def test_unknown_ids_get_the_spec_errors(store: SessionStore) -> None:
    app, _ = echo_agent(store, unstable=True)
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        for method, extra in [
            ("session/load", {"cwd": "/w", "mcpServers": []}),
            ("session/resume", {"cwd": "/w", "mcpServers": []}),
            ("session/close", {}),
            ("session/fork", {"cwd": "/w"}),
            ("session/archive", {}),
            ("session/unarchive", {}),
            ("session/status", {}),
            ("session/set_title", {"title": "t"}),
        ]:
            answer = await call(peer, method, {"sessionId": "sess_gone", **extra})
            assert answer["error"]["code"] == -32002, (method, answer)
            assert answer["error"]["data"] == {"sessionId": "sess_gone"}, method
        assert (await call(peer, "session/delete", {"sessionId": "sess_gone"}))["result"] == {}


async def test_setup_refuses_a_relative_cwd_or_another_cwd(store: SessionStore) -> None:
    app, _ = echo_agent(store)
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        assert (await call(peer, "session/new", {"cwd": "rel", "mcpServers": []}))["error"]["code"] == -32602
        sid = await new_session(peer, "/work")
        answer = await call(peer, "session/load", {"sessionId": sid, "cwd": "/other", "mcpServers": []})
        assert answer["error"]["code"] == -32602
        assert "/work" in answer["error"]["message"]


async def test_list_pages_filters_and_omits_deleted_sessions(store: SessionStore) -> None:
    app, _ = echo_agent(store)
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        ids = [await new_session(peer, "/a" if n % 2 else "/b") for n in range(5)]
        everything = (await call(peer, "session/list", {}))["result"]
        assert [s["sessionId"] for s in everything["sessions"]] == ids[::-1]
        assert "nextCursor" not in everything
        assert all(s["updatedAt"].endswith("Z") and "archived" not in s for s in everything["sessions"])
        in_a = (await call(peer, "session/list", {"cwd": "/a"}))["result"]["sessions"]
        assert [s["sessionId"] for s in in_a] == [ids[3], ids[1]]
        assert (await call(peer, "session/list", {"cwd": "/none"}))["result"] == {"sessions": []}
        bad = await call(peer, "session/list", {"cursor": "garbage"})
        assert bad["error"]["code"] == -32602
        assert (await call(peer, "session/delete", {"sessionId": ids[0]}))["result"] == {}
        listed = (await call(peer, "session/list", {}))["result"]["sessions"]
        assert ids[0] not in [s["sessionId"] for s in listed]
        assert (await call(peer, "session/delete", {"sessionId": ids[0]}))["result"] == {}


async def test_list_pages_with_a_cursor(store: SessionStore) -> None:
    for n in range(60):
        await store.create("/p", title=f"s{n}")
    app, _ = echo_agent(store)
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        first = (await call(peer, "session/list", {}))["result"]
        assert len(first["sessions"]) == 50
        second = (await call(peer, "session/list", {"cursor": first["nextCursor"]}))["result"]
        assert len(second["sessions"]) == 10
        assert "nextCursor" not in second
        titles = [s["title"] for s in first["sessions"] + second["sessions"]]
        assert titles == [f"s{n}" for n in reversed(range(60))]


async def test_close_calls_the_hook_and_keeps_the_session(store: SessionStore) -> None:
    closed: list[str] = []

    async def on_close(session_id: str) -> None:
        closed.append(session_id)

    app, _ = echo_agent(store, on_close=on_close)
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        sid = await new_session(peer)
        assert (await call(peer, "session/close", {"sessionId": sid}))["result"] == {}
        assert closed == [sid]
        await call(peer, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "late"}]})
        assert [s["sessionId"] for s in (await call(peer, "session/list", {}))["result"]["sessions"]] == [sid]
    assert [u async for u in store.history(sid)] == []  # not recorded: the session was closed


async def test_unstable_fork_archive_status_and_title(store: SessionStore) -> None:
    app, _ = echo_agent(store, unstable=True)
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        sid = await new_session(peer)
        await call(peer, "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "x"}]})
        assert (await call(peer, "session/status", {"sessionId": sid}))["result"] == {"status": "open"}
        fork = (await call(peer, "session/fork", {"sessionId": sid, "cwd": "/f"}))["result"]["sessionId"]
        replay: list[Any] = []
        await call(peer, "session/load", {"sessionId": fork, "cwd": "/f", "mcpServers": []}, replay)
        assert [f["params"]["sessionId"] for f in replay] == [fork, fork]
        title = await call(peer, "session/set_title", {"sessionId": sid, "title": "  My   work "})
        assert title["result"] == {"title": "My work"}
        empty = await call(peer, "session/set_title", {"sessionId": sid, "title": "   "})
        assert empty["error"]["code"] == -32602
        assert (await call(peer, "session/archive", {"sessionId": sid}))["result"] == {}
        assert (await call(peer, "session/status", {"sessionId": sid}))["result"] == {"status": "saved"}
        listed = (await call(peer, "session/list", {}))["result"]["sessions"]
        assert [s["sessionId"] for s in listed] == [fork]
        assert listed[0]["archived"] is False
        only = (await call(peer, "session/list", {"archived": "only"}))["result"]["sessions"]
        assert [(s["sessionId"], s["title"], s["archived"]) for s in only] == [(sid, "My work", True)]
        assert (await call(peer, "session/unarchive", {"sessionId": sid}))["result"] == {}
        assert len((await call(peer, "session/list", {}))["result"]["sessions"]) == 2


async def test_a_new_title_reaches_the_open_session_and_its_history(store: SessionStore) -> None:
    app, _ = echo_agent(store, unstable=True)
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        sid = await new_session(peer)
        seen: list[Any] = []
        await call(peer, "session/set_title", {"sessionId": sid, "title": "Fix the parser"}, seen)
        [info] = [frame["params"] for frame in seen]
        assert info["sessionId"] == sid
        assert info["update"]["sessionUpdate"] == "session_info_update"
        assert info["update"]["title"] == "Fix the parser"
        assert info["update"]["updatedAt"] <= (await store.require(sid)).updated_at  # its own update moves it
        await call(peer, "session/close", {"sessionId": sid})
        closed: list[Any] = []
        await call(peer, "session/set_title", {"sessionId": sid, "title": "Closed now"}, closed)
        assert closed == []  # not open anywhere: the title is stored, nothing is sent
        replay: list[Any] = []
        await call(peer, "session/load", {"sessionId": sid, "cwd": "/work", "mcpServers": []}, replay)
        assert [frame["params"] for frame in replay] == [info]


async def test_the_open_hook_fills_the_setup_answers_and_mcp_servers_are_kept(store: SessionStore) -> None:
    opened: list[tuple[str, str]] = []
    modes = SessionModeState(current_mode_id="chat", available_modes=[SessionMode(id="chat", name="Chat")])

    async def on_open(record: SessionRecord, method: str, cx: Connection) -> SessionSetup:
        opened.append((record.session_id, method))
        return SessionSetup(modes=modes)

    app, _ = echo_agent(store, on_open=on_open)
    server = {"name": "fs", "command": "/bin/fs", "args": [], "env": [{"name": "A", "value": "1"}]}
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        answer = (await call(peer, "session/new", {"cwd": "/w", "mcpServers": [server]}))["result"]
        sid = answer["sessionId"]
        assert answer["modes"]["currentModeId"] == "chat"
        assert (await store.require(sid)).mcp_servers == (server,)
        resumed = await call(peer, "session/resume", {"sessionId": sid, "cwd": "/w", "mcpServers": []})
        assert resumed["result"]["modes"]["currentModeId"] == "chat"
        assert (await store.require(sid)).mcp_servers == ()  # the client's list on resume is the full list
    assert opened == [(sid, "session/new"), (sid, "session/resume")]


async def test_the_end_of_the_connection_closes_its_sessions(store: SessionStore) -> None:
    closed: list[str] = []

    async def on_close(session_id: str) -> None:
        closed.append(session_id)

    app, sessions = echo_agent(store, on_close=on_close, unstable=True)
    async with serving(app) as peer:
        await call(peer, "initialize", INIT)
        sid = await new_session(peer)
        assert sessions.is_open(sid)
    assert closed == [sid]
    assert not sessions.is_open(sid)
    assert await store.status(sid) == "saved"


async def test_a_connection_that_fails_closes_its_sessions_too(store: SessionStore) -> None:
    closed: list[str] = []
    all_closed = asyncio.Event()

    async def on_close(session_id: str) -> None:
        closed.append(session_id)
        all_closed.set()

    app, sessions = echo_agent(store, on_close=on_close, unstable=True)
    fail = asyncio.Event()
    opened: list[str] = []

    async def breaks(cx: Connection) -> None:
        await fail.wait()
        raise OSError("the transport broke")

    async def open_a_session_then_fail() -> None:
        async with serving(app.with_spawned(breaks)) as peer:
            await call(peer, "initialize", INIT)
            opened.append(await new_session(peer))
            assert await store.status(opened[0]) == "open"
            fail.set()
            await peer.recv_raw()  # the end of the connection's output

    with pytest.raises(OSError, match="the transport broke"):
        await open_a_session_then_fail()
    async with asyncio.timeout(5):
        await all_closed.wait()
    assert closed == opened
    assert not sessions.is_open(opened[0])
    assert await store.status(opened[0]) == "saved"


async def test_a_broken_database_fails_the_request_with_its_path_and_the_agent_goes_on(tmp_path: Any) -> None:
    from acpio.store import SqliteStore

    path = tmp_path / "sessions.db"
    path.write_bytes(b"this is not a database" * 100)
    app, _ = echo_agent(SqliteStore(path))

    @app.on_request
    async def ping(req: PromptRequest) -> PromptResponse:
        return PromptResponse(stop_reason=StopReason.END_TURN)

    async with serving(app) as peer:
        assert "result" in await call(peer, "initialize", INIT)
        answer = await call(peer, "session/new", {"cwd": "/w", "mcpServers": []})
        assert answer["error"]["code"] == -32603
        assert str(path) in orjson.dumps(answer["error"]).decode()
        assert "result" in await call(peer, "initialize", INIT)  # still serving


def test_the_engine_hook_is_typed() -> None:
    app = Agent.builder()
    seen: list[str] = []

    @app.on_send_notification
    def watch(cx: Connection, method: str, params: Any) -> None:
        seen.append(method)

    assert watch is not None


@pytest.mark.parametrize("unstable", [False, True])
def test_serve_sessions_reads_the_unstable_switch_off_the_builder(unstable: bool) -> None:
    from acpio.store import MemoryStore

    sessions = serve_sessions(Agent.builder(unstable=unstable), MemoryStore())
    assert sessions.unstable is unstable


@pytest.mark.parametrize("unstable", [False, True], ids=["stable", "unstable"])
def test_each_handler_is_named_by_the_method_its_message_carries(unstable: bool) -> None:
    """``handlers()`` is how an app registers each one for its method: the name must be the message's."""
    handlers = StoredSessions(MemoryStore(), unstable=unstable).handlers()
    assert {method: message_type_from(fn, "request").METHOD for method, fn in handlers.items()} == {
        method: method for method in handlers
    }
    assert len(handlers) == (11 if unstable else 6)
