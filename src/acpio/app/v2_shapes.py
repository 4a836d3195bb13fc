"""The v2 wire shapes of what a :class:`~acpio.app.Turn` reports, made from its version-neutral updates.

A turn builds each update as the v1 model (:mod:`acpio.schema`): that is the session's history, the
same whatever the version (a store keeps it, a ``session/load`` replays it as it is). On a v2
connection :class:`V2Shapes` turns each one into the v2 ``session/update`` object: message chunks
get a ``messageId`` (one per message: a run of chunks of one kind), ``tool_call`` becomes the first
``tool_call_update`` (the upsert that creates the call), a diff becomes ``changes`` with a git
patch, ``plan`` becomes ``plan_update``, a command's input the ``text`` variant. :func:`replayed`
turns a stored history into the upserts of a ``session/resume`` replay.
"""

from __future__ import annotations

import difflib
import uuid
from collections.abc import Iterable, Iterator
from typing import Any, Final

__all__ = [
    "MODE_CONFIG_ID",
    "PLAN_ID",
    "V2Shapes",
    "git_patch",
    "keep_message_id",
    "new_message_id",
    "replayed",
    "stored_message_id",
]

#: The ``configId`` of the app's modes on v2 (a select option with ``category: "mode"``).
MODE_CONFIG_ID: Final = "mode"
#: The ``planId`` of a session's plan on v2: each ``turn.plan`` replaces it, as on v1.
PLAN_ID: Final = "plan"

#: acpio's key in a stored update's ``_meta``.
_META_KEY: Final = "acpio"
_CHUNKS: Final = {
    "agent_message_chunk": "agent_message",
    "agent_thought_chunk": "agent_thought",
    "user_message_chunk": "user_message",
}


def new_message_id() -> str:
    """A fresh ``messageId``."""
    return f"msg_{uuid.uuid4().hex}"


def keep_message_id(update: dict[str, Any], message_id: str) -> None:
    """Note ``message_id`` in a neutral chunk's ``_meta`` (``acpio.messageId``): a replay keeps it.

    v1 has no message ids; what a v2 client was told must come back the same on ``session/resume``.
    """
    meta = update.get("_meta")
    own = meta.get(_META_KEY) if isinstance(meta, dict) else None
    update["_meta"] = {
        **(meta if isinstance(meta, dict) else {}),
        _META_KEY: {**(own if isinstance(own, dict) else {}), "messageId": message_id},
    }


def stored_message_id(update: dict[str, Any]) -> str | None:
    """The ``messageId`` :func:`keep_message_id` noted in a stored chunk, if any."""
    meta = update.get("_meta")
    own = meta.get(_META_KEY) if isinstance(meta, dict) else None
    found = own.get("messageId") if isinstance(own, dict) else None
    return found if isinstance(found, str) else None


def git_patch(path: str, old: str | None, new: str) -> str:
    """A ``git_patch`` of ``path`` from ``old`` (``None``: a new file) to ``new``, its paths absolute."""
    before = [] if old is None else old.splitlines(keepends=True)
    after = new.splitlines(keepends=True)
    lines = [f"diff --git {path} {path}\n"]
    if old is None:
        lines.append("new file mode 100644\n")
    body = difflib.unified_diff(before, after, "/dev/null" if old is None else path, path)
    for line in body:
        lines.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(lines)


def _content(item: dict[str, Any]) -> dict[str, Any]:
    """One tool call content item on v2 (a diff as ``changes`` and a patch; the rest as it is)."""
    if item.get("type") != "diff" or "changes" in item:
        return item
    path, old, new = item["path"], item.get("oldText"), item["newText"]
    change = {"operation": "add" if old is None else "modify", "path": path}
    shaped: dict[str, Any] = {
        "type": "diff",
        "changes": [change],
        "patch": {"format": "git_patch", "text": git_patch(path, old, new)},
    }
    if "_meta" in item:
        shaped["_meta"] = item["_meta"]
    return shaped


def _option(option: dict[str, Any]) -> dict[str, Any]:
    """A config option on v2: ``id`` -> ``configId``, a select group's ``group`` -> ``groupId``."""
    shaped = {("configId" if k == "id" else k): v for k, v in option.items()}
    options = shaped.get("options")
    if isinstance(options, list) and options and isinstance(options[0], dict) and "group" in options[0]:
        shaped["options"] = [
            {("groupId" if k == "group" else k): v for k, v in group.items()} for group in options
        ]
    return shaped


def _command(command: dict[str, Any]) -> dict[str, Any]:
    """A slash command on v2: tagged ``command``, its input the ``text`` variant."""
    shaped = {"type": "command", **command}
    hint = command.get("input")
    if isinstance(hint, dict) and "type" not in hint:
        shaped["input"] = {"type": "text", **hint}
    return shaped


class V2Shapes:
    """Turns one turn's neutral updates (v1 ``to_wire()`` objects) into v2 ones, in order.

    Stateful: the chunks of one message share its ``messageId``; a chunk of another kind, or any
    other update, ends the message.
    """

    def __init__(self) -> None:
        self._kind: str | None = None
        self._message_id = ""

    def message_id(self, kind: str) -> str:
        """The ``messageId`` of a chunk of ``kind``: the current message's, or a new one."""
        if kind != self._kind:
            self._kind = kind
            self._message_id = new_message_id()
        return self._message_id

    def end_message(self) -> None:
        """An update that is no chunk was sent: the next chunk starts a message."""
        self._kind = None

    def convert(self, update: dict[str, Any]) -> dict[str, Any] | None:
        """The v2 object of ``update`` (``None``: v2 has no such update and nothing replaces it)."""
        kind = update.get("sessionUpdate")
        if kind in _CHUNKS:
            return {**update, "messageId": self.message_id(kind)}
        self.end_message()
        if kind == "tool_call" or kind == "tool_call_update":
            shaped = {**update, "sessionUpdate": "tool_call_update"}
            if isinstance(update.get("content"), list):
                shaped["content"] = [_content(item) for item in update["content"]]
            return shaped
        if kind == "plan":
            plan = {"type": "items", "planId": PLAN_ID, "entries": update.get("entries", [])}
            return {"sessionUpdate": "plan_update", "plan": plan}
        if kind == "config_option_update":
            return {**update, "configOptions": [_option(o) for o in update.get("configOptions", [])]}
        if kind == "available_commands_update":
            commands = [_command(c) for c in update.get("availableCommands", [])]
            return {**update, "availableCommands": commands}
        if kind == "current_mode_update":
            return None  # v2 has no modes: the turn sends the mode option instead
        return update


def replayed(updates: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """A stored history (neutral updates, oldest first) as the v2 upserts a ``session/resume`` replays.

    Each message (a run of chunks of one kind) becomes one whole-message upsert (``user_message``,
    ``agent_message``, ``agent_thought``) with its content, under the ``messageId`` it had on v2
    when a v2 turn recorded it (:func:`keep_message_id`), else a new one; tool calls and the rest
    are converted one by one as :class:`V2Shapes` does live.
    """
    shapes = V2Shapes()
    message: dict[str, Any] | None = None
    for update in updates:
        kind = update.get("sessionUpdate")
        whole = _CHUNKS.get(kind) if isinstance(kind, str) else None
        kept = stored_message_id(update)
        if (
            whole is not None
            and message is not None
            and message["sessionUpdate"] == whole
            and kept in (None, message["messageId"])
        ):
            message["content"].append(update["content"])
            continue
        if message is not None:
            yield message
            message = None
        if whole is not None:
            message_id = kept or new_message_id()
            message = {"sessionUpdate": whole, "messageId": message_id, "content": [update["content"]]}
            continue
        shaped = shapes.convert(update)
        if shaped is not None:
            yield shaped
    if message is not None:
        yield message
