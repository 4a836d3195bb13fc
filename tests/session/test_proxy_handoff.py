"""Sessions on a proxy: the hand-off to proxy mode (seed 000's guarantee) and the proxy starters.

The proxy is a real :class:`~acpio.roles.Proxy` connection; the raw wire peer plays its conductor:
what the agent sends arrives wrapped in ``_proxy/successor``, what the proxy sends the client goes
out plain. The load test also runs on a plain ``UntypedRole`` connection, which has no default
handler to catch a message that slipped between two handlers: there the hand-off alone must leave
no gap.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from acpio.jsonrpc import Builder, Connection, Responder, UntypedRole
from acpio.roles import Client, Proxy
from acpio.schema import NewSessionRequest, NewSessionResponse
from acpio.session import SessionMessage, build_session, build_session_from

from ._support import TIMEOUT, WirePeer, from_agent, update_frame, wire_connection

TOTAL = 5000
PARAMS: dict[str, Any] = {"cwd": "/work", "mcpServers": []}
ASK = {"sessionId": "s1", "toolCall": {"toolCallId": "t"}, "options": []}


def _n(frame: dict[str, Any]) -> int:
    assert frame["method"] == "session/update", frame
    text: str = frame["params"]["update"]["content"]["text"]
    return int(text)


def _result(request_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


@pytest.mark.parametrize("role", ["proxy", "plain"])
@pytest.mark.parametrize("read_first", [0, 1, 250, 2500])
async def test_handoff_under_load_loses_and_reorders_nothing(
    tmp_path: Path, read_first: int, role: str
) -> None:
    builder: Builder = Proxy.builder(name="proxy") if role == "proxy" else UntypedRole.builder(name="proxy")
    wrap: Callable[[dict[str, Any]], dict[str, Any]] = from_agent if role == "proxy" else dict
    client = Client if role == "proxy" else None
    async with wire_connection(builder) as (cx, peer):
        starting = asyncio.ensure_future(build_session(cx, tmp_path).start_session())
        if role == "proxy":
            request = await peer.recv_for_agent("session/new")
        else:
            request = await peer.recv_request("session/new")
        peer.send(_result(request["id"], {"sessionId": "s1"}))
        async with asyncio.timeout(TIMEOUT):
            session = await starting

        async def agent_streams() -> None:
            # The agent keeps sending while the session switches. Yielding now and then lets the
            # dispatch loop and the session's reader run in between (interleaving, not waiting).
            for n in range(TOTAL):
                peer.send(wrap(update_frame("s1", str(n))))
                if n % 7 == 0:
                    await asyncio.sleep(0)

        streaming = asyncio.ensure_future(agent_streams())
        async with asyncio.timeout(TIMEOUT):
            for _ in range(read_first):
                message = await session.read_update()
                assert isinstance(message, SessionMessage)
                cx.send_proxied_message_to(client, message.dispatch)  # passed on by the proxy itself
            session.proxy_remaining_messages()
            await streaming
            received = [_n(await peer.recv()) for _ in range(TOTAL)]
        assert received == list(range(TOTAL))
        assert not session.active
        with pytest.raises(RuntimeError, match="proxy mode"):
            await session.read_update()


async def test_handoff_forwards_queued_requests_and_routes_their_answers_back(tmp_path: Path) -> None:
    async with wire_connection(Proxy.builder(name="proxy")) as (cx, peer):
        starting = asyncio.ensure_future(build_session(cx, tmp_path).start_session())
        request = await peer.recv_for_agent("session/new")
        peer.send(_result(request["id"], {"sessionId": "s1"}))
        async with asyncio.timeout(TIMEOUT):
            session = await starting
        session.send_prompt("the proxy's own prompt")
        prompt = await peer.recv_for_agent("session/prompt")
        peer.send(from_agent(update_frame("s1", "0")))
        peer.send(from_agent({"id": 41, "method": "session/request_permission", "params": ASK}))
        peer.send(_result(prompt["id"], {"stopReason": "end_turn"}))
        peer.send(from_agent(update_frame("s1", "1")))
        await peer.barrier()  # all four are queued in the session, unread
        session.proxy_remaining_messages()
        assert _n(await peer.recv()) == 0
        forwarded = await peer.recv_request("session/request_permission")
        assert forwarded["params"] == ASK
        assert forwarded["id"] != 41  # a fresh id on this hop
        assert _n(await peer.recv()) == 1  # the stop reason of the proxy's own prompt stays here
        peer.send(_result(forwarded["id"], {"outcome": {"outcome": "cancelled"}}))
        assert await peer.recv() == _result(41, {"outcome": {"outcome": "cancelled"}})
        peer.send(from_agent(update_frame("s1", "2")))
        assert _n(await peer.recv()) == 2


def _proxy_builder(
    start: Callable[[NewSessionRequest, Responder[NewSessionResponse], Connection], Any],
) -> Builder:
    app = Proxy.builder(name="proxy")

    @app.on_request(peer=Client)
    async def new_session(
        req: NewSessionRequest, responder: Responder[NewSessionResponse], cx: Connection
    ) -> None:
        start(req, responder, cx)

    return app


async def _client_opens_session(peer: WirePeer, request_id: Any, session_id: str = "s1") -> None:
    """The client sends session/new; the conductor sees it go to the agent and answers it there."""
    peer.send({"jsonrpc": "2.0", "id": request_id, "method": "session/new", "params": PARAMS})
    forwarded = await peer.recv_for_agent("session/new")
    assert forwarded["params"] == PARAMS
    peer.send(
        [
            _result(forwarded["id"], {"sessionId": session_id, "_meta": {"k": 1}}),
            from_agent(update_frame(session_id, "0")),
        ]
    )


async def test_start_session_proxy_answers_the_client_then_forwards() -> None:
    ids: list[str] = []

    def start(req: NewSessionRequest, responder: Responder[NewSessionResponse], cx: Connection) -> None:
        async def run() -> None:
            ids.append(await build_session_from(cx, req).start_session_proxy(responder))

        cx.spawn(run)

    async with wire_connection(_proxy_builder(start)) as (_, peer):
        await _client_opens_session(peer, "client-1")
        assert await peer.recv() == _result("client-1", {"sessionId": "s1", "_meta": {"k": 1}})
        assert _n(await peer.recv()) == 0
        peer.send(from_agent(update_frame("s1", "1")))
        assert _n(await peer.recv()) == 1
        assert ids == ["s1"]


async def test_on_proxy_session_start_routes_the_very_next_message() -> None:
    started: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    def start(req: NewSessionRequest, responder: Responder[NewSessionResponse], cx: Connection) -> None:
        async def callback(session_id: str) -> None:
            started.set_result(session_id)

        build_session_from(cx, req).on_proxy_session_start(responder, callback)

    async with wire_connection(_proxy_builder(start)) as (_, peer):
        await _client_opens_session(peer, 1)
        assert await peer.recv() == _result(1, {"sessionId": "s1", "_meta": {"k": 1}})
        assert _n(await peer.recv()) == 0
        peer.send(from_agent({"id": 9, "method": "session/request_permission", "params": ASK}))
        forwarded = await peer.recv_request("session/request_permission")
        peer.send(_result(forwarded["id"], {"outcome": {"outcome": "cancelled"}}))
        assert await peer.recv() == _result(9, {"outcome": {"outcome": "cancelled"}})
        async with asyncio.timeout(TIMEOUT):
            assert await started == "s1"


async def test_on_proxy_session_start_passes_a_refusal_and_a_cancellation_on() -> None:
    def start(req: NewSessionRequest, responder: Responder[NewSessionResponse], cx: Connection) -> None:
        build_session_from(cx, req).on_proxy_session_start(responder)

    async with wire_connection(_proxy_builder(start)) as (cx, peer):
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": PARAMS})
        forwarded = await peer.recv_for_agent("session/new")
        peer.send({"jsonrpc": "2.0", "id": forwarded["id"], "error": {"code": -32000, "message": "Log in"}})
        assert await peer.recv() == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {"code": -32000, "message": "Log in"},
        }

        peer.send({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": PARAMS})
        forwarded = await peer.recv_for_agent("session/new")
        peer.send({"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}})
        cancel = await peer.recv_request("$/cancel_request")
        assert cancel["params"] == {"requestId": forwarded["id"]}
        peer.send(
            {"jsonrpc": "2.0", "id": forwarded["id"], "error": {"code": -32800, "message": "Cancelled"}}
        )
        assert (await peer.recv())["error"]["code"] == -32800
        assert cx.statistics()["dynamic_handlers"] == 0


async def test_proxy_sessions_read_only_their_agents_messages(tmp_path: Path) -> None:
    # A client message that happens to carry the session id is not the agent's: it is not queued.
    async with wire_connection(Proxy.builder(name="proxy")) as (cx, peer):
        starting = asyncio.ensure_future(build_session(cx, tmp_path).start_session())
        request = await peer.recv_for_agent("session/new")
        peer.send(_result(request["id"], {"sessionId": "s1"}))
        async with asyncio.timeout(TIMEOUT):
            session = await starting
        peer.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s1"}})
        assert (await peer.recv_for_agent("session/cancel"))["params"] == {"sessionId": "s1"}
        peer.send(from_agent(update_frame("s1", "7")))
        async with asyncio.timeout(TIMEOUT):
            message = await session.read_update()
        assert isinstance(message, SessionMessage)
        assert message.text == "7"
        session.close()
