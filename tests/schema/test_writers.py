"""A text chunk's ``session/update`` written from its template: the bytes pydantic writes, or pydantic itself.

``SessionNotification.to_wire_json`` writes a plain text chunk (the chunk classes, only the fields
their constructors set, nothing unknown) without pydantic's serializer; every other value, and
every value the template could write differently, goes to pydantic. Each test compares with
pydantic's own bytes (``AcpModel.to_wire_json``, what every other model uses).
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import field_serializer, model_serializer
from pydantic_core import PydanticSerializationError

from acpio import schema as acp
from acpio.jsonrpc.messages import encode_notification
from acpio.schema import _writers

from .._awkward_text import AWKWARD

CHUNKS = [acp.AgentMessageChunk, acp.AgentThoughtChunk, acp.UserMessageChunk]


def pydantic_bytes(note: acp.SessionNotification) -> bytes:
    return acp.AcpModel.to_wire_json(note)


def chunk(kind: Any, text: Any, session_id: Any = "sess-1") -> acp.SessionNotification:
    return acp.SessionNotification(session_id=session_id, update=kind(content=acp.TextContent(text=text)))


@pytest.fixture
def without_pydantic(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if the note goes to pydantic's serializer."""

    def refuse(model: acp.AcpModel) -> bytes:
        raise AssertionError(f"{type(model).__name__} went to pydantic's serializer")

    monkeypatch.setattr(_writers, "_pydantic_json", refuse)


@pytest.mark.parametrize("kind", CHUNKS)
@pytest.mark.parametrize("text", AWKWARD)
def test_a_plain_text_chunk_is_written_as_pydantic_writes_it(kind: Any, text: str) -> None:
    note = chunk(kind, text, session_id='sess "1" \\ ü')
    assert note.to_wire_json() == pydantic_bytes(note)


@given(text=st.text(), session_id=st.text(), kind=st.sampled_from(CHUNKS))
def test_any_text_and_session_id_give_pydantic_bytes(text: str, session_id: str, kind: Any) -> None:
    note = chunk(kind, text, session_id)
    assert note.to_wire_json() == pydantic_bytes(note)


@pytest.mark.parametrize("kind", CHUNKS)
def test_the_template_writes_plain_chunks_without_pydantic(kind: Any, without_pydantic: None) -> None:
    note = chunk(kind, "hello")
    assert (
        note.to_wire_json()
        == b'{"sessionId":"sess-1","update":{"content":{"type":"text","text":"hello"},'
        + (b'"sessionUpdate":"%s"}}' % note.update.session_update.encode())
    )
    wire = {
        "sessionId": "s",
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}},
    }
    parsed = acp.SessionNotification.model_validate(wire)
    content = b'{"content":{"type":"text","text":"x"},"sessionUpdate":"agent_message_chunk"}'
    assert parsed.to_wire_json() == b'{"sessionId":"s","update":' + content + b"}"


def test_the_notification_frame_carries_the_same_bytes() -> None:
    note = chunk(acp.AgentMessageChunk, "hi")
    frame = encode_notification("session/update", note)
    assert frame == b'{"jsonrpc":"2.0","method":"session/update","params":' + pydantic_bytes(note) + b"}"


class Tag(str):
    """A ``str`` subclass: pydantic may write it otherwise than a ``str``."""


def odd_notes() -> list[tuple[str, acp.SessionNotification]]:
    """Notes the template must leave to pydantic, each with why."""
    text = acp.TextContent(text="t")
    plain = acp.AgentMessageChunk(content=text)
    cases: list[tuple[str, acp.SessionNotification]] = [
        (
            "explicit null annotations",
            acp.SessionNotification(
                session_id="s",
                update=acp.AgentMessageChunk(content=acp.TextContent(text="t", annotations=None)),
            ),
        ),
        (
            "content with annotations",
            acp.SessionNotification(
                session_id="s",
                update=acp.AgentMessageChunk(
                    content=acp.TextContent(text="t", annotations=acp.Annotations(priority=0.5))
                ),
            ),
        ),
        (
            "content meta",
            acp.SessionNotification(
                session_id="s", update=acp.AgentMessageChunk(content=acp.TextContent(text="t", meta={"k": 1}))
            ),
        ),
        (
            "chunk meta",
            acp.SessionNotification(
                session_id="s", update=acp.AgentMessageChunk(content=text, meta={"k": 1})
            ),
        ),
        (
            "message id",
            acp.SessionNotification(
                session_id="s", update=acp.AgentMessageChunk(content=text, message_id="m1")
            ),
        ),
        ("note meta", acp.SessionNotification(session_id="s", update=plain, meta={"k": 1})),
        ("unknown field on the note", acp.SessionNotification(session_id="s", update=plain, extra=1)),  # type: ignore[call-arg]
        (
            "unknown field on the chunk",
            acp.SessionNotification(
                session_id="s",
                update=acp.AgentMessageChunk(content=text, shade="blue"),  # type: ignore[call-arg]
            ),
        ),
        (
            "unknown field on the content",
            acp.SessionNotification(
                session_id="s",
                update=acp.AgentMessageChunk(content=acp.TextContent(text="t", lang="en")),  # type: ignore[call-arg]
            ),
        ),
        (
            "image content",
            acp.SessionNotification(
                session_id="s",
                update=acp.AgentMessageChunk(content=acp.ImageContent(data="AA==", mime_type="image/png")),
            ),
        ),
        (
            "a tool call",
            acp.SessionNotification(session_id="s", update=acp.ToolCall(tool_call_id="c", title="t")),
        ),
    ]
    cases.append(("a str subclass as session id", chunk(acp.AgentMessageChunk, "t", session_id=Tag("s"))))
    reassigned = chunk(acp.AgentMessageChunk, "t")
    reassigned.update.content.text = 5  # type: ignore[union-attr]
    cases.append(("text reassigned to an int", reassigned))
    retagged = chunk(acp.AgentMessageChunk, "t")
    retagged.update.session_update = "agent_thought_chunk"  # type: ignore[assignment, union-attr]
    cases.append(("tag reassigned", retagged))
    return cases


@pytest.mark.parametrize(("why", "note"), odd_notes(), ids=[why for why, _ in odd_notes()])
def test_anything_else_is_written_by_pydantic(why: str, note: acp.SessionNotification) -> None:
    assert note.to_wire_json() == pydantic_bytes(note), why


class PrefixedNote(acp.SessionNotification):
    """A user's subclass that writes its session id otherwise: the template must not stand in for it."""

    @field_serializer("session_id")
    def prefixed(self, value: str) -> str:
        return "tenant-1/" + value


class StampedNote(acp.SessionNotification):
    """A user's subclass that adds a member to what pydantic writes."""

    @model_serializer(mode="wrap")
    def stamped(self, handler: Any) -> Any:
        return {**handler(self), "stamp": 1}


def shaped_otherwise() -> list[tuple[str, acp.SessionNotification]]:
    """Notes of a text chunk's shape that pydantic writes otherwise than the template, or at all."""
    text = acp.TextContent(text="t")
    plain = acp.AgentMessageChunk(content=text)
    no_type = chunk(acp.AgentMessageChunk, "t")
    del no_type.update.content.__dict__["type"]  # type: ignore[union-attr]
    return [
        ("a subclass with a field serializer", PrefixedNote(session_id="s", update=plain)),
        ("a subclass with a model serializer", StampedNote(session_id="s", update=plain)),
        ("constructed without a session id", acp.SessionNotification.model_construct(update=plain)),
        ("constructed without an update", acp.SessionNotification.model_construct(session_id="s")),
        (
            "content copied in as a dict",
            acp.SessionNotification(
                session_id="s", update=plain.model_copy(update={"content": {"type": "text", "text": "t"}})
            ),
        ),
        ("content without its type", no_type),
    ]


@pytest.mark.parametrize(("why", "note"), shaped_otherwise(), ids=[why for why, _ in shaped_otherwise()])
def test_a_note_pydantic_writes_otherwise_gets_pydantics_bytes(
    why: str, note: acp.SessionNotification
) -> None:
    # before: the template wrote the subclasses' notes as the base class's, the others raised
    # KeyError or AttributeError where pydantic wrote them
    assert note.to_wire_json() == pydantic_bytes(note), why


def outcome(write: Any, note: acp.SessionNotification) -> object:
    """What ``write(note)`` gives: its bytes, or the type and message of what it raised."""
    try:
        return write(note)
    except Exception as exc:
        return type(exc), str(exc)


values = st.one_of(st.sampled_from(AWKWARD), st.text(), st.none(), st.integers(), st.builds(Tag, st.text()))
#: What a user may do to a note after building it: (the part it touches, the field, a value).
changes = st.one_of(
    st.tuples(st.sampled_from(["note", "update", "content"]), st.sampled_from(["meta", "shade"]), values),
    st.tuples(st.just("note"), st.just("session_id"), values),
    st.tuples(st.just("update"), st.sampled_from(["message_id", "session_update"]), values),
    st.tuples(st.just("content"), st.sampled_from(["text", "annotations", "type"]), values),
    st.tuples(st.just("copy"), st.sampled_from(["note", "update", "content"]), values),
    st.tuples(st.just("replace"), st.sampled_from(["update", "content"]), st.sampled_from(CHUNKS)),
)
#: The field a ``model_copy(update=...)`` of each part changes.
COPIED = {"note": "session_id", "update": "message_id", "content": "text"}


def changed(note: acp.SessionNotification, change: tuple[str, str, Any]) -> acp.SessionNotification:
    """``note`` after ``change``: a field assigned (``shade``: an unknown one), a part copied, or replaced."""
    action, name, value = change
    update: Any = note.update
    if action == "replace":
        if name == "update":
            note.update = value(content=acp.TextContent(text="new"))
        else:
            update.content = acp.TextContent(text="new")
        return note
    parts: dict[str, Any] = {"note": note, "update": update, "content": update.content}
    if action == "copy":  # model_copy(update=...) of one part, put back in its place
        copy = parts[name].model_copy(update={COPIED[name]: value})
        if name == "note":
            return copy  # type: ignore[no-any-return]
        if name == "update":
            note.update = copy
        else:
            update.content = copy
        return note
    setattr(parts[action], name, value)
    return note


@settings(max_examples=100, deadline=None)
@given(
    note_class=st.sampled_from([acp.SessionNotification, PrefixedNote, StampedNote]),
    kind=st.sampled_from(CHUNKS),
    text=st.text(),
    session_id=st.text(),
    steps=st.lists(changes, max_size=3),
)
def test_a_note_changed_after_construction_gets_pydantics_bytes(
    note_class: Any, kind: Any, text: str, session_id: str, steps: list[tuple[str, str, Any]]
) -> None:
    note = note_class(session_id=session_id, update=kind(content=acp.TextContent(text=text)))
    for step in steps:
        note = changed(note, step)
    assert outcome(lambda n: n.to_wire_json(), note) == outcome(pydantic_bytes, note)


def test_a_lone_surrogate_raises_pydantic_error() -> None:
    note = chunk(acp.AgentMessageChunk, "bad \ud800")
    with pytest.raises(PydanticSerializationError) as ours:
        note.to_wire_json()
    with pytest.raises(PydanticSerializationError) as theirs:
        pydantic_bytes(note)
    assert str(ours.value) == str(theirs.value)
