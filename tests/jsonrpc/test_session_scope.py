"""Dynamic handlers scoped to one session (``session_scope``): indexed by sessionId, order kept.

The chain offers a message to the scoped handlers of its own session only, so what one message costs
does not grow with the sessions open on the connection (issue 19: 10,000 sessions on one connection).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from typing import Any

from acpio import Agent, Client, SessionConnection
from acpio import schema as acp
from acpio.jsonrpc import Connection, Dispatch, RequestDispatch, Unhandled, UntypedRole

from ._support import serving


class Recorder:
    """A dynamic handler that records each message it is asked about, and claims what it is told to."""

    def __init__(self, name: str, log: list[tuple[str, Any]], *, scope: str | None, claim: bool) -> None:
        self.name = name
        self.log = log
        self.claim = claim
        self.asked = 0
        if scope is not None:
            self.session_scope = scope

    def accepts(self, message: Dispatch) -> bool:
        self.asked += 1
        scope = getattr(self, "session_scope", None)
        return scope is None or message.session_id == scope

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        self.log.append((self.name, message.params.get("n") if isinstance(message.params, dict) else None))
        if not self.claim:
            return Unhandled(message)
        if isinstance(message, RequestDispatch):
            message.responder.respond({"handled_by": self.name})
        return None


def _untyped_server(connections: list[Connection]) -> Any:
    app = UntypedRole.builder()

    @app.on_dispatch
    async def remember(message: Dispatch, cx: Connection) -> Unhandled:
        if not connections:
            connections.append(cx)
        return Unhandled(message)

    return app


async def test_a_message_is_offered_to_its_own_sessions_handlers_only() -> None:
    connections: list[Connection] = []
    log: list[tuple[str, Any]] = []
    async with serving(_untyped_server(connections)) as peer:
        await peer.request("ping")  # the connection exists
        cx = connections[0]
        handlers = [Recorder(f"s{i}", log, scope=f"s{i}", claim=True) for i in range(2_000)]
        for handler in handlers:
            cx.add_dynamic_handler(handler)
        reply = await peer.request("x", {"sessionId": "s1999", "n": 1})
        assert reply["result"] == {"handled_by": "s1999"}
        # one handler was asked, not 2,000
        assert sum(handler.asked for handler in handlers) == 1
        # no sessionId, or one nobody scoped: none of them is asked; the fallback answers
        assert (await peer.request("x", {"n": 2}))["error"]["code"] == -32601
        assert (await peer.request("x", {"sessionId": "other", "n": 3}))["error"]["code"] == -32601
        assert sum(handler.asked for handler in handlers) == 1
        assert log == [("s1999", 1)]
        assert cx.statistics()["dynamic_handlers"] == 2_000


async def test_scoped_and_unscoped_handlers_meet_a_message_in_the_order_they_were_added() -> None:
    connections: list[Connection] = []
    log: list[tuple[str, Any]] = []
    async with serving(_untyped_server(connections)) as peer:
        await peer.request("ping")
        cx = connections[0]
        cx.add_dynamic_handler(Recorder("first any", log, scope=None, claim=False))
        cx.add_dynamic_handler(Recorder("s", log, scope="s", claim=False))
        cx.add_dynamic_handler(Recorder("t", log, scope="t", claim=False))
        cx.add_dynamic_handler(Recorder("second any", log, scope=None, claim=False))
        last = cx.add_dynamic_handler(Recorder("s again", log, scope="s", claim=True))
        assert (await peer.request("x", {"sessionId": "s", "n": 1}))["result"] == {"handled_by": "s again"}
        assert log == [("first any", 1), ("s", 1), ("second any", 1), ("s again", 1)]
        log.clear()
        last.remove()
        assert (await peer.request("x", {"sessionId": "s", "n": 2}))["error"]["code"] == -32601
        assert log == [("first any", 2), ("s", 2), ("second any", 2)]


async def test_a_removed_scoped_handler_is_not_offered_its_sessions_messages_any_more() -> None:
    connections: list[Connection] = []
    log: list[tuple[str, Any]] = []
    async with serving(_untyped_server(connections)) as peer:
        await peer.request("ping")
        cx = connections[0]
        with cx.add_dynamic_handler(Recorder("s", log, scope="s", claim=True)):
            assert (await peer.request("x", {"sessionId": "s", "n": 1}))["result"] == {"handled_by": "s"}
        assert (await peer.request("x", {"sessionId": "s", "n": 2}))["error"]["code"] == -32601
        assert log == [("s", 1)]
        assert cx.statistics()["dynamic_handlers"] == 0


def _ids_agent() -> Any:
    """An agent whose sessions are numbered and whose every prompt is answered with its session's id."""
    app = Agent.builder(name="ids")
    numbers = itertools.count(1)

    @app.on_request
    async def new_session(req: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=f"session-{next(numbers)}")

    @app.on_request
    async def prompt(req: acp.PromptRequest, responder: Any, cx: Connection) -> acp.PromptResponse:
        chunk = acp.AgentMessageChunk(content=acp.TextContent(text=req.session_id))
        cx.send_notification(acp.SessionNotification(session_id=req.session_id, update=chunk))
        return acp.PromptResponse(stop_reason=acp.StopReason.END_TURN)

    return app


async def test_many_sessions_on_one_client_connection_each_read_their_own_updates() -> None:
    # start_session()'s routers are scoped: 300 sessions open at once, each reads only its own text.
    count = 300

    async def main(cx: SessionConnection) -> list[str]:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with contextlib.AsyncExitStack() as stack:
            sessions = [
                await stack.enter_async_context(cx.build_session("/").start_session()) for _ in range(count)
            ]
            assert cx.statistics()["dynamic_handlers"] == count
            for session in sessions:
                session.send_prompt("hello")
            texts = [await session.read_to_string() for session in reversed(sessions)]
        assert cx.statistics()["dynamic_handlers"] == 0
        return texts

    texts = await asyncio.wait_for(Client.builder(name="many").connect_with(_ids_agent(), main), 60)
    assert texts == [f"session-{n}" for n in range(count, 0, -1)]
