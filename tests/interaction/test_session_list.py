"""Section F of the conformance checklist: session/list and session/delete, both sides.

The client side: acpio refuses to send what the agent did not advertise. The agent side:
:func:`acpio.store.serve_sessions` answers as the spec asks (tests/store/test_serve.py has the rest,
against every store).
"""

from __future__ import annotations

from typing import Any

import pytest

from acpio import Agent
from acpio.capabilities import CapabilityNotAdvertised
from acpio.schema import (
    AgentCapabilities,
    DeleteSessionRequest,
    InitializeRequest,
    ListSessionsRequest,
    SessionCapabilities,
    SessionDeleteCapabilities,
    SessionInfoUpdate,
    SessionListCapabilities,
)
from acpio.store import MemoryStore, serve_sessions
from acpio.testing import WirePeer, serving

from ._support import ScriptAgent, builder_client

INIT = InitializeRequest(protocol_version=1)


async def call(peer: WirePeer, method: str, params: Any) -> Any:
    return await peer.response_to(peer.request(method, params))


async def test_builder_refuses_list_and_delete_the_agent_did_not_advertise() -> None:
    # 94, 106
    async with builder_client(ScriptAgent()) as (cx, tap):
        await cx.send_request(INIT)
        for request, capability in [
            (ListSessionsRequest(), r"sessionCapabilities\.list"),
            (DeleteSessionRequest(session_id="s"), r"sessionCapabilities\.delete"),
        ]:
            with pytest.raises(CapabilityNotAdvertised, match=capability):
                cx.send_request(request)
        assert tap.sent_methods() == ["initialize"]


async def test_builder_sends_list_and_delete_when_advertised() -> None:
    everything = AgentCapabilities(
        session_capabilities=SessionCapabilities(
            list=SessionListCapabilities(), delete=SessionDeleteCapabilities()
        )
    )
    async with builder_client(ScriptAgent(everything)) as (cx, tap):
        await cx.send_request(INIT)
        cx.send_request(ListSessionsRequest())
        cx.send_request(DeleteSessionRequest(session_id="s"))
        assert tap.sent_methods() == ["initialize", "session/list", "session/delete"]


async def test_stored_sessions_list_as_the_spec_says() -> None:
    # 95, 96, 97, 98, 101, 102, 105
    store = MemoryStore()
    app = Agent.builder()
    serve_sessions(app, store)
    async with serving(app) as peer:
        await call(peer, "initialize", {"protocolVersion": 1})
        sid = (
            await call(
                peer, "session/new", {"cwd": "/p", "mcpServers": [], "additionalDirectories": ["/lib"]}
            )
        )["result"]["sessionId"]
        before = await store.require(sid)
        # An empty params object (and none at all) is the first page: sessions, no nextCursor at the end.
        for params in ({}, None):
            answer = (await call(peer, "session/list", params))["result"]
            assert set(answer) == {"sessions"}
            [info] = answer["sessions"]
            # sessionId and the absolute cwd; additionalDirectories only when advertised (it is not).
            assert set(info) == {"sessionId", "cwd", "updatedAt"}
            assert (info["sessionId"], info["cwd"]) == (sid, "/p")
        assert (await call(peer, "session/list", {"cwd": "/other"}))["result"] == {"sessions": []}
        assert (await call(peer, "session/list", {"cursor": "x"}))["error"]["code"] == -32602
        relative = await call(peer, "session/list", {"cwd": "p"})
        assert relative["error"]["code"] == -32602
        # Listing is discovery only: the session is neither opened nor changed.
        assert await store.require(sid) == before


async def test_a_deleted_session_is_gone_and_deleting_again_succeeds() -> None:
    # 107, 108
    app = Agent.builder()
    serve_sessions(app, MemoryStore())
    async with serving(app) as peer:
        await call(peer, "initialize", {"protocolVersion": 1})
        sid = (await call(peer, "session/new", {"cwd": "/p", "mcpServers": []}))["result"]["sessionId"]
        assert (await call(peer, "session/delete", {"sessionId": sid}))["result"] == {}
        assert (await call(peer, "session/list", {}))["result"] == {"sessions": []}
        assert (await call(peer, "session/delete", {"sessionId": sid}))["result"] == {}
        assert (await call(peer, "session/delete", {"sessionId": "never"}))["result"] == {}
        load = await call(peer, "session/load", {"sessionId": sid, "cwd": "/p", "mcpServers": []})
        assert load["error"]["code"] == -32002


def test_session_info_update_fields_are_partial_and_null_clears() -> None:
    # 104: an omitted field is left out (unchanged); title null is sent as null (cleared).
    assert SessionInfoUpdate().to_wire() == {"sessionUpdate": "session_info_update"}
    assert SessionInfoUpdate(title=None).to_wire() == {"sessionUpdate": "session_info_update", "title": None}
    assert "sessionId" not in SessionInfoUpdate.model_fields
    assert "cwd" not in SessionInfoUpdate.model_fields
