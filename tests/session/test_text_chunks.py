"""A session reads text chunks without building their models: the same view, events and text.

Each set of ``session/update`` params goes through a :class:`TurnView` and ``SessionMessage.text``
twice: as the session reads them, and with the shortcut turned off (every update read through the
models). Both must agree for every input, odd ones included.
"""

from __future__ import annotations

from typing import Any

import pytest

from acpio.errors import InvalidParams
from acpio.jsonrpc import NotificationDispatch
from acpio.session import turn_view
from acpio.session.messages import SessionMessage
from acpio.session.turn_view import MessageView, TurnView, text_chunk


def chunk(kind: str = "agent_message_chunk", content: Any = None, **update: Any) -> dict[str, Any]:
    block = {"type": "text", "text": "hi"} if content is None else content
    return {"sessionId": "s", "update": {"sessionUpdate": kind, "content": block, **update}}


#: Params the shortcut reads, by protocol version.
READ_AS_TEXT: list[tuple[int, dict[str, Any]]] = [
    (1, chunk()),
    (1, chunk("agent_thought_chunk")),
    (1, chunk("user_message_chunk")),
    (1, chunk(messageId="m1")),
    (1, chunk(messageId=None)),
    (1, {**chunk(_meta={"a": 1}), "_meta": None}),
    (1, chunk(content={"type": "text", "text": "é😀", "_meta": {"k": [1]}})),
    (2, chunk(messageId="m1")),
    (2, chunk("agent_thought_chunk", messageId="t1")),
]

#: Params it leaves to the models (which may read them, or refuse them).
READ_BY_MODELS: list[tuple[int, Any]] = [
    (2, chunk()),  # v2 requires messageId
    (2, chunk(messageId=None)),
    (1, chunk(messageId=5)),
    (1, chunk(content={"type": "text", "text": "hi", "annotations": {"priority": 0.5}})),
    (1, chunk(content={"type": "text", "text": 5})),
    (1, chunk(content={"type": "text"})),
    (1, chunk(content={"type": "image", "data": "AA==", "mimeType": "image/png"})),
    (1, chunk(content={"type": "text", "text": "hi", "extra": 1})),
    (1, chunk(_meta=5)),
    (1, {**chunk(), "_meta": []}),
    (1, {**chunk(), "meta": 5}),  # the other spelling of _meta: not read here
    (1, {**chunk(), "future": 1}),
    (1, {"session_id": "s", "update": chunk()["update"]}),
    (1, {"sessionId": "s", "update": {**chunk()["update"], "session_update": "x"}}),
    (1, {"sessionId": 5, "update": chunk()["update"]}),
    (1, {"update": chunk()["update"]}),
    (1, {"sessionId": "s", "update": {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read"}}),
    (1, {"sessionId": "s", "update": {"sessionUpdate": "from_the_future"}}),
    (1, {"sessionId": "s", "update": {"sessionUpdate": ["agent_message_chunk"]}}),
    (1, chunk("agent_message")),
    (1, [1, 2]),
    (1, None),
]


def read(view: TurnView, version: int, params: Any) -> tuple[Any, Any, str | None]:
    """What one update gives: the view's event (or the error's type), the message's text."""
    message = SessionMessage(NotificationDispatch("session/update", params), version)
    try:
        event: Any = view.apply(message)
    except InvalidParams:
        event = InvalidParams
    try:
        text: Any = message.text
    except InvalidParams:
        text = InvalidParams
    return event, text, repr(view.messages)


def both_ways(monkeypatch: pytest.MonkeyPatch, updates: list[tuple[int, Any]]) -> tuple[Any, Any]:
    fast_view, typed_view = TurnView(), TurnView()
    fast = [read(fast_view, version, params) for version, params in updates]
    with monkeypatch.context() as patch:
        patch.setattr(turn_view, "text_chunk", lambda params, version: None)
        typed = [read(typed_view, version, params) for version, params in updates]
    return (fast, fast_view.text), (typed, typed_view.text)


@pytest.mark.parametrize("case", READ_AS_TEXT + READ_BY_MODELS, ids=repr)
def test_one_update_reads_the_same_both_ways(case: tuple[int, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    version, params = case
    fast, typed = both_ways(monkeypatch, [(version, params)])
    assert fast == typed


def test_a_turn_mixing_them_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    # A message goes on across chunks of either kind: the messages, their ids and texts agree.
    turn = [case for pair in zip(READ_AS_TEXT, READ_BY_MODELS, strict=False) for case in pair if case[0] == 1]
    fast, typed = both_ways(monkeypatch, turn * 2)
    assert fast == typed
    assert "hi" in fast[1]


def test_the_shortcut_reads_exactly_the_plain_text_chunks() -> None:
    assert [text_chunk(params, version) is not None for version, params in READ_AS_TEXT] == [True] * len(
        READ_AS_TEXT
    )
    assert [text_chunk(params, version) for version, params in READ_BY_MODELS] == [None] * len(READ_BY_MODELS)
    assert text_chunk(chunk(messageId="m1"), 2) == ("agent", "m1", "hi")


def test_a_message_streamed_in_many_chunks_reads_as_its_text_joined_at_every_point() -> None:
    view = TurnView()
    view.start_turn()
    pieces = [f"{i}é " for i in range(2000)]
    for i, piece in enumerate(pieces):
        view.apply(
            SessionMessage(
                NotificationDispatch("session/update", chunk(content={"type": "text", "text": piece})), 1
            )
        )
        if i % 500 == 0:  # read midway: later chunks still add to it
            assert view.text == "".join(pieces[: i + 1])
    (message,) = view.messages
    assert message.text == "".join(pieces) == view.text
    assert message == MessageView(None, "agent", "".join(pieces))
    assert repr(MessageView("m", "user", "x")) == "MessageView(message_id='m', role='user', text='x')"
    message.text = "replaced"  # a v2 whole-message upsert
    message.add("!")
    assert message.text == "replaced!"
    assert message != MessageView(None, "thought", "replaced!")
    with pytest.raises(TypeError):
        hash(message)
