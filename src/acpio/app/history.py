"""A session's earlier turns, as a prompt function sees them (:class:`Exchange`), read back from a store.

A stored session's history is every ``session/update`` it sent, as sent. :func:`read_history` reads
it once for what the app needs when the session is opened again: its turns, and the last command
list it offered (a ``session/load`` replay that already ends with the app's commands needs no other).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acpio import schema as acp

if TYPE_CHECKING:
    from acpio.schema import AvailableCommandsUpdate, ContentBlock, SessionUpdate

__all__ = ["Exchange", "StoredHistory", "read_history"]


@dataclass(frozen=True)
class Exchange:
    """One earlier turn of the session: what the user sent, and what the agent said back."""

    #: The prompt's content blocks.
    prompt: tuple[ContentBlock, ...]
    #: The text the agent streamed with :meth:`Turn.say`, joined.
    reply: str
    #: Every ``session/update`` the agent sent in the turn, in order (text, thoughts, tool calls...).
    updates: tuple[SessionUpdate, ...] = ()


@dataclass(frozen=True)
class StoredHistory:
    """What :func:`read_history` found in a stored history."""

    #: The session's turns, oldest first.
    exchanges: list[Exchange]
    #: The last ``available_commands_update`` it holds (``None``: none).
    commands: AvailableCommandsUpdate | None


async def read_history(updates: AsyncIterator[bytes]) -> StoredHistory:
    """The turns and the last command list of a stored history (``session/update`` params as JSON).

    Each run of ``user_message_chunk`` updates starts an exchange; the text of the
    ``agent_message_chunk`` updates after it is its reply, and every update after it is in its
    :attr:`Exchange.updates`.
    """
    found: list[Exchange] = []
    commands: AvailableCommandsUpdate | None = None
    prompt: list[ContentBlock] = []
    reply: list[str] = []
    sent: list[SessionUpdate] = []
    async for body in updates:
        update = acp.SessionNotification.model_validate_json(body).update
        if isinstance(update, acp.AvailableCommandsUpdate):
            commands = update
        if isinstance(update, acp.UserMessageChunk):
            if prompt and sent:
                found.append(Exchange(tuple(prompt), "".join(reply), tuple(sent)))
                prompt, reply = [], []
            if not prompt:  # what was sent before a prompt (the session's commands) is no turn's
                sent = []
            prompt.append(update.content)
            continue
        sent.append(update)
        if isinstance(update, acp.AgentMessageChunk) and isinstance(update.content, acp.TextContent):
            reply.append(update.content.text)
    if prompt:
        found.append(Exchange(tuple(prompt), "".join(reply), tuple(sent)))
    return StoredHistory(found, commands)
