"""A session's earlier turns, as a prompt function sees them (:class:`Exchange`), read back from a store.

A stored session's history is every ``session/update`` it sent, as sent. :func:`read_history` reads
it once for what the app needs when the session is opened again: its turns, and the last command
list it offered (a ``session/load`` replay that already ends with the app's commands needs no other).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias, overload

from acpio import schema as acp
from acpio.app.update_templates import MESSAGE, Template, TextChunk

__all__ = ["Exchange", "SentUpdates", "StoredHistory", "read_history", "unread_updates"]


#: What the history keeps of one update: its model, a verb's template, or an ``agent_message_chunk``'s text.
Kept: TypeAlias = "acp.SessionUpdate | Template | str"


class SentUpdates(Sequence["acp.SessionUpdate"]):  # quoted: the base would create the class at import
    """Every update a turn sent, in order, kept as it was written: each model is built when it is read.

    A verb's :class:`~acpio.app.update_templates.Template` keeps its values (a ``say`` only its
    text), an update given as a model stays that model. :meth:`snapshot` is what was sent so far,
    which later sends do not change.
    """

    __slots__ = ("_kept", "_stop")

    def __init__(self, kept: list[Kept] | None = None, stop: int | None = None) -> None:
        self._kept: list[Kept] = [] if kept is None else kept
        self._stop = stop

    def append(self, update: Kept) -> None:
        """Keep one more update: a model, a template, or the text of an ``agent_message_chunk``."""
        self._kept.append(update)

    def snapshot(self) -> SentUpdates:
        """The updates sent so far, as a sequence of their own (it shares what is kept, not its growth)."""
        return SentUpdates(self._kept, len(self))

    def __len__(self) -> int:
        return len(self._kept) if self._stop is None else self._stop

    def __iter__(self) -> Iterator[acp.SessionUpdate]:
        return map(_model, itertools.islice(self._kept, len(self)))

    @overload
    def __getitem__(self, index: int) -> acp.SessionUpdate: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[acp.SessionUpdate]: ...
    def __getitem__(self, index: int | slice) -> acp.SessionUpdate | Sequence[acp.SessionUpdate]:
        if isinstance(index, slice):
            return tuple(map(_model, self._kept[: len(self)][index]))
        return _model(self._kept[range(len(self))[index]])


def _model(kept: Kept) -> acp.SessionUpdate:
    if isinstance(kept, Template):
        return kept.model()
    if isinstance(kept, str):
        return TextChunk(MESSAGE, kept).model()
    return kept


@dataclass(frozen=True, init=False)
class Exchange:
    """One earlier turn of the session: what the user sent, and what the agent said back."""

    #: The prompt's content blocks (a turn's plain text prompt: built when first read).
    prompt: tuple[acp.ContentBlock, ...]
    #: The text the agent streamed with :meth:`Turn.say`, joined.
    reply: str
    #: Every ``session/update`` the agent sent in the turn, in order (text, thoughts, tool calls...).
    #: A turn's own are built when first read: a turn that streamed many keeps them small until then.
    updates: tuple[acp.SessionUpdate, ...]

    def __init__(
        self,
        prompt: Sequence[acp.ContentBlock],
        reply: str,
        updates: Sequence[acp.SessionUpdate] = (),
    ) -> None:
        # a sequence that is no tuple (a turn's RawPrompt, its SentUpdates) is read into one when first read
        object.__setattr__(self, "prompt" if type(prompt) is tuple else "_unread_prompt", prompt)
        object.__setattr__(self, "reply", reply)
        object.__setattr__(self, "updates" if type(updates) is tuple else "_unread", updates)

    # Type checkers see the fields: ``prompt`` and ``updates`` may be missing, until read.
    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> tuple[object, ...]:
            slot = _UNREAD.get(name)
            unread = self.__dict__.get(slot) if slot is not None else None
            if unread is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            read = tuple(unread)
            object.__setattr__(self, name, read)
            object.__delattr__(self, slot)
            return read


#: Where an :class:`Exchange` keeps each field that is read when first asked for.
_UNREAD = {"prompt": "_unread_prompt", "updates": "_unread"}


def unread_updates(exchange: Exchange) -> Sequence[acp.SessionUpdate]:
    """The exchange's updates, without keeping their models when they were not read yet (a replay's)."""
    unread: Sequence[acp.SessionUpdate] | None = exchange.__dict__.get("_unread")
    return exchange.updates if unread is None else unread


@dataclass(frozen=True)
class StoredHistory:
    """What :func:`read_history` found in a stored history."""

    #: The session's turns, oldest first.
    exchanges: list[Exchange]
    #: The last ``available_commands_update`` it holds (``None``: none).
    commands: acp.AvailableCommandsUpdate | None


async def read_history(updates: AsyncIterator[bytes]) -> StoredHistory:
    """The turns and the last command list of a stored history (``session/update`` params as JSON).

    Each run of ``user_message_chunk`` updates starts an exchange; the text of the
    ``agent_message_chunk`` updates after it is its reply, and every update after it is in its
    :attr:`Exchange.updates`.
    """
    found: list[Exchange] = []
    commands: acp.AvailableCommandsUpdate | None = None
    prompt: list[acp.ContentBlock] = []
    reply: list[str] = []
    sent: list[acp.SessionUpdate] = []
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
