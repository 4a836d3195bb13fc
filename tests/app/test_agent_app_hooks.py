"""AgentApp hooks: the initialize answer completed, sessions offered their own choices or refused,
options refreshed outside a turn, extra request handlers, close hooks, and every update of a turn
kept in its history (live and from a store)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acpio import schema as acp
from acpio.app import AgentApp, AppSession, Turn
from acpio.errors import InvalidParams
from acpio.jsonrpc import Connection
from acpio.schema import AuthenticateRequest, AuthenticateResponse, AuthMethodAgent
from acpio.store import MemoryStore
from acpio.testing import WirePeer, serving

TIMEOUT = 10


def hooked_app(store: MemoryStore | None = None) -> tuple[AgentApp, list[str]]:
    app = AgentApp("hooks", store=store)
    app.select_option("model", "Model", {"small": "Small"}, default="small", category="model")
    closed: list[str] = []

    @app.on_initialize
    async def complete(request: acp.InitializeRequest, answer: acp.InitializeResponse) -> None:
        answer.auth_methods = [AuthMethodAgent(id="key", name="API key")]

    @app.on_open
    async def opened(session: AppSession) -> None:
        if session.cwd.name == "refused":
            raise InvalidParams({"cwd": str(session.cwd)}, message="No model for this project")
        session.offer_choices("model", {"big": "Big", "huge": "Huge"})

    @app.on_close
    async def gone(session: AppSession) -> None:
        closed.append(session.id)

    @app.on_request
    async def authenticate(request: AuthenticateRequest, cx: Connection) -> AuthenticateResponse:
        for session in app.sessions:
            session.offer_choices("model", {"big": "Big", "huge": "Huge", "new": "New"})
        await app.refresh_options()
        return AuthenticateResponse()

    @app.prompt
    async def answer(turn: Turn) -> None:
        async with turn.tool_call("Look", kind="read", raw_input={"x": 1}, meta={"tool": "look"}):
            pass
        await turn.say(f"model {turn.options['model']}; earlier: {[len(e.updates) for e in turn.history]}")

    return app, closed


async def _new(peer: WirePeer, cwd: Path) -> Any:
    return await peer.response_to(peer.request("session/new", {"cwd": str(cwd), "mcpServers": []}))


async def _said(peer: WirePeer, session: str, text: str) -> tuple[str, list[Any]]:
    seen: list[Any] = []
    request = peer.request(
        "session/prompt", {"sessionId": session, "prompt": [{"type": "text", "text": text}]}
    )
    assert (await peer.response_to(request, seen))["result"] == {"stopReason": "end_turn"}
    updates = [m["params"]["update"] for m in seen if m.get("method") == "session/update"]
    return "".join(
        u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
    ), updates


async def test_hooks_shape_sessions_and_refresh_their_options(tmp_path: Path) -> None:
    app, closed = hooked_app()
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        init = await peer.response_to(peer.request("initialize", {"protocolVersion": 1}))
        assert init["result"]["authMethods"] == [{"id": "key", "name": "API key"}]
        (tmp_path / "refused").mkdir()
        refused = await _new(peer, tmp_path / "refused")
        assert refused["error"]["code"] == -32602
        assert refused["error"]["message"] == "No model for this project"

        created = (await _new(peer, tmp_path))["result"]
        session = created["sessionId"]
        [option] = created["configOptions"]
        assert option["currentValue"] == "big"
        assert [o["value"] for o in option["options"]] == ["big", "huge"]
        bad = peer.request(
            "session/set_config_option", {"sessionId": session, "configId": "model", "value": "small"}
        )
        assert (await peer.response_to(bad))["error"]["code"] == -32602
        good = peer.request(
            "session/set_config_option", {"sessionId": session, "configId": "model", "value": "huge"}
        )
        assert (await peer.response_to(good))["result"]["configOptions"][0]["currentValue"] == "huge"

        text, updates = await _said(peer, session, "one")
        assert text == "model huge; earlier: []"
        assert updates[0]["_meta"] == {"tool": "look"}
        text, _ = await _said(peer, session, "two")
        assert text == "model huge; earlier: [3]"  # the tool call, its end, the text

        seen: list[Any] = []
        await peer.response_to(peer.request("authenticate", {"methodId": "key"}), seen)
        [refresh] = [m["params"] for m in seen if m.get("method") == "session/update"]
        assert refresh["sessionId"] == session
        values = [o["value"] for o in refresh["update"]["configOptions"][0]["options"]]
        assert values == ["big", "huge", "new"]
    assert closed == [session]


async def test_a_refused_session_leaves_nothing_in_the_store_and_history_keeps_every_update(
    tmp_path: Path,
) -> None:
    store = MemoryStore()
    app, closed = hooked_app(store)
    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        await peer.response_to(peer.request("initialize", {"protocolVersion": 1}))
        (tmp_path / "refused").mkdir()
        assert "error" in await _new(peer, tmp_path / "refused")
        assert (await store.list()).sessions == []
        session = (await _new(peer, tmp_path))["result"]["sessionId"]
        await _said(peer, session, "one")
    async with serving(hooked_app(store)[0].builder(), timeout=TIMEOUT) as peer:
        await peer.response_to(peer.request("initialize", {"protocolVersion": 1}))
        load = peer.request("session/load", {"sessionId": session, "cwd": str(tmp_path), "mcpServers": []})
        assert "result" in await peer.response_to(load)
        text, _ = await _said(peer, session, "two")
        assert text == "model big; earlier: [3]"
    assert closed == [session]
