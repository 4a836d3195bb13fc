"""An AgentApp with a store advertises at ``initialize`` exactly the session methods it serves.

On every store (memory, SQLite, PostgreSQL: the ``store`` fixture), stable and ``unstable``, on v1
(through the raw answer and through the typed one) and on v2. What a method needs is read from the
method tables (``acpio.schema.REQUESTS``, ``acpio.schema.v2.REQUESTS``): a method is answered
(anything but ``-32601``) if and only if the capability it needs was advertised.
"""

from __future__ import annotations

import orjson
import pytest

from acpio import schema as acp
from acpio.app import AgentApp, Turn
from acpio.schema import v2
from acpio.store import MemoryStore, SessionStore, StoredSessions
from acpio.testing import WirePeer, serving

from ..app._wire import typed_only
from ..app._wire_v2 import INFO

V1_INIT = {"protocolVersion": 1, "clientCapabilities": {}}
V2_INIT = {"protocolVersion": 2, "info": INFO, "capabilities": {}}
#: The unstable session methods a store serves (AgentApp(..., unstable=True)).
UNSTABLE_METHODS = {
    "session/fork",
    "session/archive",
    "session/unarchive",
    "session/status",
    "session/set_title",
}
#: v2's session capabilities that no method needs (they say what a request may carry).
NOT_METHODS = {"prompt", "mcp", "additionalDirectories", "systemPrompt"}
#: The capabilities of v1's session methods: ``sessionCapabilities.*``, and ``loadSession``.
V1_SESSION = ("A.sessionCapabilities.", "A.loadSession")


async def _prompt(turn: Turn) -> None:
    await turn.say("hi")


def stored_app(store: SessionStore, unstable: bool) -> AgentApp:
    app = AgentApp("stored", store=store, unstable=unstable, protocols=(1, 2))
    app.prompt(_prompt)
    return app


async def answered(peer: WirePeer, method: str) -> bool:
    """Whether ``method`` (with empty params) gets any answer but ``-32601`` (method not found)."""
    answer = await peer.response_to(peer.request(method, {}))
    return answer.get("error", {}).get("code") != -32601


async def initialize_v1(store: SessionStore, unstable: bool) -> tuple[bytes, dict[str, bool]]:
    """The ``initialize`` answer's frame, and whether each method needing a session capability is served."""
    async with serving(stored_app(store, unstable).component()) as peer:  # type: ignore[arg-type]
        peer.request("initialize", V1_INIT)
        frame = await peer.recv_raw() or b""
        served = {
            method: await answered(peer, method)
            for method, spec in acp.REQUESTS.items()
            if spec.capability is not None and spec.capability.startswith(V1_SESSION)
        }
    return frame, served


@pytest.mark.parametrize("unstable", [False, True], ids=["stable", "unstable"])
async def test_v1_initialize_advertises_exactly_the_served_session_methods(
    store: SessionStore, unstable: bool
) -> None:
    frame, served = await initialize_v1(store, unstable)
    with typed_only():
        typed_frame, typed_served = await initialize_v1(store, unstable)
    assert frame == typed_frame  # the raw answer (stable) is the typed one's bytes
    assert served == typed_served
    capabilities = orjson.loads(frame)["result"]["agentCapabilities"]
    advertised = {f"A.sessionCapabilities.{name}" for name in capabilities["sessionCapabilities"]}
    if capabilities.get("loadSession"):
        advertised.add("A.loadSession")
    needed = {acp.REQUESTS[method].capability for method, is_served in served.items() if is_served}
    assert advertised == needed
    assert {m for m, is_served in served.items() if is_served} >= {
        "session/load",
        "session/list",
        "session/resume",
        "session/close",
        "session/delete",
        *(UNSTABLE_METHODS if unstable else ()),
    }
    if unstable:  # the schema's unstable session capabilities, every one the schema names a method for
        assert set(capabilities["sessionCapabilities"]) == {
            "list",
            "delete",
            "fork",
            "archive",
            "status",
            "title",
            "resume",
            "close",
        }
    meta = capabilities.get("_meta", {}).get("acpio", {})
    assert meta.get("sessionsEndWithProcess", False) is (not store.outlives_process)
    assert ("attach" in meta) is unstable  # attaching, unstable, adds its own hint


@pytest.mark.parametrize("unstable", [False, True], ids=["stable", "unstable"])
async def test_v2_initialize_advertises_exactly_the_served_session_methods(
    store: SessionStore, unstable: bool
) -> None:
    async with serving(stored_app(store, unstable).component()) as peer:  # type: ignore[arg-type]
        answer = await peer.response_to(peer.request("initialize", V2_INIT))
        served = {
            method: await answered(peer, method)
            for method, spec in v2.REQUESTS.items()
            if spec.capability is not None and spec.capability.startswith("A.session.")
        }
    session = answer["result"]["capabilities"]["session"]
    advertised = {f"A.session.{name}" for name in session if name not in NOT_METHODS}
    needed = {v2.REQUESTS[method].capability for method, is_served in served.items() if is_served}
    assert advertised == needed
    assert served["session/delete"]


async def test_agent_capabilities_are_the_models_of_the_wire_with_what_the_base_said() -> None:
    """An agent answering ``initialize`` itself keeps its own capabilities beside the store's."""
    base = acp.AgentCapabilities.model_validate(
        {
            "loadSession": False,
            "promptCapabilities": {"image": True},
            "sessionCapabilities": {"additionalDirectories": {}, "list": {"_meta": {"old": 1}}},
            "auth": {"logout": {}},
            "_meta": {"acpio": {"mine": 1}, "other": [1]},
        }
    )
    for unstable in (False, True):
        sessions = StoredSessions(MemoryStore(), unstable=unstable)
        wire = sessions.agent_capabilities_wire(base.to_wire())
        models = sessions.agent_capabilities(base)
        assert models.to_wire() == wire
        assert wire["loadSession"] is True
        assert wire["promptCapabilities"] == {"image": True}
        assert wire["auth"] == {"logout": {}}
        assert wire["sessionCapabilities"]["additionalDirectories"] == {}
        assert wire["sessionCapabilities"]["list"] == {}  # turned on by the store, as it serves it
        assert ("fork" in wire["sessionCapabilities"]) is unstable
        assert wire["_meta"] == {"acpio": {"mine": 1, "sessionsEndWithProcess": True}, "other": [1]}
    assert base.load_session is False  # the base is not changed


def _capabilities_by_hand(unstable: bool) -> acp.AgentCapabilities:
    """What an AgentApp on a memory store advertises, written from the models, not from the app's rule."""
    kept = {
        "list": acp.SessionListCapabilities(),
        "delete": acp.SessionDeleteCapabilities(),
        "resume": acp.SessionResumeCapabilities(),
        "close": acp.SessionCloseCapabilities(),
    }
    if unstable:
        kept |= {
            "fork": acp.SessionForkCapabilities(),
            "archive": acp.SessionArchiveCapabilities(),
            "status": acp.SessionStatusCapabilities(),
            "title": acp.SessionTitleCapabilities(),
        }
    hints: dict[str, object] = {"sessionsEndWithProcess": True}
    if unstable:
        hints["attach"] = {"roles": ["observer", "controller"]}
    return acp.AgentCapabilities(
        load_session=True,
        prompt_capabilities=acp.PromptCapabilities(),
        session_capabilities=acp.SessionCapabilities(**kept),
        meta={"acpio": hints},
    )


@pytest.mark.parametrize("typed", [False, True], ids=["raw", "typed"])
@pytest.mark.parametrize("unstable", [False, True], ids=["stable", "unstable"])
async def test_v1_initialize_sends_the_capabilities_the_models_write(unstable: bool, typed: bool) -> None:
    """Both answers are held to models built by hand: a wrong value in the one rule they share fails here."""
    if typed:
        with typed_only():
            frame, _ = await initialize_v1(MemoryStore(), unstable)
    else:
        frame, _ = await initialize_v1(MemoryStore(), unstable)
    expected = orjson.dumps(_capabilities_by_hand(unstable).to_wire())
    assert b'"agentCapabilities":' + expected + b',"agentInfo"' in frame
