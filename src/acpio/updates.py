"""One-line ``session/update`` notifications for the updates agents send most.

In the protocol's models a chunk of text is three nested objects (a ``SessionNotification``
carrying an ``AgentMessageChunk`` carrying a ``TextContent``). These build them in one call::

    cx.send_notification(text_update(req.session_id, "Hello"))

(An :class:`~acpio.app.AgentApp` turn has ``turn.say(...)`` and ``turn.think(...)`` instead.)
"""

from __future__ import annotations

from acpio.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    SessionNotification,
    TextContent,
    UserMessageChunk,
)

__all__ = ["text_update", "thought_update", "user_text_update"]


def text_update(session_id: str, text: str) -> SessionNotification:
    """The ``session/update`` streaming ``text`` from the agent (an ``agent_message_chunk``)."""
    return SessionNotification(
        session_id=session_id, update=AgentMessageChunk(content=TextContent(text=text))
    )


def thought_update(session_id: str, text: str) -> SessionNotification:
    """The ``session/update`` streaming the agent's thought ``text`` (an ``agent_thought_chunk``)."""
    return SessionNotification(
        session_id=session_id, update=AgentThoughtChunk(content=TextContent(text=text))
    )


def user_text_update(session_id: str, text: str) -> SessionNotification:
    """The ``session/update`` replaying the user's ``text`` (a ``user_message_chunk``, as a load does)."""
    return SessionNotification(session_id=session_id, update=UserMessageChunk(content=TextContent(text=text)))
