"""A Client connection parks unclaimed session messages until the session's handler attaches."""

from __future__ import annotations

import asyncio
from typing import Any

from acpio.jsonrpc import Builder, Connection, Dispatch, RequestDispatch, Unhandled
from acpio.roles import Agent, Client
from acpio.schema import InitializeRequest, NewSessionRequest, NewSessionResponse
from acpio.transports.channel import Channel

from ._support import TIMEOUT, WirePeer


def _update(session_id: str, n: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {
            "sessionId": session_id,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": str(n)}},
        },
    }


def _n(message: Dispatch) -> int:
    if message.method == "session/update":
        return int(message.params["update"]["content"]["text"])
    return int(message.params["n"])


class SessionMessages:
    """A dynamic handler for one session: records what it takes, answers requests, wakes waiters."""

    def __init__(self, session_id: str, expect: int = 0) -> None:
        self.session_id = session_id
        self.seen: list[tuple[str, int]] = []
        self.peers: set[Any] = set()
        self.expect = expect
        self.complete = asyncio.Event()

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        if message.session_id != self.session_id:
            return Unhandled(message)
        self.seen.append((message.method, _n(message)))
        self.peers.add(message.peer)
        if isinstance(message, RequestDispatch):
            message.responder.respond({"claimedBy": self.session_id})
        if len(self.seen) >= self.expect:
            self.complete.set()
        return None


class _Trickle:
    """A channel end whose reads suspend once each, like reads from a socket: other tasks run between."""

    def __init__(self, inner: Channel) -> None:
        self.inner = inner

    async def receive(self) -> Any:
        await asyncio.sleep(0)  # a scheduling point per frame, not a wait for anything
        return await self.inner.receive()

    def send(self, frame: bytes) -> None:
        self.inner.send(frame)

    async def drain(self) -> None:
        pass

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _run_client(
    main: Any, *, trickle: bool = False, app: Builder | None = None
) -> tuple[asyncio.Task[Any], WirePeer]:
    ours, theirs = Channel.duplex()
    transport: Any = _Trickle(ours) if trickle else ours
    app = app if app is not None else Client.builder()
    return asyncio.create_task(app.connect_with(transport, main)), WirePeer(theirs)


async def _answer_initialize(agent: WirePeer) -> None:
    """Answer the client's ``initialize``: its session/* requests wait for it."""
    request = await agent.recv()
    assert request["method"] == "initialize", request
    agent.send({"jsonrpc": "2.0", "id": request["id"], "result": {"protocolVersion": 1}})


async def _barrier(agent: WirePeer) -> None:
    """Everything the agent sent before is dispatched once the client answers this (-32601)."""
    request_id = agent.request("test/barrier", {})
    reply = await agent.recv()
    assert reply["id"] == request_id, reply
    assert reply["error"]["code"] == -32601, reply


async def test_updates_sent_before_the_session_handler_attaches_are_delivered_in_order() -> None:
    handler = SessionMessages("s1", expect=5)
    attach = asyncio.Event()

    async def main(cx: Connection) -> None:
        await attach.wait()
        cx.add_dynamic_handler(handler)
        async with asyncio.timeout(TIMEOUT):
            await handler.complete.wait()
        assert cx.statistics()["retry_queue"] == 0

    task, agent = await _run_client(main)
    for n in range(3):
        agent.send(_update("s1", n))
    await _barrier(agent)  # the three are parked now
    attach.set()
    for n in range(3, 5):
        agent.send(_update("s1", n))
    async with asyncio.timeout(TIMEOUT):
        await task
    assert handler.seen == [("session/update", n) for n in range(5)]
    assert handler.peers == {Agent()}


async def test_updates_racing_the_session_new_response_are_not_lost() -> None:
    # The agent answers session/new and streams updates at once; the client attaches its session
    # handler only when its main task has seen the response: the early updates wait for it.
    handler = SessionMessages("s1", expect=3)

    async def main(cx: Connection) -> None:
        await cx.send_request(InitializeRequest(protocol_version=1))
        response = await cx.send_request(NewSessionRequest(cwd="/tmp", mcp_servers=[]))
        assert isinstance(response, NewSessionResponse)
        cx.add_dynamic_handler(handler).run_indefinitely()
        async with asyncio.timeout(TIMEOUT):
            await handler.complete.wait()

    task, agent = await _run_client(main)
    await _answer_initialize(agent)
    request = await agent.recv()
    assert request["method"] == "session/new"
    agent.send(_update("s1", 0))  # even before the response
    agent.send({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}})
    agent.send(_update("s1", 1))
    agent.send(_update("s1", 2))
    async with asyncio.timeout(TIMEOUT):
        await task
    assert handler.seen == [("session/update", n) for n in range(3)]


async def test_a_thousand_updates_in_flight_while_attaching_lose_and_reorder_nothing() -> None:
    count = 1000
    handler = SessionMessages("s1", expect=count)
    parked_when_attaching: list[int] = []
    some_parked = asyncio.Event()
    app = Client.builder()

    @app.on_dispatch
    async def watch(message: Dispatch) -> Unhandled:
        if message.method == "session/update" and _n(message) == 300:
            some_parked.set()
        return Unhandled(message)  # on to the role's default handler, which parks it

    async def main(cx: Connection) -> None:
        await cx.send_request(InitializeRequest(protocol_version=1))
        await cx.send_request(NewSessionRequest(cwd="/tmp", mcp_servers=[]))
        await some_parked.wait()
        # The dispatch loop is still reading updates while this runs: the parked ones are replayed
        # to the new handler and the later ones reach it live, all in the agent's order.
        parked_when_attaching.append(cx.statistics()["retry_queue"])
        cx.add_dynamic_handler(handler)
        async with asyncio.timeout(TIMEOUT):
            await handler.complete.wait()

    task, agent = await _run_client(main, trickle=True, app=app)
    await _answer_initialize(agent)
    request = await agent.recv()
    agent.send({"jsonrpc": "2.0", "id": request["id"], "result": {"sessionId": "s1"}})
    for n in range(count):
        agent.send(_update("s1", n))
    async with asyncio.timeout(TIMEOUT):
        await task
    assert handler.seen == [("session/update", n) for n in range(count)]
    assert 300 < parked_when_attaching[0] < count, parked_when_attaching  # really in flight


async def test_parked_requests_are_answered_once_claimed_and_keep_their_order_with_updates() -> None:
    handler = SessionMessages("s1", expect=3)
    attach = asyncio.Event()

    async def main(cx: Connection) -> None:
        await attach.wait()
        cx.add_dynamic_handler(handler)
        async with asyncio.timeout(TIMEOUT):
            await handler.complete.wait()

    task, agent = await _run_client(main)
    agent.send(_update("s1", 0))
    agent.request("session/request_permission", {"sessionId": "s1", "n": 1}, request_id="perm-1")
    agent.send(_update("s1", 2))
    await _barrier(agent)  # no answer to the permission request yet: the barrier's comes first
    attach.set()
    assert await agent.recv() == {"jsonrpc": "2.0", "id": "perm-1", "result": {"claimedBy": "s1"}}
    async with asyncio.timeout(TIMEOUT):
        await task
    assert handler.seen == [("session/update", 0), ("session/request_permission", 1), ("session/update", 2)]


async def test_messages_of_other_sessions_stay_parked_for_their_own_handler() -> None:
    first, second = SessionMessages("s2", expect=1), SessionMessages("s1", expect=2)
    step = asyncio.Event()

    async def main(cx: Connection) -> None:
        await step.wait()
        cx.add_dynamic_handler(first)
        async with asyncio.timeout(TIMEOUT):
            await first.complete.wait()
        assert cx.statistics()["retry_queue"] == 2
        cx.add_dynamic_handler(second)
        async with asyncio.timeout(TIMEOUT):
            await second.complete.wait()
        assert cx.statistics()["retry_queue"] == 0

    task, agent = await _run_client(main)
    agent.send(_update("s1", 0))
    agent.send(_update("s2", 7))
    agent.send(_update("s1", 1))
    await _barrier(agent)
    step.set()
    async with asyncio.timeout(TIMEOUT):
        await task
    assert first.seen == [("session/update", 7)]
    assert second.seen == [("session/update", 0), ("session/update", 1)]


async def test_unclaimed_messages_without_a_session_are_not_parked() -> None:
    async def main(cx: Connection) -> None:
        await done.wait()
        assert cx.statistics()["retry_queue"] == 0

    done = asyncio.Event()
    task, agent = await _run_client(main)
    agent.notify("test/no_session", {"x": 1})
    agent.notify("session/update", {"sessionId": 42})  # not a string: not a session id
    agent.request("test/ask", {"x": 1}, request_id=9)
    reply = await agent.recv()
    assert reply["id"] == 9
    assert reply["error"]["code"] == -32601
    assert reply["error"]["data"] == "test/ask"
    done.set()
    async with asyncio.timeout(TIMEOUT):
        await task


async def test_what_is_still_parked_at_close_gets_the_normal_fallback() -> None:
    release = asyncio.Event()

    async def main(cx: Connection) -> None:
        await release.wait()  # returning closes the connection with the messages still parked

    task, agent = await _run_client(main)
    agent.send(_update("nobody", 0))
    agent.request("session/request_permission", {"sessionId": "nobody", "n": 1}, request_id=5)
    await _barrier(agent)
    release.set()
    reply = await agent.recv()
    assert reply["id"] == 5
    assert reply["error"]["code"] == -32601
    assert reply["error"]["data"] == "session/request_permission"
    async with asyncio.timeout(TIMEOUT):
        await task


class _Pipes:
    """A transport made of two one-way channels, so the peer can end our input and still read."""

    def __init__(self) -> None:
        self.inbound, self.peer_out = Channel.duplex()
        self.outbound, self.peer_in = Channel.duplex()

    async def receive(self) -> Any:
        return await self.inbound.receive()

    def send(self, frame: bytes) -> None:
        self.outbound.send(frame)

    async def drain(self) -> None:
        pass

    async def aclose(self) -> None:
        await self.inbound.aclose()
        await self.outbound.aclose()


async def test_parked_requests_are_answered_when_the_agent_ends_the_input() -> None:
    pipes = _Pipes()
    task = asyncio.create_task(Client.builder().serve(pipes))
    agent_out, agent_in = WirePeer(pipes.peer_out), WirePeer(pipes.peer_in)
    agent_out.request("session/request_permission", {"sessionId": "nobody"}, request_id=3)
    agent_out.request("test/barrier", {}, request_id=4)
    assert (await agent_in.recv())["id"] == 4
    await pipes.peer_out.aclose()  # end of the client's input; its output is still read
    reply = await agent_in.recv()
    assert reply["id"] == 3
    assert reply["error"]["code"] == -32601
    async with asyncio.timeout(TIMEOUT):
        await task
