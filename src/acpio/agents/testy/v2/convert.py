"""What testy keeps in v1 shapes (history, config options), as v2 sends it, and back.

testy's sessions are shared by both versions (a session set up on v1 resumes on v2): the history
holds v1 content blocks and the config options are built as v1 models. These functions go through
the JSON both versions share: content blocks are the same on the wire, and a config option only
renames ``id`` to ``configId``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from typing import Any

from pydantic import TypeAdapter

from acpio import schema as v1
from acpio.agents.testy.sessions import AgentText, TestySession
from acpio.schema.v2 import AgentMessage, ContentBlock, SessionConfigOption, SessionUpdate, UserMessage

__all__ = ["config_options", "history_updates", "v1_blocks"]


@cache
def _v1_blocks() -> TypeAdapter[list[v1.ContentBlock]]:
    return TypeAdapter(list[v1.ContentBlock])


def v1_blocks(blocks: Sequence[ContentBlock]) -> list[v1.ContentBlock]:
    """v2 prompt content as the v1 blocks the history keeps."""
    return _v1_blocks().validate_python([block.to_wire() for block in blocks])


def config_options(session: TestySession) -> list[SessionConfigOption]:
    """The session's config options as v2 models (``configId`` for v1's ``id``)."""
    options = []
    for option in session.config_options():
        wire: dict[str, Any] = option.to_wire()
        wire["configId"] = wire.pop("id")
        options.append(SessionConfigOption.model_validate(wire))
    return options


def history_updates(session: TestySession) -> Iterator[SessionUpdate]:
    """The history as v2 upserts: one ``user_message`` per prompt, one ``agent_message`` per stretch.

    Entries keep the message id they had live; v1 entries (no id) get ``replayed-N``.
    """
    group: list[Any] = []
    group_id = group_kind = ""
    for index, (entry, message_id) in enumerate(zip(session.history, session.message_ids, strict=True)):
        kind = "agent" if isinstance(entry, AgentText) else "user"
        if message_id is None:  # a v1 entry: one message per stretch of one kind
            same_stretch = group and kind == group_kind and group_id.startswith("replayed-")
            message_id = group_id if same_stretch else f"replayed-{index}"
        if group and (message_id != group_id or kind != group_kind):
            yield _upsert(group_kind, group_id, group)
            group = []
        group_id, group_kind = message_id, kind
        group.append(
            {"type": "text", "text": entry.text} if isinstance(entry, AgentText) else entry.to_wire()
        )
    if group:
        yield _upsert(group_kind, group_id, group)


def _upsert(kind: str, message_id: str, content: list[Any]) -> SessionUpdate:
    fields = {"messageId": message_id, "content": content}
    if kind == "agent":
        return AgentMessage.model_validate(fields)
    return UserMessage.model_validate(fields)
