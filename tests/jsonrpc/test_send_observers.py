"""Send observers (``Builder.on_send_notification``): one serialization, shared with the frame, same bytes."""

from __future__ import annotations

from typing import Any

import orjson

from acpio import Agent
from acpio.jsonrpc import Connection, RawJson
from acpio.schema import (
    AgentMessageChunk,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    StopReason,
    TextContent,
)
from acpio.testing import serving

UPDATE = SessionNotification(
    session_id="s1",
    update=AgentMessageChunk(content=TextContent(text="héllo \u2028 world")),
)


async def frames_sent(observe: bool) -> list[bytes]:
    """The frames a connection writes for a typed, a dict and a param-less notification."""
    app = Agent.builder()
    seen: list[tuple[str, Any]] = []
    if observe:

        @app.on_send_notification
        def watch(cx: Connection, method: str, params: Any) -> None:
            seen.append((method, params))

    @app.on_request
    async def go(req: PromptRequest, cx: Connection) -> PromptResponse:
        cx.send_notification(UPDATE)
        cx.send_notification("_test/dict", {"b": [1, 2.5, None], "a": "x"})
        cx.send_notification("_test/none")
        return PromptResponse(stop_reason=StopReason.END_TURN)

    async with serving(app) as peer:
        await peer.response_to(peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        peer.request("session/prompt", {"sessionId": "s1", "prompt": []})
        frames = [await peer.recv_raw() for _ in range(3)]
    if observe:
        assert [method for method, _ in seen] == ["session/update", "_test/dict", "_test/none"]
        typed, plain, none = (params for _, params in seen)
        assert isinstance(typed, RawJson)
        assert typed.source is UPDATE
        assert isinstance(plain, RawJson)
        assert plain.source == {"b": [1, 2.5, None], "a": "x"}
        assert none is None
        # What the observer got is exactly what the frame carries.
        assert orjson.loads(frames[0] or b"")["params"] == orjson.loads(typed.json)
        assert (frames[0] or b"").endswith(b',"params":' + typed.json + b"}")
    return [frame or b"" for frame in frames]


async def test_an_observer_sees_the_json_the_frame_carries_and_the_bytes_do_not_change() -> None:
    assert await frames_sent(observe=True) == await frames_sent(observe=False)


def test_raw_json_is_written_as_it_is_alone_or_inside_another_value() -> None:
    from acpio.jsonrpc.messages import encode_notification, encode_value

    raw = RawJson(b'{"sessionId":"s","update":{"n":1}}')
    assert encode_notification("session/update", raw) == (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"n":1}}}'
    )
    assert encode_value({"params": raw}) == b'{"params":{"sessionId":"s","update":{"n":1}}}'
    assert RawJson.of(raw) is raw
    assert RawJson.of({"a": 1}).json == b'{"a":1}'
