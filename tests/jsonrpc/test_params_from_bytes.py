"""Notifications of a builder's methods read from their params' bytes: the same messages as decoding.

A connection whose builder has a handler for ``session/update`` cuts such a notification's params
out of the frame and decodes them alone (:func:`notification_from_bytes`). The same frames fed to a
client that handles them with an untyped handler (no method known ahead, so each frame is decoded
whole, as before) must give equal models, and the peer and the log the same answers, odd frames
included.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import orjson
import pytest

from acpio import Client
from acpio import schema as acp
from acpio.jsonrpc import Connection, Dispatch, NotificationDispatch, Unhandled
from acpio.jsonrpc.messages import decode, encode_notification, notification_from_bytes, notification_head
from acpio.transports import Lines

TEXT = encode_notification(
    "session/update",
    acp.SessionNotification(session_id="s", update=acp.AgentMessageChunk(content=acp.TextContent(text="hi"))),
)
HEAD = b'{"jsonrpc":"2.0","method":"session/update","params":'
CHUNK = b'{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}'


def update(params: bytes) -> bytes:
    return HEAD + params + b"}"


def chunk_with(extra: bytes) -> bytes:
    """A text chunk whose params end with ``extra`` members (``,"x":...``)."""
    return update(b'{"sessionId":"s","update":' + CHUNK + extra + b"}")


#: Frames read from their params' bytes, each with something a model must keep.
READ_FROM_BYTES = [
    TEXT,
    update(b'{"update":' + CHUNK + b',"sessionId":"s"}'),  # another key order
    chunk_with(b',"_meta":{"trace":[1,2.5,null,true]}'),
    update(
        b'{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","messageId":"m1",'
        b'"_meta":{"a":1},"content":{"type":"text","text":"\\u00e9\\ud83d\\ude00 \\"q\\"","_meta":{}}}}'
    ),
    chunk_with(b',"future":{"deep":[{"x":-0.5e-3}]},"n":-900719925474099'),  # unknown members kept
    update(
        b'{"session_id":"s","update":{"session_update":"agent_message_chunk","content":{"type":"text","text":"x"}}}'
    ),
    update(b'{"sessionId":"a","session_id":"b","update":' + CHUNK + b"}"),  # both spellings at once
    update(b'{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"Read"}}'),
    update(
        b'{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk",'
        b'"content":{"type":"image","data":"AA==","mimeType":"image/png"}}}'
    ),
    update(b'{"sessionId":"s","update":{"sessionUpdate":"from_the_future","x":1}}'),
    # a text block without text: an unknown block, as decoding reads it
    update(b'{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}}'),
    update(b'{"sessionId":"s","update":\n' + CHUNK + b"}"),  # a newline inside (a WebSocket frame)
]

#: Frames read from their bytes whose params do not validate: logged, as before.
INVALID = [
    update(b'{"sessionId":5,"update":' + CHUNK + b"}"),
    update(b'{"sessionId":"s"}'),
    update(b"[1,2]"),
    update(b"null"),
    chunk_with(b',"big":18446744073709551616,"inf":-1e308'),  # valid: orjson's numbers, as decode reads them
]

#: Frames left to decoding: each must get today's answer.
LEFT_TO_DECODING = [
    update(b"5"),  # params that are no object: -32600
    update(b'{"sessionId":"s","update":' + CHUNK + b',"x":NaN}'),  # not JSON for orjson: -32700
    update(b'{"sessionId":"s","update":' + CHUNK + b',"x":1e400}'),
    update(b'{"sessionId":"s","update":' + CHUNK + b'},"id":7'),  # a request after all: -32601
    update(b'{"sessionId":"s","update":' + CHUNK),  # cut short: -32700
    TEXT + b" ",
]


async def run_client(frames: list[bytes], *, typed: bool) -> tuple[list[Any], list[bytes]]:
    """Feed ``frames`` to a client; the models it validated and the bytes it wrote.

    ``typed``: a typed handler (its method known ahead); else an untyped one validating the params.
    """
    app = Client.builder(name="bytes")
    received: list[Any] = []
    written: list[bytes] = []
    if typed:

        @app.on_notification
        async def on_update(note: acp.SessionNotification, cx: Connection) -> None:
            received.append(note)

    else:

        @app.on_dispatch
        async def look(message: Dispatch) -> Unhandled | None:
            if message.method != "session/update" or type(message) is not NotificationDispatch:
                return Unhandled(message)
            received.append(message.parse(acp.SessionNotification))
            return None

    queue = [frame + b"\n" for frame in frames]

    async def read() -> bytes:
        return queue.pop(0) if queue else b""

    async def write(data: bytes) -> None:
        written.append(data)

    async with asyncio.timeout(5):
        await app.serve(Lines(read, write))
    return received, written


def wire(model: Any) -> Any:
    """What a model holds, unknown members and both spellings' choice included."""
    return orjson.loads(encode_notification("session/update", model))


ALL = READ_FROM_BYTES + INVALID + LEFT_TO_DECODING


@pytest.mark.parametrize("frame", ALL, ids=lambda f: f[51:110].decode())
async def test_a_typed_handler_gets_what_decoding_gives(
    frame: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="acpio")
    fast, fast_written = await run_client([frame], typed=True)
    fast_log = [r.getMessage() for r in caplog.records]
    caplog.clear()
    typed, typed_written = await run_client([frame], typed=False)
    assert fast == typed
    assert [wire(m) for m in fast] == [wire(m) for m in typed]
    assert [type(m.update) for m in fast] == [type(m.update) for m in typed]
    assert fast_written == typed_written
    assert fast_log == [r.getMessage() for r in caplog.records]


def test_the_params_are_cut_out_exactly_when_they_are_one_value_of_a_notification() -> None:
    head = notification_head("session/update")
    assert head == HEAD
    read = [notification_from_bytes(frame, head, "session/update") for frame in ALL]
    assert [r is not None for r in read] == [True] * len(READ_FROM_BYTES + INVALID) + [False] * len(
        LEFT_TO_DECODING
    )
    assert [r for r in read if r is not None] == [decode(f) for f in READ_FROM_BYTES + INVALID]
    assert notification_from_bytes(TEXT, notification_head("session/cancel") or b"", "session/cancel") is None
    assert notification_head('say "hi"') is None  # a name JSON would escape is read by decode


async def test_invalid_params_are_logged_as_before(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="acpio")
    received, written = await run_client(
        [update(b'{"sessionId":5,"update":' + CHUNK + b"}"), TEXT], typed=True
    )
    assert [m.update.content.text for m in received] == ["hi"]
    assert written == []
    assert any(
        "Notification 'session/update' rejected: -32602" in r.getMessage()
        and '"loc": ["sessionId"]' in r.getMessage()
        for r in caplog.records
    )


async def test_a_method_received_before_is_cut_out_too_into_what_decoding_gives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """No builder handler names it: the first frame is decoded whole, the next ones are cut (learned)."""
    caplog.set_level(logging.WARNING, logger="acpio")
    frames = [TEXT, *ALL]
    learned, learned_written = await run_client(frames, typed=False)
    learned_log = [r.getMessage() for r in caplog.records]
    caplog.clear()
    one_by_one: list[Any] = []
    written: list[bytes] = []
    for frame in frames:  # each alone: decoded whole
        received, answers = await run_client([frame], typed=False)
        one_by_one += received
        written += answers
    assert [wire(m) for m in learned] == [wire(m) for m in one_by_one]
    assert learned == one_by_one
    # the same answers (a -32601 goes out after the -32700s written at once, whichever run)
    assert sorted(b"".join(learned_written).splitlines()) == sorted(b"".join(written).splitlines())
    assert learned_log == [r.getMessage() for r in caplog.records]
