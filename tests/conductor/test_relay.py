"""Notifications the conductor passes on as bytes reach the next hop exactly as the engine would write them.

The conductor takes a notification written the usual way (``{"jsonrpc":"2.0","method":...,"params":...}``,
plain or in a ``proxy/successor`` envelope) past its connections and splices its bytes into the next
hop's frame; anything written otherwise goes through the connection, decoded and encoded again. The
tests play the client, a proxy and the agent on the raw wire and send every message twice, once in
each spelling: the frames the next hop gets must be the same bytes, in the order sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest

from acpio.conductor import Chain, FileSink
from acpio.conductor.relay import plain_frame, read_notification, wrapped_frame
from acpio.jsonrpc.messages import encode_notification
from acpio.roles import SuccessorEnvelope

from ._support import Peer, RawComponent, raw_client, successor

#: Params that are easy to get wrong when splicing text: nested ``method``/``params`` keys, quotes,
#: braces and escapes inside strings, non-ASCII text, numbers, arrays, empty values, ``_meta``.
PARAMS: list[Any] = [
    {
        "sessionId": "s1",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},
    },
    {"sessionId": "s1", "method": "x", "params": {"method": "y", "params": [1]}, "_meta": {"k": [1, 2]}},
    {
        "text": 'a "quoted" \\ back}slash {"params":1}}',
        "other": "café ☕ \u2028",
        "n": [-0.5, 1e300, 2**63 - 1],
    },
    [1, "two", {"three": None}, [], {}],
    {},
    [],
    {"deep": [[[[[{"a": [[[{"b": True}]]]}]]]]]},
]
#: Methods that are nobody's business in the conductor (its own are never passed on as bytes).
METHODS = ["session/update", "_vendor/custom", "session/cancel"]


def compact(message: dict[str, Any]) -> bytes:
    """As acpio and the TypeScript SDK write a message: the conductor passes it on as bytes."""
    return orjson.dumps(message)


def spaced(message: dict[str, Any]) -> bytes:
    """The same message written with blanks and escapes: the conductor's connection decodes it."""
    return json.dumps(message, separators=(", ", ": ")).encode()


def notification(method: str, params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


def cases() -> list[tuple[str, Any]]:
    return [(METHODS[i % len(METHODS)], params) for i, params in enumerate(PARAMS)]


async def frames(peer: Peer, count: int) -> list[bytes]:
    """The next ``count`` frames ``peer`` receives, as bytes."""
    received = []
    for _ in range(count):
        frame = await peer.recv_raw()
        assert frame is not None
        received.append(frame)
    return received


def assert_pairs_equal(received: list[bytes], expected: list[dict[str, Any]]) -> None:
    """Each message came twice (both spellings): the same bytes each time, the expected value, in order."""
    assert len(received) == 2 * len(expected)
    for index, message in enumerate(expected):
        first, second = received[2 * index], received[2 * index + 1]
        assert first == second, f"message {index}: passed as bytes {first!r}, re-encoded {second!r}"
        assert orjson.loads(first) == message
        assert b"\n" not in first


@asynccontextmanager
async def chain_with_raw_proxy(trace: Path | None = None) -> AsyncIterator[tuple[Peer, Peer, Peer]]:
    """Client, proxy and agent, all played by the test, through an initialized conductor."""
    proxy, agent = RawComponent("raw proxy"), RawComponent("raw agent")
    conductor = Chain.agent("conductor", [proxy, agent]).trace_to(trace)
    async with raw_client(conductor) as client:
        client.request("initialize", {"protocolVersion": 1}, request_id="init")
        me = await proxy.wait_peer()
        init = await me.message_for("proxy/initialize")
        me.request("proxy/successor", successor("initialize", init["params"]), request_id="down")
        far = await agent.wait_peer()
        far.respond(await far.message_for("initialize"), {"protocolVersion": 1})
        me.respond(init, (await me.response_to("down"))["result"])
        assert (await client.response_to("init"))["result"] == {"protocolVersion": 1}
        yield client, me, far


async def test_agent_notifications_reach_proxy_wrapped_and_client_plain_as_the_engine_writes_them() -> None:
    async with chain_with_raw_proxy() as (client, proxy, agent):
        for method, params in cases():
            agent.send(compact(notification(method, params)))
            agent.send(spaced(notification(method, params)))
        wrapped = [notification("proxy/successor", successor(m, p)) for m, p in cases()]
        at_proxy = await frames(proxy, 2 * len(wrapped))
        assert_pairs_equal(at_proxy, wrapped)

        # The proxy passes each envelope's message on to its predecessor, plainly, both ways again.
        for frame in at_proxy[::2]:
            inner = orjson.loads(frame)["params"]
            proxy.send(compact(notification(inner["method"], inner["params"])))
            proxy.send(spaced(notification(inner["method"], inner["params"])))
        assert_pairs_equal(await frames(client, 2 * len(wrapped)), [notification(m, p) for m, p in cases()])


async def test_client_notifications_reach_proxy_plain_and_agent_unwrapped_as_the_engine_writes_them() -> None:
    async with chain_with_raw_proxy() as (client, proxy, agent):
        for method, params in cases():
            client.send(compact(notification(method, params)))
            client.send(spaced(notification(method, params)))
        plain = [notification(m, p) for m, p in cases()]
        assert_pairs_equal(await frames(proxy, 2 * len(plain)), plain)

        for method, params in cases():
            proxy.send(compact(notification("proxy/successor", successor(method, params))))
            proxy.send(spaced(notification("proxy/successor", successor(method, params))))
        assert_pairs_equal(await frames(agent, 2 * len(plain)), plain)


async def test_requests_between_notifications_keep_their_place_and_get_each_hops_ids() -> None:
    async with chain_with_raw_proxy() as (client, proxy, agent):
        update = {"sessionId": "s1", "update": {"sessionUpdate": "plan", "entries": []}}
        agent.send(compact(notification("session/update", update)))
        agent.request("session/request_permission", {"sessionId": "s1", "options": []}, request_id="ask")
        agent.send(compact(notification("session/update", {**update, "n": 2})))
        at_proxy = [orjson.loads(frame) for frame in await frames(proxy, 3)]
        assert [m["params"]["method"] for m in at_proxy] == [
            "session/update",
            "session/request_permission",
            "session/update",
        ]
        assert at_proxy[1]["id"] != "ask"  # the conductor's own id on this hop
        assert "id" not in at_proxy[0]
        assert "id" not in at_proxy[2]
        assert at_proxy[2]["params"]["params"]["n"] == 2

        proxy.send(compact(notification("session/update", update)))
        proxy.request("session/request_permission", {"sessionId": "s1", "options": []}, request_id=5)
        proxy.send(compact(notification("session/update", {**update, "n": 2})))
        at_client = [orjson.loads(frame) for frame in await frames(client, 3)]
        assert [m["method"] for m in at_client] == [
            "session/update",
            "session/request_permission",
            "session/update",
        ]
        client.respond(at_client[1], {"outcome": {"outcome": "cancelled"}})
        assert (await proxy.response_to(5))["result"] == {"outcome": {"outcome": "cancelled"}}


BAD = [
    (b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":}}', -32700),
    (b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1"}', -32700),
    (b'{"jsonrpc":"2.0","method":"session/update","params":{"text":"\xff"}}', -32700),
    (b'{"jsonrpc":"2.0","method":"session/update","params":"s1"}', -32600),
    (b'{"jsonrpc":"2.0","method":"session/update","params":{},"result":1}', -32600),
]
BAD_IDS = ["bad JSON in the params", "unclosed", "invalid UTF-8", "params a string", "a result too"]


@pytest.mark.parametrize(("frame", "code"), BAD, ids=BAD_IDS)
async def test_bad_input_that_starts_like_a_notification_is_answered_at_the_first_hop(
    frame: bytes, code: int
) -> None:
    async with chain_with_raw_proxy() as (client, proxy, agent):
        client.send(frame)
        answer = await client.recv()
        assert answer["id"] is None
        assert answer["error"]["code"] == code
        client.notify("_vendor/after", {"n": 1})  # nothing went on before it
        assert await proxy.recv() == notification("_vendor/after", {"n": 1})

        if code == -32700:  # the same text in an envelope is no JSON either
            head = b'"method":"session/update","params":'
            envelope = b'"method":"proxy/successor","params":{' + head
            proxy.send(frame.replace(head, envelope) + b"}")
            answer = await proxy.recv()
            assert answer["id"] is None
            assert answer["error"]["code"] == code
            proxy.notify("proxy/successor", successor("_vendor/after", {"n": 2}))
            assert await agent.recv() == notification("_vendor/after", {"n": 2})


async def test_what_the_conductor_must_read_still_goes_through_its_connection() -> None:
    """An envelope's own ``_meta`` stays on its hop, a frame with a newline goes on as one line."""
    async with chain_with_raw_proxy() as (_, proxy, agent):
        proxy.send(
            b'{"jsonrpc":"2.0","method":"proxy/successor","params":'
            b'{"method":"session/cancel","params":{"sessionId":"s1"},"_meta":{"hop":1}}}'
        )
        assert await agent.recv_raw() == compact(notification("session/cancel", {"sessionId": "s1"}))
        agent.send(b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":\n"s1"}}')
        assert await proxy.recv_raw() == compact(
            notification("proxy/successor", successor("session/update", {"sessionId": "s1"}))
        )
        # A proxy that speaks the legacy names is answered in them, whichever way its message came.
        proxy.send(compact(notification("_proxy/successor", successor("_vendor/x", [1]))))
        assert await agent.recv() == notification("_vendor/x", [1])
        agent.send(compact(notification("_vendor/y", [2])))
        assert await proxy.recv() == notification("_proxy/successor", successor("_vendor/y", [2]))


async def test_the_trace_records_what_passed_as_bytes_as_it_records_the_rest(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsons"
    async with chain_with_raw_proxy(trace) as (_, proxy_peer, agent_peer):
        for method, params in cases():
            agent_peer.send(compact(notification(method, params)))
            agent_peer.send(spaced(notification(method, params)))
        await frames(proxy_peer, 2 * len(PARAMS))
        # Written while the conductor runs, not only at its end: the sink's timer, set when the
        # lines were written, comes before this one on the shared event loop.
        await asyncio.sleep(2 * FileSink.FLUSH_DELAY)
        assert trace.read_bytes().count(b'"type":"notification"') == 2 * len(PARAMS)
    events = [orjson.loads(line) for line in trace.read_bytes().splitlines()]
    notes = [e for e in events if e["type"] == "notification"]
    assert len(notes) == 2 * len(PARAMS)
    for index, (method, params) in enumerate(cases()):
        first, second = notes[2 * index], notes[2 * index + 1]
        assert first["ts"] <= second["ts"]
        first.pop("ts"), second.pop("ts")
        assert first == second
        expected = {
            "type": "notification",
            "protocol": "acp",
            "from": "Agent",
            "to": "Proxy(0)",
            "method": method,
        }
        assert {k: v for k, v in first.items() if k not in ("params", "session")} == expected
        assert first["params"] == params
        assert first.get("session") == (params.get("sessionId") if isinstance(params, dict) else None)


async def test_a_notification_passed_as_bytes_keeps_the_senders_spelling_of_its_params(
    tmp_path: Path,
) -> None:
    """The same JSON value, not re-encoded: an exponent and an escape reach the client as written."""
    params = b'{"sessionId":"s1","n":1.50E+3,"text":"caf\\u00e9"}'
    frame = b'{"jsonrpc":"2.0","method":"_vendor/note","params":' + params + b"}"
    trace = tmp_path / "trace.jsons"
    async with chain_with_raw_proxy(trace) as (client, proxy, agent):
        agent.send(frame)
        wrapped = await proxy.recv_raw()
        assert (
            wrapped
            == b'{"jsonrpc":"2.0","method":"proxy/successor","params":{"method":"_vendor/note","params":'
            + params
            + b"}}"
        )
        proxy.send(frame)
        assert await client.recv_raw() == frame
    lines = [line for line in trace.read_bytes().splitlines() if b'"notification"' in line]
    assert len(lines) == 2
    assert all(b',"params":' + params + b',"session":"s1"}' in line for line in lines)
    assert orjson.loads(lines[0])["params"] == {"sessionId": "s1", "n": 1500.0, "text": "café"}


def test_what_acpio_itself_writes_is_what_passes_as_bytes() -> None:
    """If the engine wrote notifications otherwise, every one would silently take the slow way."""
    params = PARAMS[0]
    plain = encode_notification("session/update", params)
    wrapped = encode_notification("proxy/successor", SuccessorEnvelope("session/update", params).to_params())
    note = read_notification(plain)
    assert note is not None
    assert (note.method, note.successor, note.params) == ("session/update", None, params)
    assert wrapped_frame(note, "proxy/successor") == wrapped
    note = read_notification(wrapped)
    assert note is not None
    assert (note.method, note.successor, note.params) == ("session/update", "proxy/successor", params)
    assert plain_frame(note) == plain
    for other in (
        b" " + plain,
        plain + b" ",
        spaced(notification("session/update", params)),
        b"[" + plain + b"]",
    ):
        assert read_notification(other) is None
