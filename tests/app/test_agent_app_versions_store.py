"""A stored session started under one ACP version goes on under the other (a real SQLite file).

The store keeps the version-neutral history (v1's ``session/update`` params, whatever the client
spoke): a v1 ``session/load`` replays it as it is, a v2 ``session/resume`` with ``replayFrom``
replays it as upserts (one ``user_message``/``agent_message`` per message, ``tool_call_update``),
and the prompt function sees the same :attr:`Turn.history` either way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acpio import schema as acp
from acpio.app import AgentApp, StopReasonName, Turn
from acpio.jsonrpc.messages import encode_value
from acpio.store import open_store
from acpio.testing import serving

from ._wire import open_session, send_prompt
from ._wire_v2 import initialize_v2, is_idle, kinds, open_session_v2, run_turn

TIMEOUT = 10.0


def remembering_app(store: Path) -> AgentApp:
    """Says how many earlier turns it remembers and the last reply; reports one tool call."""
    app = AgentApp("remember", protocols=(1, 2), store=f"sqlite:///{store}")

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call("Recall") as call:
            await call.update(text=f"{len(turn.history)} turns")
        last = turn.history[-1].reply if turn.history else "nothing"
        await turn.say(f"I remember {len(turn.history)} turns; ")
        await turn.say(f"last I said: {last}")
        return "end_turn"

    return app


async def test_a_v1_session_resumes_on_v2_with_its_history_replayed_as_upserts(tmp_path: Path) -> None:
    app = remembering_app(tmp_path / "sessions.db")
    async with serving(app.builder(1), timeout=TIMEOUT) as peer:
        session_id = await open_session(peer, tmp_path, {})
        await peer.response_to(send_prompt(peer, session_id, "hello"))
    async with serving(app.builder(2), timeout=TIMEOUT) as peer:
        await initialize_v2(peer)
        frames: list[Any] = []
        resumed = await peer.response_to(
            peer.request(
                "session/resume",
                {"sessionId": session_id, "cwd": str(tmp_path), "replayFrom": {"type": "start"}},
            ),
            frames,
        )
        _, updates = await run_turn(peer, session_id, "again")
    assert "error" not in resumed, resumed
    replay = [f["params"]["update"] for f in frames if f.get("method") == "session/update"]
    assert kinds(replay) == [
        "user_message",
        "tool_call_update",
        "tool_call_update",
        "tool_call_update",
        "agent_message",
    ]
    assert replay[0]["content"] == [{"type": "text", "text": "hello"}]
    assert replay[1]["title"] == "Recall"
    assert replay[-1]["content"] == [
        {"type": "text", "text": "I remember 0 turns; "},
        {"type": "text", "text": "last I said: nothing"},
    ]
    assert replay[0]["messageId"] != replay[-1]["messageId"]
    said = "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")
    assert said == "I remember 1 turns; last I said: I remember 0 turns; last I said: nothing"


async def test_a_v2_session_loads_on_v1_from_its_neutral_history(tmp_path: Path) -> None:
    app = remembering_app(tmp_path / "sessions.db")
    async with serving(app.builder(2), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        await run_turn(peer, session_id, "hello")
    async with serving(app.builder(1), timeout=TIMEOUT) as peer:
        peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        await peer.response_to(1)
        frames: list[Any] = []
        loaded = await peer.response_to(
            peer.request("session/load", {"sessionId": session_id, "cwd": str(tmp_path), "mcpServers": []}),
            frames,
        )
        answer = await peer.response_to(send_prompt(peer, session_id, "again"), frames)
    assert "error" not in loaded, loaded
    assert answer["result"] == {"stopReason": "end_turn"}
    updates = [f["params"]["update"] for f in frames if f.get("method") == "session/update"]
    replay, turn = updates[:6], updates[6:]
    assert kinds(replay) == [
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "tool_call_update",
        "agent_message_chunk",
        "agent_message_chunk",
    ]
    assert all("messageId" not in u for u in replay)  # v1's shape: nothing of v2 was stored
    assert replay[0]["content"] == {"type": "text", "text": "hello"}
    said = "".join(u["content"]["text"] for u in turn if u["sessionUpdate"] == "agent_message_chunk")
    assert said == "I remember 1 turns; last I said: I remember 0 turns; last I said: nothing"


async def test_resume_without_replay_from_replays_nothing_and_an_unknown_cursor_is_refused(
    tmp_path: Path,
) -> None:
    app = remembering_app(tmp_path / "sessions.db")
    async with serving(app.builder(2), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        await run_turn(peer, session_id, "hello")
    async with serving(app.builder(2), timeout=TIMEOUT) as peer:
        await initialize_v2(peer)
        unknown = await peer.response_to(
            peer.request(
                "session/resume",
                {"sessionId": session_id, "cwd": str(tmp_path), "replayFrom": {"type": "_later"}},
            )
        )
        frames: list[Any] = []
        resumed = await peer.response_to(
            peer.request("session/resume", {"sessionId": session_id, "cwd": str(tmp_path)}), frames
        )
    assert unknown["error"]["code"] == -32602
    assert resumed["result"] == {}
    assert [f for f in frames if f.get("method") == "session/update"] == []


async def test_a_v2_replay_keeps_each_message_id_the_client_was_told(tmp_path: Path) -> None:
    app = remembering_app(tmp_path / "sessions.db")
    async with serving(app.builder(2), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        answer, live = await run_turn(peer, session_id, "hello")
    said = {u["messageId"] for u in live if u["sessionUpdate"] == "agent_message_chunk"}
    async with serving(app.builder(2), timeout=TIMEOUT) as peer:
        await initialize_v2(peer)
        frames: list[Any] = []
        await peer.response_to(
            peer.request(
                "session/resume",
                {"sessionId": session_id, "cwd": str(tmp_path), "replayFrom": {"type": "start"}},
            ),
            frames,
        )
    replay = [f["params"]["update"] for f in frames if f.get("method") == "session/update"]
    user, agent = replay[0], replay[-1]
    assert (user["sessionUpdate"], user["messageId"]) == ("user_message", answer["result"]["messageId"])
    assert len(said) == 1
    assert (agent["sessionUpdate"], agent["messageId"]) == ("agent_message", said.pop())
    assert "_meta" not in user  # acpio's note of the id stays in the store
    assert "_meta" not in agent


PROMPTS: list[list[dict[str, Any]]] = [
    [{"type": "text", "text": "plain"}, {"type": "text", "text": 'two blocks, é \u2028 "quoted"'}],
    [{"type": "text", "text": "with a note", "annotations": {"priority": 0.5}}],
    [
        {"type": "text", "text": "and a picture"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "resource_link", "uri": "file:///a.py", "name": "a.py"},
    ],
]


@pytest.mark.parametrize("prompt", PROMPTS, ids=["plain text", "annotated text", "mixed blocks"])
async def test_a_v2_prompt_is_stored_as_the_models_write_it(
    tmp_path: Path, prompt: list[dict[str, Any]]
) -> None:
    """What the user said goes into the neutral history as v1's ``SessionNotification`` writes it.

    A plain text prompt takes no models (``acpio.app.raw_turn``), any other prompt is validated;
    both write each block's chunk as its ``UserMessageChunk`` would, with the message id noted.
    """
    store = tmp_path / "sessions.db"
    app = AgentApp("echo", protocols=(2,), store=f"sqlite:///{store}")
    read: list[list[str]] = []

    @app.prompt
    async def respond(turn: Turn) -> StopReasonName:
        read.append([block.type for block in turn.prompt])
        return "end_turn"

    async with serving(app.builder(), timeout=TIMEOUT) as peer:
        session_id, _ = await open_session_v2(peer, tmp_path)
        frames: list[Any] = []
        asked = peer.request("session/prompt", {"sessionId": session_id, "prompt": prompt})
        answer = await peer.response_to(asked, frames)
        await peer.until(is_idle)
    message_id = answer["result"]["messageId"]
    user = next(f["params"]["update"] for f in frames if f.get("method") == "session/update")
    blocks = acp.PromptRequest.model_validate({"sessionId": session_id, "prompt": prompt}).prompt
    assert user == {
        "sessionUpdate": "user_message",
        "messageId": message_id,
        "content": [b.to_wire() for b in blocks],
    }
    assert read == [[block["type"] for block in prompt]]
    expected = []
    for block in blocks:
        note = acp.SessionNotification(
            session_id=session_id, update=acp.UserMessageChunk(content=block)
        ).to_wire()
        note["update"]["_meta"] = {"acpio": {"messageId": message_id}}
        expected.append(encode_value(note))
    reopened = open_store(f"sqlite:///{store}")
    try:
        history = [body async for body in reopened.history(session_id)]
    finally:
        await reopened.aclose()
    assert history[: len(blocks)] == expected
