"""An app's streamed updates are recorded and forwarded without parsing their JSON again.

A turn's verbs write their updates as JSON (``acpio.app.update_templates``); the session store's
recorder and the attached clients' forwarder see each one before it is queued and must know its
session. They read it from the update's writer, not from the JSON: no ``orjson.loads`` per update
on the sending path, while each update is still recorded once, under its session, as sent, and
forwarded to the observers. JSON a sender gives as bare text (a user's ``RawJson``) is still parsed
for its session id, and recorded.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from acpio.app import AgentApp, Turn
from acpio.jsonrpc import Connection, RawJson
from acpio.store import open_sessions
from acpio.testing import WirePeer, serving

from ._wire import open_session
from ._wire_v2 import initialize_v2, is_idle, prompt_v2
from .test_turn_wire_bytes import frames_of_turn_v1

CHUNKS = 40
_FRAME_HEAD = b'{"jsonrpc":"2.0","method":"session/update","params":'


class CountingParser:
    """Stands for ``orjson`` in a module: parses as it does and counts the calls."""

    def __init__(self) -> None:
        self.calls = 0

    def loads(self, text: bytes) -> Any:
        self.calls += 1
        return orjson.loads(text)


def streaming_app(store: str, *, unstable: bool = False, protocols: tuple[int, ...] = (1,)) -> AgentApp:
    """``stream``: CHUNKS chunks, a thought, a plan, a tool call; ``raw``, ``opaque``: one update as JSON."""
    app = AgentApp("streamer", store=store, unstable=unstable, protocols=protocols)  # type: ignore[arg-type]

    @app.prompt
    async def prompt(turn: Turn) -> None:
        if turn.text in ("raw", "opaque"):  # JSON alone, or with a source that names no session
            params = {"sessionId": turn.session_id, "update": {"sessionUpdate": "agent_message_chunk"}}
            params["update"]["content"] = {"type": "text", "text": turn.text}
            source = object() if turn.text == "opaque" else None
            turn.cx.send_notification("session/update", RawJson(orjson.dumps(params), source))
            return
        for n in range(CHUNKS):
            await turn.say(f"chunk {n} of {turn.session_id}")
        await turn.think("hmm")
        await turn.plan(["read", "write"])
        async with turn.tool_call("Read", kind="read") as call:
            await call.update(text="reading")

    return app


async def turn_frames(peer: WirePeer, session_id: str, text: str) -> list[bytes]:
    """Prompt ``text``; the ``session/update`` frames up to the answer, as bytes."""
    return [
        frame for frame in await frames_of_turn_v1(peer, session_id, text) if frame.startswith(_FRAME_HEAD)
    ]


async def attach_observer(observer: WirePeer, session_id: str) -> None:
    """Initialize ``observer``'s connection and attach it to the session as an observer."""
    observer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    await observer.response_to(1)
    attach = {"sessionId": session_id, "role": "observer"}
    await observer.response_to(observer.request("_acpio/session/attach", attach))


def params_of(frames: list[bytes]) -> list[bytes]:
    return [frame[len(_FRAME_HEAD) : -1] for frame in frames]


async def history(app: AgentApp, session_id: str) -> list[bytes]:
    assert app.store is not None
    await app.store.flush()
    return [params async for params in app.store.history(session_id)]


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
async def test_each_streamed_update_is_recorded_once_under_its_session_without_a_parse(
    kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = "memory:" if kind == "memory" else f"sqlite:///{tmp_path / 'sessions.db'}"
    app = streaming_app(store)
    parses = CountingParser()
    monkeypatch.setattr(open_sessions, "orjson", parses)
    async with serving(app.builder(), timeout=10) as peer:
        first = await open_session(peer, tmp_path, {})
        new = peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        second = (await peer.response_to(new))["result"]["sessionId"]
        sent = {first: await turn_frames(peer, first, "go"), second: await turn_frames(peer, second, "go")}
        assert parses.calls == 0  # not one parse for the 2 x 45 updates
        bare = await turn_frames(peer, first, "raw")
        assert parses.calls == 1  # JSON sent as bare text: parsed for its session id, and recorded
        recorded = {first: await history(app, first), second: await history(app, second)}

    assert len(bare) == 1
    for session_id, frames in sent.items():
        assert len(frames) == CHUNKS + 5  # the chunks, the thought, the plan, the tool call's 3 updates
        assert all(session_id.encode() in frame for frame in frames)
        kinds = [orjson.loads(params)["update"]["sessionUpdate"] for params in recorded[session_id]]
        said = [
            params
            for params, kind in zip(recorded[session_id], kinds, strict=True)
            if kind != "user_message_chunk"
        ]
        assert said == params_of(frames + (bare if session_id == first else []))  # once each, as sent
        assert kinds.count("user_message_chunk") == (2 if session_id == first else 1)


async def test_an_attached_observer_gets_each_update_forwarded_without_a_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = streaming_app("memory:", unstable=True)
    parses = CountingParser()  # the forwarder and the recorder find the session with sent_session_id
    monkeypatch.setattr(open_sessions, "orjson", parses)
    async with serving(app.builder(), timeout=10) as owner, serving(app.builder(), timeout=10) as observer:
        session_id = await open_session(owner, tmp_path, {})
        await attach_observer(observer, session_id)
        sent = await turn_frames(owner, session_id, "go")
        watched = [await observer.recv_raw() for _ in range(len(sent) + 1)]  # the prompt, the turn's
        recorded = await history(app, session_id)
    assert parses.calls == 0
    assert watched[1:] == sent
    assert recorded[1:] == params_of(sent)


async def test_a_v2_turns_updates_name_their_session_to_a_send_observer(tmp_path: Path) -> None:
    app = streaming_app("memory:", protocols=(2,))
    seen: list[tuple[str, object]] = []

    def observe(cx: Connection, method: str, params: RawJson | None) -> None:
        if method == "session/update" and params is not None:
            seen.append((getattr(params.source, "session_id", ""), params.source))

    builder = app.builder(2)
    builder.on_send_notification(observe)
    async with serving(builder, timeout=10) as peer:
        await initialize_v2(peer)
        new = peer.request("session/new", {"cwd": str(tmp_path)})
        session_id = (await peer.response_to(new))["result"]["sessionId"]
        prompt_v2(peer, session_id, "go")
        await peer.until(is_idle)
    written = [source for found, source in seen if found == session_id and type(source) is not dict]
    assert len(written) == CHUNKS + 5  # every update of the turn's verbs, none parsed to know its session


async def test_a_loaded_session_is_replayed_without_a_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``session/load`` sends the stored history as it is: the recorder skips each update unparsed."""
    app = streaming_app("memory:")
    async with serving(app.builder(), timeout=10) as first, serving(app.builder(), timeout=10) as second:
        session_id = await open_session(first, tmp_path, {})
        sent = await turn_frames(first, session_id, "go")
        recorded = await history(app, session_id)
        await open_session(second, tmp_path, {})  # initialized, and a session of its own
        parses = CountingParser()
        monkeypatch.setattr(open_sessions, "orjson", parses)
        load = second.request(
            "session/load", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []}
        )
        replayed: list[Any] = []
        await second.response_to(load, replayed)
        assert parses.calls == 0
        assert len(replayed) == len(recorded) == len(sent) + 1  # and the user's chunk
        assert await history(app, session_id) == recorded  # the replay is not recorded again


async def test_an_update_whose_source_names_no_session_is_still_recorded_and_forwarded(
    tmp_path: Path,
) -> None:
    """A user's ``RawJson`` made with a source that has no ``session_id``: the JSON is read for it."""
    app = streaming_app("memory:", unstable=True)
    async with serving(app.builder(), timeout=10) as owner, serving(app.builder(), timeout=10) as observer:
        session_id = await open_session(owner, tmp_path, {})
        await attach_observer(observer, session_id)
        sent = await turn_frames(owner, session_id, "opaque")
        watched = [await observer.recv_raw() for _ in range(len(sent) + 1)]  # the prompt, the update
        recorded = await history(app, session_id)
    assert len(sent) == 1
    assert watched[1:] == sent
    assert recorded[1:] == params_of(sent)
