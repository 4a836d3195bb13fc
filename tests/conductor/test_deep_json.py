"""Params nested deeper than orjson encodes (254 levels) go through the conductor unchanged.

orjson decodes up to 1024 levels but encodes at most 254: the conductor used to re-encode what it
forwards, so a request nested 300 levels deep was answered -32603 by the conductor itself and such a
notification was dropped silently. The engine's encoder now falls back to the standard library's
for JSON that deep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from acpio.conductor import Chain

from ._support import (
    Peer,
    RawComponent,
    answer_initialize,
    initialized_raw_chain,
    nested,
    notification_frame,
    raw_client,
    request_frame,
)

INIT = {"protocolVersion": 1, "clientInfo": {"name": "editor", "version": "1"}}
DEEP = nested(300)
DEEP_VALUE = orjson.loads(DEEP)


def envelope(method: str, params: bytes) -> bytes:
    """The params of a ``proxy/successor`` envelope for ``method``, with ``params`` as they are."""
    return b'{"method": "%s", "params": %s}' % (method.encode(), params)


def params_of(frame: bytes, method: str) -> Any:
    """The params of a frame the conductor wrote, decoded."""
    message = orjson.loads(frame)
    assert message["method"] == method, message
    return message["params"]


async def next_raw(peer: Peer, match: Callable[[Any], bool]) -> bytes:
    while True:
        frame = await peer.recv_raw()
        assert frame is not None
        if match(orjson.loads(frame)):
            return frame


class RawProxy:
    """The test plays a proxy on the raw wire: it copies every message's params as text."""

    def __init__(self) -> None:
        self.component = RawComponent("raw proxy")
        self.next_id = 100

    async def initialize(self) -> None:
        me = await self.component.wait_peer()
        first = await me.message_for("proxy/initialize")
        self.next_id += 1
        me.request("proxy/successor", {"method": "initialize", "params": first["params"]}, self.next_id)
        answer = await me.response_to(self.next_id)
        me.respond(first["id"], answer["result"])

    async def pass_request_down(self, method: str) -> tuple[Any, int]:
        """Take the client's request ``method``, check its params, send it on to the successor.

        Returns the id it came with and the id it went on with, for :meth:`pass_answer_up`.
        """
        me = await self.component.wait_peer()
        frame = await next_raw(me, lambda m: m.get("method") == method)
        assert params_of(frame, method) == DEEP_VALUE
        self.next_id += 1
        me.send(request_frame(self.next_id, "proxy/successor", envelope(method, DEEP)))
        return orjson.loads(frame)["id"], self.next_id

    async def pass_answer_up(self, ids: tuple[Any, int]) -> None:
        me = await self.component.wait_peer()
        answer = await me.response_to(ids[1])
        me.respond(ids[0], answer["result"])

    async def pass_notification_down(self, method: str) -> None:
        me = await self.component.wait_peer()
        frame = await next_raw(me, lambda m: m.get("method") == method)
        assert params_of(frame, method) == DEEP_VALUE
        me.send(notification_frame("proxy/successor", envelope(method, DEEP)))

    async def pass_notification_up(self, method: str) -> None:
        """Take the agent's notification ``method`` (in an envelope), check it, send it to the client."""
        me = await self.component.wait_peer()
        frame = await next_raw(me, lambda m: m.get("method") == "proxy/successor")
        assert params_of(frame, "proxy/successor") == {"method": method, "params": DEEP_VALUE}
        me.send(notification_frame(method, DEEP))


@pytest.mark.parametrize("shape", ["agent only", "raw proxy", "raw proxy in a nested proxy-mode conductor"])
async def test_params_nested_300_levels_reach_the_agent_and_the_client_unchanged(shape: str) -> None:
    agent = RawComponent("agent")
    proxy = RawProxy() if shape != "agent only" else None
    if proxy is None:
        components: list[Any] = [agent]
    elif shape == "raw proxy":
        components = [proxy.component, agent]
    else:
        components = [Chain.proxy("inner", [proxy.component]), agent]
    async with raw_client(Chain.agent("conductor", components)) as client:
        client.request("initialize", INIT, request_id="init")
        agent_answers = asyncio.create_task(answer_initialize(agent))
        if proxy is not None:
            await proxy.initialize()
        me = await agent_answers
        assert (await client.response_to("init"))["result"] == {"protocolVersion": 1}

        # A request from the client: the agent gets its params as sent, and its answer comes back.
        client.send(request_frame(2, "x/deep", DEEP))
        ids = await proxy.pass_request_down("x/deep") if proxy is not None else None
        frame = await next_raw(me, lambda m: m.get("method") == "x/deep")
        assert params_of(frame, "x/deep") == DEEP_VALUE
        me.respond(orjson.loads(frame)["id"], {"answered": "by the agent"})
        if proxy is not None and ids is not None:
            await proxy.pass_answer_up(ids)
        assert (await client.response_to(2))["result"] == {"answered": "by the agent"}

        # A notification from the client.
        client.send(notification_frame("x/deep_note", DEEP))
        if proxy is not None:
            await proxy.pass_notification_down("x/deep_note")
        frame = await next_raw(me, lambda m: m.get("method") == "x/deep_note")
        assert params_of(frame, "x/deep_note") == DEEP_VALUE

        # A notification from the agent: wrapped for the proxy, then plain to the client.
        me.send(notification_frame("x/deep_update", DEEP))
        if proxy is not None:
            await proxy.pass_notification_up("x/deep_update")
        frame = await next_raw(client, lambda m: m.get("method") == "x/deep_update")
        assert params_of(frame, "x/deep_update") == DEEP_VALUE

        # The conductor carries on as usual afterwards.
        client.request("x/after", {"n": 1}, request_id=3)
        if proxy is not None:
            pm = await proxy.component.wait_peer()
            after = await pm.message_for("x/after")
            pm.request("proxy/successor", {"method": "x/after", "params": after["params"]}, 999)
            answer_task = pm.response_to(999)
        later = await me.message_for("x/after")
        me.respond(later["id"], {"ok": True})
        if proxy is not None:
            answer = await answer_task
            pm.respond(after["id"], answer["result"])
        assert (await client.response_to(3))["result"] == {"ok": True}


async def test_deep_params_in_a_batch_are_forwarded_too() -> None:
    """A batch goes on as one array (re-encoded, with this hop's ids), deep entries and all."""
    async with initialized_raw_chain() as (client, me):
        batch = b"[%s, %s, %s]" % (
            request_frame(5, "x/deep", DEEP),
            notification_frame("x/deep_note", DEEP),
            request_frame(6, "x/shallow", b'{"n": 1}'),
        )
        client.send(batch)
        forwarded = await me.until(lambda f: isinstance(f, list))
        deep, note, shallow = forwarded
        assert [m["method"] for m in forwarded] == ["x/deep", "x/deep_note", "x/shallow"]
        assert deep["params"] == DEEP_VALUE
        assert note["params"] == DEEP_VALUE
        assert shallow["params"] == {"n": 1}
        me.send(
            [
                {"jsonrpc": "2.0", "id": shallow["id"], "result": {"ok": True}},
                {"jsonrpc": "2.0", "id": deep["id"], "result": {"deep": True}},
            ]
        )
        answers = await client.until(lambda f: isinstance(f, list))
        by_id = {answer["id"]: answer for answer in answers}
        assert by_id[5]["result"] == {"deep": True}
        assert by_id[6]["result"] == {"ok": True}
