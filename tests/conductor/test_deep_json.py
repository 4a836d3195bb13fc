"""Params nested deeper than orjson encodes (254 levels) go through the conductor byte for byte.

orjson decodes up to 1024 levels but encodes at most 254: the conductor used to re-encode what it
forwards, so a request nested 300 levels deep was answered -32603 by the conductor itself and such a
notification was dropped silently. It now copies the params' text from the frame they came in.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from acpio.conductor import Chain
from acpio.conductor.rawjson import member_span, member_text

from ._support import (
    Peer,
    RawComponent,
    answer_initialize,
    nested,
    notification_frame,
    raw_client,
    request_frame,
)

INIT = {"protocolVersion": 1, "clientInfo": {"name": "editor", "version": "1"}}
DEEP = nested(300)


def envelope(method: str, params: bytes) -> bytes:
    """The params of a ``proxy/successor`` envelope for ``method``, with ``params`` as they are."""
    return b'{"method": "%s", "params": %s}' % (method.encode(), params)


def plain_params_of(frame: bytes, method: str) -> bytes:
    """The params text of a frame the conductor wrote (it writes ``params`` last), checked by hand."""
    message = orjson.loads(frame)
    assert message["method"] == method, message
    head = frame.index(b',"params":')
    assert frame.endswith(b"}")
    return frame[head + len(b',"params":') : -1]


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
        first = await me.request_for("proxy/initialize")
        self.next_id += 1
        me.request("proxy/successor", {"method": "initialize", "params": first["params"]}, self.next_id)
        answer = await me.answer_to(self.next_id)
        me.respond(first["id"], answer["result"])

    async def pass_request_down(self, method: str) -> tuple[Any, int]:
        """Take the client's request ``method``, check its params, send it on to the successor.

        Returns the id it came with and the id it went on with, for :meth:`pass_answer_up`.
        """
        me = await self.component.wait_peer()
        frame = await next_raw(me, lambda m: m.get("method") == method)
        assert plain_params_of(frame, method) == DEEP
        self.next_id += 1
        me.send(request_frame(self.next_id, "proxy/successor", envelope(method, DEEP)))
        return orjson.loads(frame)["id"], self.next_id

    async def pass_answer_up(self, ids: tuple[Any, int]) -> None:
        me = await self.component.wait_peer()
        answer = await me.answer_to(ids[1])
        me.respond(ids[0], answer["result"])

    async def pass_notification_down(self, method: str) -> None:
        me = await self.component.wait_peer()
        frame = await next_raw(me, lambda m: m.get("method") == method)
        assert plain_params_of(frame, method) == DEEP
        me.send(notification_frame("proxy/successor", envelope(method, DEEP)))

    async def pass_notification_up(self, method: str) -> None:
        """Take the agent's notification ``method`` (in an envelope), check it, send it to the client."""
        me = await self.component.wait_peer()
        frame = await next_raw(me, lambda m: m.get("method") == "proxy/successor")
        assert plain_params_of(frame, "proxy/successor") == b'{"method":"%s","params":%s}' % (
            method.encode(),
            DEEP,
        )
        me.send(notification_frame(method, DEEP))


@pytest.mark.parametrize("shape", ["agent only", "raw proxy", "raw proxy in a nested proxy-mode conductor"])
async def test_params_nested_300_levels_reach_the_agent_and_the_client_byte_for_byte(shape: str) -> None:
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
        assert (await client.answer_to("init"))["result"] == {"protocolVersion": 1}

        # A request from the client: the agent gets its params as sent, and its answer comes back.
        client.send(request_frame(2, "x/deep", DEEP))
        ids = await proxy.pass_request_down("x/deep") if proxy is not None else None
        frame = await next_raw(me, lambda m: m.get("method") == "x/deep")
        assert plain_params_of(frame, "x/deep") == DEEP
        me.respond(orjson.loads(frame)["id"], {"answered": "by the agent"})
        if proxy is not None and ids is not None:
            await proxy.pass_answer_up(ids)
        assert (await client.answer_to(2))["result"] == {"answered": "by the agent"}

        # A notification from the client.
        client.send(notification_frame("x/deep_note", DEEP))
        if proxy is not None:
            await proxy.pass_notification_down("x/deep_note")
        frame = await next_raw(me, lambda m: m.get("method") == "x/deep_note")
        assert plain_params_of(frame, "x/deep_note") == DEEP

        # A notification from the agent: wrapped for the proxy, then plain to the client.
        me.send(notification_frame("x/deep_update", DEEP))
        if proxy is not None:
            await proxy.pass_notification_up("x/deep_update")
        frame = await next_raw(client, lambda m: m.get("method") == "x/deep_update")
        assert plain_params_of(frame, "x/deep_update") == DEEP

        # The conductor carries on as usual afterwards.
        client.request("x/after", {"n": 1}, request_id=3)
        if proxy is not None:
            pm = await proxy.component.wait_peer()
            after = await pm.request_for("x/after")
            pm.request("proxy/successor", {"method": "x/after", "params": after["params"]}, 999)
            answer_task = pm.answer_to(999)
        later = await me.request_for("x/after")
        me.respond(later["id"], {"ok": True})
        if proxy is not None:
            answer = await answer_task
            pm.respond(after["id"], answer["result"])
        assert (await client.answer_to(3))["result"] == {"ok": True}


async def test_deep_params_that_cannot_be_copied_get_a_clear_error_not_silence(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """In a batch, a message's own frame is the whole array: the conductor says why it cannot forward it."""
    agent = RawComponent("agent")
    async with raw_client(Chain.agent("conductor", [agent])) as client:
        client.request("initialize", INIT, request_id="init")
        me = await answer_initialize(agent)
        await client.answer_to("init")

        with caplog.at_level(logging.WARNING, logger="acpio.conductor"):
            batch = b"[%s, %s, %s]" % (
                request_frame(5, "x/deep", DEEP),
                notification_frame("x/deep_note", DEEP),
                request_frame(6, "x/shallow", b'{"n": 1}'),
            )
            client.send(batch)
            shallow = await me.request_for("x/shallow")
            me.respond(shallow["id"], {"ok": True})
            answers = await client.until(lambda f: isinstance(f, list))
        by_id = {answer["id"]: answer for answer in answers}
        assert by_id[6]["result"] == {"ok": True}
        error = by_id[5]["error"]
        assert error["code"] == -32603
        assert "cannot forward 'x/deep' to Agent" in error["message"]
        assert "nested levels" in error["data"]["reason"]
        warnings = [record.getMessage() for record in caplog.records]
        assert any("dropping the notification 'x/deep_note'" in w and "batch" in w for w in warnings)


# --- the scanner that finds a member's text -------------------------------------------------------


def test_member_span_finds_the_last_top_level_member_skipping_strings_and_nesting() -> None:
    text = (
        b' { "a" : "x}\\"{[" , "params":[1,{"params":2}] ,"n":-1.5e3,'
        b'"\\u0070arams" : {"k": "]"} , "z": null }'
    )
    start, end = member_span(text, "params") or (0, 0)
    assert text[start:end] == b'{"k": "]"}'  # the last one, spelled with an escape
    start, end = member_span(text, "n") or (0, 0)
    assert text[start:end] == b"-1.5e3"
    assert member_span(text, "missing") is None
    assert member_span(b"[1, 2]", "params") is None
    assert member_span(b"{}", "params") is None


def test_member_text_copies_only_the_value_it_was_decoded_to() -> None:
    frame = request_frame(1, "x", DEEP)
    value = orjson.loads(DEEP)
    assert member_text(frame, ["params"], value) == DEEP
    assert member_text(frame, ["params"], {"other": 1}) is None
    wrapped = request_frame(1, "proxy/successor", envelope("x", DEEP))
    assert member_text(wrapped, ["params", "params"], value) == DEEP
    very_deep = nested(1000)  # too deep to compare: same kind and length is enough
    assert member_text(request_frame(1, "x", very_deep), ["params"], orjson.loads(very_deep)) == very_deep
