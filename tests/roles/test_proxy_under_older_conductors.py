"""A Proxy answers its conductor in kind: `_proxy/initialize` from an older conductor (the test, on the
raw wire) makes it wrap its successor traffic in `_proxy/successor`; `proxy/initialize` in
`proxy/successor`. Envelopes' own `_meta` is dropped when unwrapping; cancellation stays plain.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from acpio.roles import Proxy

from ._support import WirePeer, serving

META = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
UPDATE = {
    "sessionId": "s1",
    "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}},
    "_meta": {"inner": True},
}
CONDUCTORS = pytest.mark.parametrize("prefix", ["_", ""], ids=["older conductor", "current conductor"])


async def initialize(conductor: WirePeer, prefix: str) -> None:
    """Initialize the proxy as a conductor would, and check it initialized its successor in kind."""
    params = {"protocolVersion": 1, "clientInfo": {"name": "ed", "version": "1"}, "_meta": META}
    conductor.request(f"{prefix}proxy/initialize", params, request_id="init")
    up = await conductor.recv()
    assert up["method"] == f"{prefix}proxy/successor"
    assert up["params"] == {"method": "initialize", "params": params}
    result = {"protocolVersion": 1, "agentInfo": {"name": "far", "version": "1"}, "future": [1]}
    conductor.send({"jsonrpc": "2.0", "id": up["id"], "result": result})
    # The successor's answer goes back unchanged (protocolVersion included).
    assert await conductor.recv() == {"jsonrpc": "2.0", "id": "init", "result": result}


@CONDUCTORS
async def test_a_proxy_wraps_its_successor_traffic_in_the_names_it_was_initialized_with(prefix: str) -> None:
    successor = f"{prefix}proxy/successor"
    async with serving(Proxy.builder()) as conductor:
        await initialize(conductor, prefix)

        # From the client: wrapped for the successor, in kind.
        prompt = {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}], "_meta": META}
        conductor.request("session/prompt", prompt, request_id="prompt")
        up = await conductor.recv()
        assert (up["method"], up["params"]) == (successor, {"method": "session/prompt", "params": prompt})

        # From the successor, in kind: unwrapped, the envelope's `_meta` left on its hop.
        conductor.notify(successor, {"method": "session/update", "params": UPDATE, "_meta": {"hop": 1}})
        assert await conductor.recv() == {"jsonrpc": "2.0", "method": "session/update", "params": UPDATE}
        ask = {"sessionId": "s1", "path": "/a"}
        conductor.request(successor, {"method": "fs/read_text_file", "params": ask}, request_id="ask")
        down = await conductor.recv()
        assert (down["method"], down["params"]) == ("fs/read_text_file", ask)
        conductor.send({"jsonrpc": "2.0", "id": down["id"], "result": {"content": "text"}})
        assert await conductor.recv() == {"jsonrpc": "2.0", "id": "ask", "result": {"content": "text"}}

        # The client cancels: the proxy cancels its envelope request by its own id, never wrapped.
        conductor.notify("$/cancel_request", {"requestId": "prompt"})
        cancel = await conductor.recv()
        assert cancel == {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": up["id"]}}
        error = {"code": -32800, "message": "Request cancelled"}
        conductor.send({"jsonrpc": "2.0", "id": up["id"], "error": error})
        assert await conductor.recv() == {"jsonrpc": "2.0", "id": "prompt", "error": error}


async def test_one_proxy_builder_answers_an_older_and_a_current_conductor_each_in_kind() -> None:
    app = Proxy.builder()
    async with serving(app) as older, serving(app) as current:
        await initialize(older, "_")
        await initialize(current, "")
        for conductor, prefix in ((older, "_"), (current, ""), (older, "_")):
            conductor.notify("session/cancel", {"sessionId": "s1"})
            note: Any = await conductor.recv()
            assert note["method"] == f"{prefix}proxy/successor"
            assert note["params"] == {"method": "session/cancel", "params": {"sessionId": "s1"}}


async def test_an_older_conductors_legacy_envelope_is_understood_before_any_initialize() -> None:
    async with serving(Proxy.builder()) as conductor:
        conductor.notify("_proxy/successor", {"method": "session/update", "params": UPDATE})
        assert await conductor.recv() == {"jsonrpc": "2.0", "method": "session/update", "params": UPDATE}
        conductor.notify("session/cancel", {"sessionId": "s1"})
        async with asyncio.timeout(5):
            assert (await conductor.recv())["method"] == "_proxy/successor"
