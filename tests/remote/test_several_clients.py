"""Several clients on one session (unstable ``_acpio/session/attach``): observers, over both transports."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
import websockets

from acpio import Client, InvalidParams, InvalidRequest, ResourceNotFound, SessionConnection
from acpio import schema as acp
from acpio.app import AgentApp, Turn
from acpio.remote import Limits, RemoteAgent, RemoteServer
from acpio.session import (
    AttachedTurnEnded,
    AttachSessionRequest,
    ObservedSession,
    SessionEnded,
    observe_session,
)

pytest.importorskip("uvicorn")


def gated_app(gate: asyncio.Event, store: str | None = None) -> AgentApp:
    """Says three words per turn; a prompt "wait" waits for ``gate`` after the first."""
    app = AgentApp("gated", unstable=True, store=store)

    @app.prompt
    async def prompt(turn: Turn) -> None:
        await turn.say(f"{turn.text}:1 ")
        if turn.text == "wait":
            await gate.wait()
        await turn.say(f"{turn.text}:2 ")
        await turn.say(f"{turn.text}:3")

    return app


def texts(notifications: list[acp.SessionNotification]) -> list[tuple[str, str]]:
    """Each update as (kind, text): ``user`` for the prompts, ``agent`` for the replies."""
    found: list[tuple[str, str]] = []
    for notification in notifications:
        update = notification.update
        assert isinstance(update, acp.UserMessageChunk | acp.AgentMessageChunk), update
        assert isinstance(update.content, acp.TextContent)
        kind = "user" if isinstance(update, acp.UserMessageChunk) else "agent"
        found.append((kind, update.content.text))
    return found


def turn_of(text: str) -> list[tuple[str, str]]:
    return [("user", text), ("agent", f"{text}:1 "), ("agent", f"{text}:2 "), ("agent", f"{text}:3")]


async def connected(url: str, main: Callable[[SessionConnection], Awaitable[Any]]) -> Any:
    async def run(cx: SessionConnection) -> Any:
        answer = await cx.send_request(acp.InitializeRequest(protocol_version=1))
        assert answer.agent_capabilities is not None
        roles = (answer.agent_capabilities.meta or {})["acpio"]["attach"]["roles"]
        assert roles == ["observer", "controller"]
        return await main(cx)

    return await Client.builder().connect_with(RemoteAgent(url), run)


@pytest.mark.parametrize("scheme", ["ws", "http"], ids=["websocket", "streamable-http"])
@pytest.mark.parametrize("store", [None, "memory:"], ids=["no-store", "store"])
async def test_an_observer_sees_the_replay_then_every_update_live(store: str | None, scheme: str) -> None:
    gate = asyncio.Event()
    async with RemoteServer(gated_app(gate, store), port=0) as server:
        url = server.url.replace("http", scheme, 1)
        attached: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        observer_ready = asyncio.Event()
        observer_left = asyncio.Event()

        async def owner(cx: SessionConnection) -> None:
            async with cx.build_session(Path.cwd()).start_session() as session:
                session.send_prompt("first")
                assert await session.read_to_string() == "first:1 first:2 first:3"
                session.send_prompt("wait")
                first = await session.read_update()
                assert first.text == "wait:1 "  # type: ignore[union-attr]
                attached.set_result(session.session_id)
                await observer_ready.wait()  # attached mid-turn
                gate.set()
                assert await session.read_to_string() == "wait:2 wait:3"
                session.send_prompt("third")
                assert await session.read_to_string() == "third:1 third:2 third:3"
                await observer_left.wait()
                # the observer's leaving did not end the session
                session.send_prompt("fourth")
                assert await session.read_to_string() == "fourth:1 fourth:2 fourth:3"
                assert session.stop_reason == "end_turn"

        async def observer(cx: SessionConnection) -> None:
            session_id = await attached
            watched = await observe_session(cx, session_id)
            assert watched.running
            assert texts(watched.replay) == [*turn_of("first"), ("user", "wait"), ("agent", "wait:1 ")]
            observer_ready.set()
            updates, ended = await watched.read_turn()
            assert texts(updates) == [("agent", "wait:2 "), ("agent", "wait:3")]
            assert ended.stop_reason == "end_turn"
            # an observer may not drive the session
            with pytest.raises(InvalidRequest, match="observer"):
                await cx.send_request(acp.PromptRequest(session_id=session_id, prompt=[]))
            updates, ended = await watched.read_turn()
            assert texts(updates) == turn_of("third")
            assert (ended.session_id, ended.stop_reason, ended.error) == (session_id, "end_turn", None)

        async def watching() -> None:
            await connected(url, observer)
            observer_left.set()

        async with asyncio.timeout(20):
            watcher = asyncio.ensure_future(watching())
            await connected(url, owner)
            await watcher
            session_id = attached.result()
            if store is not None:  # what the observer was sent is not recorded a second time

                async def load(cx: SessionConnection) -> list[acp.SessionNotification]:
                    start = cx.build_session_load(session_id, Path.cwd()).start_session()
                    async with start as session:
                        return [m.notification for m in session.history if m.notification is not None]

                loaded = await connected(url, load)
                turns = [*turn_of("first"), *turn_of("wait"), *turn_of("third"), *turn_of("fourth")]
                assert texts(loaded) == turns


async def test_a_detached_observer_gets_nothing_more_and_the_session_closing_ends_a_watch() -> None:
    gate = asyncio.Event()
    gate.set()
    async with RemoteServer(gated_app(gate), port=0) as server:
        url = server.url.replace("http", "ws", 1)
        opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        watching = asyncio.Event()
        owner_done = asyncio.Event()
        ended: list[BaseException] = []

        async def owner(cx: SessionConnection) -> None:
            async with cx.build_session(Path.cwd()).start_session() as session:
                session.send_prompt("one")
                await session.read_to_string()
                opened.set_result(session.session_id)
                await watching.wait()
                session.send_prompt("two")
                await session.read_to_string()
            owner_done.set()

        async def observers(first: SessionConnection) -> None:
            session_id = await opened

            async def second(cx: SessionConnection) -> None:
                kept: ObservedSession = await observe_session(cx, session_id)
                dropped = await observe_session(first, session_id)
                assert texts(dropped.replay) == turn_of("one") == texts(kept.replay)
                assert not kept.running
                await dropped.detach()
                watching.set()
                updates, turn_end = await kept.read_turn()
                assert texts(updates) == turn_of("two")
                assert isinstance(turn_end, AttachedTurnEnded)
                with pytest.raises(SessionEnded) as caught:  # the owner left: the session closed
                    await kept.read()
                ended.append(caught.value)
                await owner_done.wait()

            await connected(url, second)

        async with asyncio.timeout(20):
            watcher = asyncio.ensure_future(connected(url, observers))
            await connected(url, owner)
            await watcher
        assert len(ended) == 1
        assert "was closed at the agent" in str(ended[0])


async def test_attaching_to_a_session_not_open_here_says_what_to_do() -> None:
    async with RemoteServer(gated_app(asyncio.Event()), port=0) as server:

        async def attach(cx: SessionConnection) -> None:
            with pytest.raises(ResourceNotFound, match="session/load"):
                await observe_session(cx, "sess_nowhere")
            owner = AttachSessionRequest(session_id="sess_nowhere", role="owner")
            with pytest.raises(InvalidParams, match="attach as one of observer, controller"):
                await cx.send_request(owner)

        await connected(server.url.replace("http", "ws", 1), attach)


@pytest.mark.slow
async def test_an_observer_that_stops_reading_is_cut_off_and_holds_no_turn_back() -> None:
    app = AgentApp("flood", unstable=True)
    chunk = "x" * 8192

    @app.prompt
    async def flood(turn: Turn) -> None:
        for _ in range(1000):  # 8 MB: more than the sockets' buffers hold
            await turn.say(chunk)

    limits = Limits(max_buffered=64 * 1024, stall_timeout=0.5)
    async with (
        RemoteServer(app, port=0, limits=limits) as server,
        asyncio.timeout(60),  # a guard against a hang: 8 MB over websockets takes seconds under load
        websockets.connect(server.url.replace("http", "ws", 1), max_size=None) as stuck,
    ):

        async def owner(cx: SessionConnection) -> None:
            async with cx.build_session(Path.cwd()).start_session() as session:
                initialize = {"protocolVersion": 1}
                await stuck.send(
                    orjson.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize})
                )
                await stuck.recv()
                attach = {"sessionId": session.session_id, "role": "observer"}
                await stuck.send(
                    orjson.dumps(
                        {"jsonrpc": "2.0", "id": 1, "method": "_acpio/session/attach", "params": attach}
                    )
                )
                assert orjson.loads(await stuck.recv())["result"] == {"running": False}
                # the observer reads nothing more; the turn is not held back by it
                session.send_prompt("go")
                assert await session.read_to_string() == chunk * 1000

        await connected(server.url.replace("http", "ws", 1), owner)
        # the stuck observer's connection was closed too (once the server gave up its close handshake)
        await server.listener.wait_drained()
