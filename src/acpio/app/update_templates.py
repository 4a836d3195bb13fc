"""The ``session/update`` objects a :class:`~acpio.app.Turn` fills in itself, written from byte templates.

``say``, ``think``, ``plan``, ``report_usage`` and the tool calls of ``turn.tool_call`` build no
pydantic model to send: each makes a small :class:`Template` of its values, whose JSON is the bytes
pydantic writes for the model the verb stands for (``tests/app/test_update_templates.py`` holds
them to it, kind by kind, on v1 and v2). The model is built only when the turn's history is read
(:meth:`Template.model`). A value the template does not write the same way (a
:class:`~acpio.schema.PlanEntry` given to ``plan``, a ``bool`` where an ``int`` goes, text that is
not UTF-8, an object in ``raw_input`` orjson would write differently) makes the JSON methods raise
``TypeError``: the writer then sends the model instead, as the verbs always did.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import orjson

from acpio import schema as acp
from acpio.app.v2_shapes import PLAN_ID, git_patch
from acpio.schema._writers import TEXT_CHUNK_OPENING, text_chunk_closing

__all__ = [
    "MESSAGE",
    "THOUGHT",
    "PlanTemplate",
    "Template",
    "TextChunk",
    "ToolCallChange",
    "ToolCallStart",
    "UsageTemplate",
    "given",
    "kept_text",
    "text_chunk_opening",
]

#: The ``sessionUpdate`` of the message chunks the turn writes.
MESSAGE: Final = "agent_message_chunk"
THOUGHT: Final = "agent_thought_chunk"

_CHUNK_KINDS: Final = {kind: text_chunk_closing(kind) for kind in (MESSAGE, THOUGHT)}
#: orjson writes these types as pydantic writes an ``Any`` field; the others (datetimes, dataclasses,
#: subclasses of the JSON types) it is told to refuse, and the model is sent instead.
_PLAIN: Final = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)
_UINT64: Final = 2**64 - 1


def given(**fields: Any) -> dict[str, Any]:
    """The fields that have a value: the others stay unset rather than null on the wire."""
    return {name: value for name, value in fields.items() if value is not None}


def _text(value: object) -> bytes:
    """A ``str`` field's JSON; ``TypeError`` for another type, or text that is no UTF-8 (a lone surrogate)."""
    if type(value) is not str:
        raise TypeError(f"not a str: {type(value).__name__}")
    return orjson.dumps(value)


def _value(value: object) -> bytes:
    """An ``Any`` field's JSON; ``TypeError`` for what pydantic may write otherwise."""
    return orjson.dumps(value, option=_PLAIN)


def text_chunk_opening(kind: str, text: object) -> bytes:
    """A text chunk's update object without its closing brace: v2 adds its ``messageId`` there.

    ``TypeError`` for text :func:`_text` refuses. A function of its own: ``say`` and ``think`` write
    their chunks with it without making a :class:`TextChunk` (the hot path of a streaming turn,
    which is also why it checks the text as :func:`_text` does instead of calling it).
    """
    if type(text) is not str:
        raise TypeError(f"not a str: {type(text).__name__}")
    return b"".join((TEXT_CHUNK_OPENING, orjson.dumps(text), _CHUNK_KINDS[kind]))


class Template(abc.ABC):
    """A ``session/update`` a verb of the turn fills in: its JSON from its values, its model when read."""

    __slots__ = ()

    @abc.abstractmethod
    def update_json(self) -> bytes:
        """The update object as v1 sends it (and as the history keeps it on either version)."""

    def v2_json(self) -> bytes:
        """The update object as v2 sends it (what :class:`~acpio.app.v2_shapes.V2Shapes` makes of v1's)."""
        return self.update_json()

    @abc.abstractmethod
    def model(self) -> acp.SessionUpdate:
        """The model of the update, built as the verb built it before templates."""

    def kept(self) -> Template | str:
        """What the turn's history keeps of it: itself (a message chunk keeps only its text)."""
        return self


class TextChunk(Template):
    """``say`` (``agent_message_chunk``) or ``think`` (``agent_thought_chunk``): a text block.

    The writers send text chunks with ``send_text`` (:func:`text_chunk_opening`, v2's message ids),
    never as a template: a ``TextChunk`` is what the history keeps of a thought, built into its model
    when read, and the model a chunk falls back to.
    """

    __slots__ = ("kind", "text")

    def __init__(self, kind: str, text: str) -> None:
        self.kind = kind
        self.text = text

    def update_json(self) -> bytes:
        """The chunk object, as v1 writes it."""
        return text_chunk_opening(self.kind, self.text) + b"}"

    def model(self) -> acp.SessionUpdate:
        """``AgentMessageChunk`` or ``AgentThoughtChunk`` of a ``TextContent``."""
        content = acp.TextContent(text=self.text)
        if self.kind == MESSAGE:
            return acp.AgentMessageChunk(content=content)
        return acp.AgentThoughtChunk(content=content)


def kept_text(kind: str, text: str) -> Template | str:
    """What the history keeps of a text chunk: its text, or its template.

    A message chunk keeps its text (the turn keeps it for its reply anyway), a thought chunk its
    :class:`TextChunk`.
    """
    return text if kind == MESSAGE else TextChunk(kind, text)


class PlanTemplate(Template):
    """``plan``: every entry, text (pending, medium priority) or a :class:`~acpio.schema.PlanEntry`."""

    __slots__ = ("entries",)

    def __init__(self, entries: Sequence[str | acp.PlanEntry]) -> None:
        self.entries = tuple(entries)  # the caller may change its list later; the history must not

    def _entries_json(self) -> bytes:
        return b"[" + b",".join(_plan_entry(entry) for entry in self.entries) + b"]"

    def update_json(self) -> bytes:
        """The ``plan`` object."""
        return b'{"sessionUpdate":"plan","entries":' + self._entries_json() + b"}"

    def v2_json(self) -> bytes:
        """v2's ``plan_update``: the session's one plan, replaced."""
        return b"".join((_PLAN_UPDATE, self._entries_json(), b"}}"))

    def model(self) -> acp.SessionUpdate:
        """The ``Plan``."""
        return acp.Plan(
            entries=[
                acp.PlanEntry(content=e, priority="medium", status="pending") if isinstance(e, str) else e
                for e in self.entries
            ]
        )


_PLAN_UPDATE: Final = b'{"sessionUpdate":"plan_update","plan":{"type":"items","planId":%s,"entries":' % (
    orjson.dumps(PLAN_ID)
)


def _plan_entry(entry: object) -> bytes:
    return b'{"content":' + _text(entry) + b',"priority":"medium","status":"pending"}'


class UsageTemplate(Template):
    """``report_usage``: ``used`` of ``size`` tokens, and the cost so far."""

    __slots__ = ("cost", "currency", "size", "used")

    def __init__(self, used: int, size: int, cost: float | None, currency: str) -> None:
        self.used = used
        self.size = size
        self.cost = cost
        self.currency = currency

    def update_json(self) -> bytes:
        """The ``usage_update`` object."""
        used, size, cost = self.used, self.size, self.cost
        # what pydantic writes as it is (strict uint64 counts, a finite number); the rest it refuses
        if (
            type(used) is not int
            or type(size) is not int
            or not (0 <= used <= _UINT64 and 0 <= size <= _UINT64)
        ):
            raise TypeError("the counts are not uint64")
        counts = b'{"sessionUpdate":"usage_update","used":%d,"size":%d' % (used, size)
        if cost is None:
            return counts + b"}"
        if (type(cost) is not float and type(cost) is not int) or not math.isfinite(cost):
            raise TypeError("the cost is not a finite number")
        amount, currency = orjson.dumps(cost), _text(self.currency)
        return b"".join((counts, b',"cost":{"amount":', amount, b',"currency":', currency, b"}}"))

    def model(self) -> acp.SessionUpdate:
        """The ``UsageUpdate``."""
        extra = {"cost": acp.Cost(amount=self.cost, currency=self.currency)} if self.cost is not None else {}
        return acp.UsageUpdate(used=self.used, size=self.size, **extra)


class ToolCallStart(Template):
    """Entering ``turn.tool_call``: the ``tool_call`` (pending), its kind, locations, input and ``_meta``."""

    __slots__ = ("call_id", "kind", "locations", "meta", "raw_input", "title")

    def __init__(
        self,
        call_id: str,
        title: str,
        kind: str | None,
        locations: Sequence[Path],
        raw_input: Any,
        meta: dict[str, Any] | None,
    ) -> None:
        self.call_id = call_id
        self.title = title
        self.kind = kind
        self.locations = tuple(locations)
        self.raw_input = raw_input
        self.meta = meta

    def _fields(self) -> bytes:
        """Every member after ``sessionUpdate``, and the closing brace."""
        parts = [b',"toolCallId":', _text(self.call_id), b',"title":', _text(self.title)]
        if self.kind is not None:
            parts += (b',"kind":', _text(self.kind))
        parts.append(b',"status":"pending"')
        if self.locations:
            where = b",".join(b'{"path":' + _text(str(path)) + b"}" for path in self.locations)
            parts += (b',"locations":[', where, b"]")
        if self.raw_input is not None:
            parts += (b',"rawInput":', _value(self.raw_input))
        if self.meta is not None:
            if type(self.meta) is not dict:
                raise TypeError("the _meta is not a dict")
            parts += (b',"_meta":', _value(self.meta))
        parts.append(b"}")
        return b"".join(parts)

    def update_json(self) -> bytes:
        """The ``tool_call`` object."""
        return b'{"sessionUpdate":"tool_call"' + self._fields()

    def v2_json(self) -> bytes:
        """The ``tool_call_update`` upsert that creates the call on v2."""
        return b'{"sessionUpdate":"tool_call_update"' + self._fields()

    def model(self) -> acp.SessionUpdate:
        """The ``ToolCall``."""
        locations = [acp.ToolCallLocation(path=str(p)) for p in self.locations] or None
        optional = given(kind=self.kind, locations=locations, raw_input=self.raw_input, meta=self.meta)
        return acp.ToolCall(tool_call_id=self.call_id, title=self.title, status="pending", **optional)


class ToolCallChange(Template):
    """A ``tool_call_update``: a status, a title, content (text, a diff, a terminal), the output."""

    __slots__ = ("call_id", "diff", "raw_output", "status", "terminal_id", "text", "title")

    def __init__(
        self,
        call_id: str,
        *,
        status: str | None = None,
        title: str | None = None,
        text: str | None = None,
        diff: tuple[str, str | None, str] | None = None,
        terminal_id: str | None = None,
        raw_output: Any = None,
    ) -> None:
        self.call_id = call_id
        self.status = status
        self.title = title
        self.text = text
        #: ``(absolute path, old text or None, new text)``.
        self.diff = diff
        self.terminal_id = terminal_id
        self.raw_output = raw_output

    def _json(self, v2: bool) -> bytes:
        parts = [b'{"sessionUpdate":"tool_call_update","toolCallId":', _text(self.call_id)]
        if self.status is not None:
            parts += (b',"status":', _text(self.status))
        if self.title is not None:
            parts += (b',"title":', _text(self.title))
        content: list[bytes] = []
        if self.text is not None:
            content.append(b'{"type":"content","content":{"type":"text","text":' + _text(self.text) + b"}}")
        if self.diff is not None:
            content.append(_diff_v2(*self.diff) if v2 else _diff(*self.diff))
        if self.terminal_id is not None:
            content.append(b'{"type":"terminal","terminalId":' + _text(self.terminal_id) + b"}")
        if content:
            parts += (b',"content":[', b",".join(content), b"]")
        if self.raw_output is not None:
            parts += (b',"rawOutput":', _value(self.raw_output))
        parts.append(b"}")
        return b"".join(parts)

    def update_json(self) -> bytes:
        """The ``tool_call_update`` object."""
        return self._json(False)

    def v2_json(self) -> bytes:
        """The ``tool_call_update`` object, a diff as ``changes`` and a git patch."""
        return self._json(True)

    def model(self) -> acp.SessionUpdate:
        """The ``ToolCallUpdate``."""
        content: list[acp.ToolCallContent] = []
        if self.text is not None:
            content.append(acp.Content(content=acp.TextContent(text=self.text)))
        if self.diff is not None:
            path, old, new = self.diff
            content.append(acp.Diff(path=path, old_text=old, new_text=new))
        if self.terminal_id is not None:
            content.append(acp.Terminal(terminal_id=self.terminal_id))
        changed = given(
            status=self.status, title=self.title, content=content or None, raw_output=self.raw_output
        )
        return acp.ToolCallUpdate(tool_call_id=self.call_id, **changed)


def _diff(path: str, old: str | None, new: str) -> bytes:
    """A diff as v1 has it (``oldText`` null for a new file)."""
    before = b"null" if old is None else _text(old)
    after = _text(new)
    return b"".join(
        (b'{"type":"diff","path":', _text(path), b',"oldText":', before, b',"newText":', after, b"}")
    )


def _diff_v2(path: str, old: str | None, new: str) -> bytes:
    """A diff as v2 has it: ``changes`` and a git patch."""
    _diff(path, old, new)  # refuses what v1 refuses: a value that is not a str, text that is not UTF-8
    operation = b'"add"' if old is None else b'"modify"'
    return b"".join(
        (
            b'{"type":"diff","changes":[{"operation":',
            operation,
            b',"path":',
            _text(path),
            b'}],"patch":{"format":"git_patch","text":',
            _text(git_patch(path, old, new)),
            b"}}",
        )
    )
