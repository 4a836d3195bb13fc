"""Hand-written ``to_wire_json`` for the generated model sent most often: a text chunk's ``session/update``.

An agent streams its answer as ``SessionNotification(update=AgentMessageChunk(content=TextContent(...)))``,
one per chunk. pydantic's serializer walks the three models for each; :func:`session_notification_json`
recognises that exact shape (the generated classes themselves, not a subclass that may serialize
otherwise; only the fields their constructors set, no unknown fields, a ``str`` text and session id)
and writes the same bytes from a template. Any other notification, and any value the template might
write differently (text that is no UTF-8), goes to pydantic as before. ``tests/schema/test_writers.py``
holds the two to the same bytes.

The template's layout is :data:`TEXT_CHUNK_OPENING`, the text, and :func:`text_chunk_closing`: the
turn verbs of :mod:`acpio.app` write their chunks from the same constants.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

import orjson

if TYPE_CHECKING:
    from acpio.schema.base import AcpModel

__all__ = ["TEXT_CHUNK_OPENING", "session_notification_json", "text_chunk_closing"]

#: A text chunk update up to its text: pydantic writes ``content`` first, then the tag.
TEXT_CHUNK_OPENING: Final = b'{"content":{"type":"text","text":'
_NOTE_FIELDS: Final = frozenset(("session_id", "update"))
_CHUNK_FIELDS: Final = frozenset(("content", "session_update"))
_TEXT_FIELDS: Final = frozenset(("type", "text"))


def text_chunk_closing(kind: str) -> bytes:
    """What follows a chunk's text, for the ``sessionUpdate`` tag ``kind``, without the update's ``}``.

    v2 adds its ``messageId`` (or ``_meta``) before that brace.
    """
    return b'},"sessionUpdate":"%s"' % kind.encode()


#: Each chunk class of the generated module, by name: its tag, and what follows its text.
_CHUNKS: Final = {
    name: (tag, text_chunk_closing(tag))
    for name, tag in (
        ("AgentMessageChunk", "agent_message_chunk"),
        ("AgentThoughtChunk", "agent_thought_chunk"),
        ("UserMessageChunk", "user_message_chunk"),
    )
}
#: Where the generated classes are (the writer names them, not imports them: they import it).
_GENERATED: Final = "acpio.schema._models"
#: What each class seen so far is to the template: a chunk's tag and closing, ``True`` for the text
#: content class, ``None`` for any other (a handful of classes: an update's or a content's).
_SEEN: dict[type, tuple[str, bytes] | bool | None] = {}
#: The generated ``SessionNotification``, once a note of it was written: not a subclass (a user's
#: subclass inherits the writer, and may serialize otherwise).
_note_class: type | None = None


def _role(kind: type) -> tuple[str, bytes] | bool | None:
    """What ``kind`` is to the template (see ``_SEEN``), found by its name in the generated module."""
    if kind.__module__ != _GENERATED:
        role: tuple[str, bytes] | bool | None = None
    elif kind.__name__ == "TextContent":
        role = True
    else:
        role = _CHUNKS.get(kind.__name__)
    if len(_SEEN) < 256:  # classes are few; a program making them by the thousand is not cached
        _SEEN[kind] = role
    return role


def _is_generated_note(kind: type) -> bool:
    """Whether ``kind`` is the generated ``SessionNotification`` (then kept in ``_note_class``)."""
    global _note_class
    if kind.__module__ != _GENERATED or kind.__name__ != "SessionNotification":
        return False
    _note_class = kind
    return True


def session_notification_json(note: AcpModel) -> bytes:
    """``note.to_wire_json()``: a plain text chunk from the template, anything else by pydantic."""
    fields = note.__dict__
    try:
        session_id = fields["session_id"]
        update = fields["update"]
        kind = type(update)
        chunk = _SEEN[kind] if kind in _SEEN else _role(kind)
        if (
            type(chunk) is tuple
            and type(session_id) is str
            and (type(note) is _note_class or _is_generated_note(type(note)))
            and note.__pydantic_fields_set__ == _NOTE_FIELDS
            and not note.__pydantic_extra__
            and update.__pydantic_fields_set__ == _CHUNK_FIELDS
            and not update.__pydantic_extra__
            and update.__dict__["session_update"] == chunk[0]
        ):
            content = update.__dict__["content"]
            kind = type(content)
            if (_SEEN[kind] if kind in _SEEN else _role(kind)) is True:
                text = content.__dict__["text"]
                if (
                    type(text) is str
                    and content.__pydantic_fields_set__ == _TEXT_FIELDS
                    and not content.__pydantic_extra__
                    and content.__dict__["type"] == "text"
                ):
                    return b"".join(
                        (
                            b'{"sessionId":',
                            orjson.dumps(session_id),
                            b',"update":',
                            TEXT_CHUNK_OPENING,
                            orjson.dumps(text),
                            chunk[1],
                            b"}}",
                        )
                    )
    # a field ``model_construct`` left out (pydantic writes the others), or a lone surrogate in the
    # text (pydantic raises its own error for it)
    except (KeyError, orjson.JSONEncodeError):
        pass
    return _pydantic_json(note)


def _pydantic_json(model: AcpModel) -> bytes:
    """What every other model's ``to_wire_json`` writes."""
    from acpio.schema.base import AcpModel

    return AcpModel.to_wire_json(model)
