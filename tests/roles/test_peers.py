"""Which peer a message came from, handlers for one peer, sending to a peer (one connection, raw wire)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest
from pydantic import BaseModel

from acpio.jsonrpc import Connection, Dispatch, Responder, Unhandled
from acpio.roles import SUCCESSOR_METHOD, Agent, Client, Conductor, Proxy, UntypedRole

from ._support import TIMEOUT, WirePeer, serving


class Pong(BaseModel):
    who: str


class Ping(BaseModel):
    METHOD: ClassVar[str] = "test/ping"
    RESPONSE: ClassVar[type[BaseModel]] = Pong
    n: int = 0


class Note(BaseModel):
    METHOD: ClassVar[str] = "test/note"
    text: str


def _wrapped(method: str, params: Any, request_id: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {
        "jsonrpc": "2.0",
        "method": SUCCESSOR_METHOD,
        "params": {"method": method, "params": params},
    }
    if request_id is not None:
        message["id"] = request_id
    return message


async def test_peer_filtered_request_handlers_split_the_same_method_by_source() -> None:
    app = Proxy.builder()

    @app.on_request(peer=Agent)
    async def from_agent(req: Ping) -> Pong:
        return Pong(who=f"agent {req.n}")

    @app.on_request(Ping, peer=Client)
    async def from_client(req: Ping, responder: Responder[Pong], cx: Connection) -> None:
        responder.respond(Pong(who=f"client {req.n}"))

    async with serving(app) as conductor:
        conductor.send(_wrapped("test/ping", {"n": 1}, request_id=7))
        # The answer to a wrapped request is a plain response to the envelope's id.
        assert await conductor.recv() == {"jsonrpc": "2.0", "id": 7, "result": {"who": "agent 1"}}
        conductor.request("test/ping", {"n": 2}, request_id=8)
        assert await conductor.recv() == {"jsonrpc": "2.0", "id": 8, "result": {"who": "client 2"}}


async def test_peer_filtered_notification_handlers_and_dispatch_handlers() -> None:
    seen: list[tuple[str, Any]] = []
    app = Proxy.builder()

    @app.on_notification(peer=Agent)
    async def agent_note(note: Note) -> None:
        seen.append(("agent note", note.text))

    @app.on_notification(Note, peer=Client())
    async def client_note(note: Note, cx: Connection) -> None:
        seen.append(("client note", note.text))

    @app.on_dispatch(peer=Agent)
    async def anything_from_agent(message: Dispatch, cx: Connection) -> None:
        assert message.is_from(Agent)
        assert message.peer == Agent()
        seen.append(("agent dispatch", message.method))

    @app.on_dispatch
    async def anything(message: Dispatch) -> Unhandled:
        assert message.is_from(Client)
        assert not message.is_from(Agent)
        seen.append(("dispatch", message.method))
        return Unhandled(message)

    async with serving(app) as conductor:
        conductor.send(_wrapped("test/note", {"text": "a"}))
        conductor.notify("test/note", {"text": "b"})
        conductor.send(_wrapped("other/thing", {"x": 1}))
        conductor.notify("other/thing", {"x": 2})
        # Nobody claims it: the proxy forwards it to its successor, wrapped.
        assert await conductor.recv() == _wrapped("other/thing", {"x": 2})
    assert seen == [
        ("agent note", "a"),
        ("client note", "b"),
        ("agent dispatch", "other/thing"),
        ("dispatch", "other/thing"),
    ]


async def test_the_classic_registration_forms_still_work_on_a_role_builder() -> None:
    app = Client.builder()

    @app.on_request
    async def a(req: Ping) -> Pong:
        return Pong(who="annotation")

    @app.on_notification(Note)
    async def b(note: Note) -> None:
        pass

    async def c(req: Ping) -> Pong:
        return Pong(who="unreached")

    app.on_request(Ping, c)
    async with serving(app) as agent:
        agent.request("test/ping", {}, request_id=1)
        assert (await agent.recv())["result"] == {"who": "annotation"}
    assert app.statistics()["handlers"] == 3


@pytest.mark.parametrize(
    ("role", "peer", "valid"),
    [
        (Agent, Agent, "Client"),
        (Client, Proxy, "Agent"),
        (Proxy, Conductor, "Client, Agent"),
        (UntypedRole, Agent, "UntypedRole"),
    ],
)
def test_a_handler_for_a_peer_the_role_does_not_have_is_refused_at_registration(
    role: Any, peer: Any, valid: str
) -> None:
    app = role.builder()
    for register in (app.on_request, app.on_notification, app.on_dispatch):
        with pytest.raises(ValueError, match=f"on_.*peer=.*its peers are: {valid}$"):
            register(peer=peer)


@pytest.mark.parametrize(
    ("role", "expected"), [(Client, Agent), (Agent, Client), (Conductor, Proxy), (UntypedRole, UntypedRole)]
)
async def test_every_dispatch_knows_its_peer_on_every_role(role: Any, expected: Any) -> None:
    peers: list[Any] = []
    # The envelope's method, proxy/successor, is unstable: the ACP roles see it only with unstable on.
    app = role.builder() if role is UntypedRole else role.builder(unstable=True)

    @app.on_dispatch
    async def record(message: Dispatch) -> None:
        peers.append(message.peer)

    async with serving(app) as other:
        other.notify("x/y", {"sessionId": "s"})
        other.send(_wrapped("x/y", {}))
        other.notify("x/y", None)
    assert peers == [expected(), expected(), expected()], role


async def test_a_malformed_envelope_reaches_catch_all_handlers_intact() -> None:
    # A10.3, on a proxy: no inner method, so it is not unwrapped and keeps its method and params.
    seen: list[Dispatch] = []
    app = Proxy.builder()

    @app.on_dispatch
    async def catch_all(message: Dispatch) -> None:
        seen.append(message)

    async with serving(app) as conductor:
        conductor.notify(SUCCESSOR_METHOD, {"params": {"x": 1}})
        conductor.request("barrier", None, request_id=1)
    assert next((m.method, m.params) for m in seen) == (SUCCESSOR_METHOD, {"params": {"x": 1}})


# --- sending to a peer ----------------------------------------------------------------------------


async def test_a_proxy_sends_to_its_successor_wrapped_and_to_its_predecessor_plainly() -> None:
    app = Proxy.builder()
    results: asyncio.Queue[Any] = asyncio.Queue()

    @app.on_dispatch(peer=Agent)
    async def responses_from_agent(message: Dispatch) -> Unhandled:
        results.put_nowait(("response dispatch", message.method, message.peer))
        return Unhandled(message)

    async def main(cx: Connection) -> None:
        sent = cx.send_request_to(Agent, Ping(n=5))
        cx.send_notification_to(Client, Note(text="to the client"))
        cx.send_notification_to(Agent, Note(text="to the agent"))
        results.put_nowait(await sent)

    from acpio.transports.channel import Channel

    ours, theirs = Channel.duplex()
    task = asyncio.create_task(app.connect_with(ours, main))
    conductor = WirePeer(theirs)
    request = await conductor.recv()
    assert request == {"jsonrpc": "2.0", "id": request["id"], **_wrapped("test/ping", {"n": 5})}
    assert await conductor.recv() == {
        "jsonrpc": "2.0",
        "method": "test/note",
        "params": {"text": "to the client"},
    }
    assert await conductor.recv() == _wrapped("test/note", {"text": "to the agent"})
    # The answer comes back as a plain response to the envelope's id and reaches the right request.
    conductor.send({"jsonrpc": "2.0", "id": request["id"], "result": {"who": "agent"}})
    async with asyncio.timeout(TIMEOUT):
        assert await results.get() == ("response dispatch", "test/ping", Agent())
        assert await results.get() == Pong(who="agent")
        await task


async def test_cancelling_a_request_to_the_successor_sends_a_plain_cancel_with_the_outer_id() -> None:
    from acpio.errors import RequestCancelled
    from acpio.transports.channel import Channel

    async def main(cx: Connection) -> None:
        sent = cx.send_request_to(Agent, Ping(n=1))
        sent.cancel()
        with pytest.raises(RequestCancelled):
            await sent

    ours, theirs = Channel.duplex()
    task = asyncio.create_task(Proxy.builder().connect_with(ours, main))
    conductor = WirePeer(theirs)
    request = await conductor.recv()
    assert request["method"] == SUCCESSOR_METHOD
    assert await conductor.recv() == {
        "jsonrpc": "2.0",
        "method": "$/cancel_request",
        "params": {"requestId": request["id"]},
    }
    conductor.send(
        {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32800, "message": "Request cancelled"}}
    )
    async with asyncio.timeout(TIMEOUT):
        await task


async def test_sending_to_a_peer_the_role_lacks_names_the_peers() -> None:
    async def client_main(cx: Connection) -> None:
        with pytest.raises(ValueError, match=r"Client cannot send to Client: .*its peers are: Agent"):
            cx.send_request_to(Client, Ping())

    async def proxy_main(cx: Connection) -> None:
        with pytest.raises(ValueError, match="its peers are: Client, Agent"):
            cx.send_notification_to(Conductor, Note(text="x"))

    from acpio.transports.channel import Channel

    async with asyncio.timeout(TIMEOUT):
        await Client.builder().connect_with(Channel.duplex()[0], client_main)
        await Proxy.builder().connect_with(Channel.duplex()[0], proxy_main)
