"""JSON nested deeper than orjson writes (254 levels) is still forwarded and answered."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from acpio import Proxy
from acpio.jsonrpc import Connection, RequestDispatch, UntypedRole
from acpio.testing import WirePeer, serving
from acpio.transports import Channel

TIMEOUT = 10


def _json(message: Any) -> bytes:
    """The frame as text: orjson, which the test peer uses, cannot write it."""
    return json.dumps(message, separators=(",", ":")).encode()


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"d": value}
    return value


async def test_an_answer_nested_300_levels_is_sent() -> None:
    """It was answered -32603 'The result could not be serialized'."""
    app = UntypedRole.builder()

    @app.on_dispatch
    async def deep(message: RequestDispatch, cx: Connection) -> None:
        message.responder.respond(nested(300))

    async with serving(app, timeout=TIMEOUT) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "_deep", "params": {}})
        answer = await peer.recv()
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": nested(300)}


async def test_a_proxy_forwards_params_nested_300_levels() -> None:
    """An in-process acpio Proxy re-encoded forwarded params and failed on deep ones."""
    ours, theirs = Channel.duplex()
    conductor = WirePeer(theirs, timeout=TIMEOUT)
    served = asyncio.create_task(Proxy.builder().serve(ours))
    params = {"sessionId": "s", "deep": nested(300)}
    conductor.send(_json({"jsonrpc": "2.0", "id": 5, "method": "_vendor/deep", "params": params}))
    forwarded = await conductor.recv()  # wrapped for the successor
    assert forwarded["params"]["params"] == params
    conductor.send(_json({"jsonrpc": "2.0", "id": forwarded["id"], "result": nested(300)}))
    answer = await conductor.recv()
    assert answer == {"jsonrpc": "2.0", "id": 5, "result": nested(300)}
    await conductor.close()
    await asyncio.wait_for(served, TIMEOUT)
