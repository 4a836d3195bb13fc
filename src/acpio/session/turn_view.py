"""One view of a turn whatever the ACP version: messages, tool calls, terminals, plans, state.

ACP v1 and v2 say the same things differently: v1 streams chunks and ends a turn with the answer
to ``session/prompt``; v2 keys messages by ``messageId``, upserts tool calls and agent-owned
terminals, and ends a turn with an idle ``state_update``. :class:`TurnView` reads the messages of
either version (:meth:`TurnView.apply`) into the same views and tells what changed as one
:data:`TurnEvent`:

* :class:`TextAdded`: text of a :class:`MessageView` (the user's, the agent's or its thoughts),
  grouped by message id;
* :class:`ToolCallChanged`: a :class:`ToolCallView`, every update merged into it;
* :class:`TerminalChanged`: an agent-owned :class:`TerminalView` (v2), its output as bytes;
* :class:`PlanChanged`: the entries of a plan;
* :class:`StateChanged`: ``running``, ``requires_action`` or ``idle`` with its stop reason (on v1
  made from the prompt being sent and answered).

:class:`~acpio.session.ActiveSession` keeps one per session (:attr:`ActiveSession.view
<acpio.session.ActiveSession.view>`), applied to each message it reads, and gives the event as
:attr:`SessionMessage.event <acpio.session.SessionMessage.event>`.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from acpio.jsonrpc import NotificationDispatch

if TYPE_CHECKING:
    from acpio.schema import v2
    from acpio.session.messages import SessionMessage

__all__ = [
    "DiffView",
    "FileChange",
    "MessageRole",
    "MessageView",
    "PlanChanged",
    "PlanEntryView",
    "StateChanged",
    "TerminalChanged",
    "TerminalRef",
    "TerminalView",
    "TextAdded",
    "ToolCallChanged",
    "ToolCallView",
    "ToolContent",
    "TurnEvent",
    "TurnView",
    "text_chunk",
]

#: Whose message: the user's, the agent's answer, or the agent's thoughts.
MessageRole: TypeAlias = Literal["user", "agent", "thought"]


class MessageView:
    """One message of the conversation: its id (``None`` for v1 chunks without one), whose, its text."""

    __slots__ = ("_parts", "message_id", "role")

    def __init__(self, message_id: str | None, role: MessageRole, text: str = "") -> None:
        self.message_id = message_id
        self.role = role
        #: The text in pieces, joined when read: a message streamed in 100,000 chunks is not copied
        #: once per chunk.
        self._parts = [text]

    @property
    def text(self) -> str:
        """The message's text so far."""
        parts = self._parts
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        return parts[0]

    @text.setter
    def text(self, value: str) -> None:
        self._parts = [value]

    def add(self, text: str) -> None:
        """Append ``text`` to the message."""
        self._parts.append(text)

    def __eq__(self, other: object) -> bool:
        if type(other) is not MessageView:
            return NotImplemented
        return (self.message_id, self.role, self.text) == (other.message_id, other.role, other.text)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return f"MessageView(message_id={self.message_id!r}, role={self.role!r}, text={self.text!r})"


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file a diff changes: ``add``, ``delete``, ``modify``, ``move``, ``copy`` (or a custom value).

    v1 diffs carry the texts (``old_text`` is ``None`` for a new file); v2 diffs name the paths and
    leave the text to the diff's ``patch``.
    """

    operation: str
    path: str
    old_path: str | None = None
    old_text: str | None = None
    new_text: str | None = None


@dataclass(frozen=True, slots=True)
class DiffView:
    """A tool call's edit: the files it changes and, when the agent gave one, a git patch (v2)."""

    changes: tuple[FileChange, ...]
    patch: str | None = None


@dataclass(frozen=True, slots=True)
class TerminalRef:
    """A terminal shown in a tool call's content (its output is in :attr:`TurnView.terminals` on v2)."""

    terminal_id: str


#: One item of a tool call's content: text (a short mark for images and the like), a diff, a terminal.
ToolContent: TypeAlias = str | DiffView | TerminalRef


@dataclass(slots=True)
class ToolCallView:
    """A tool call as its updates left it: each field the latest value the agent sent.

    Merged from the ``tool_call``, every ``tool_call_update`` and the tool call of a
    ``session/request_permission`` about it (:meth:`TurnView.apply_permission_request`): a field
    an update leaves out keeps what an earlier one said, so a permission request without ``kind``
    still shows the kind its ``tool_call`` gave. ``locations`` are the paths the call touches
    (as the agent wrote them); ``raw_input`` and ``raw_output`` the JSON the agent gave as they
    are. ``cancellable``: the agent advertised ``capabilities.cancel`` for it (v2): the client
    may send ``tool_call/cancel`` while it runs.
    """

    tool_call_id: str
    title: str | None = None
    kind: str | None = None
    status: str | None = None
    content: list[ToolContent] = field(default_factory=list)
    cancellable: bool = False
    locations: list[str] = field(default_factory=list)
    raw_input: object = None
    raw_output: object = None

    @property
    def diffs(self) -> list[DiffView]:
        """The diffs among :attr:`content`: what the call changes (or proposes to change) in files."""
        return [item for item in self.content if isinstance(item, DiffView)]

    def copy(self) -> ToolCallView:
        """A copy that later updates of this call do not change (its lists are copied too)."""
        return ToolCallView(
            self.tool_call_id,
            self.title,
            self.kind,
            self.status,
            list(self.content),
            self.cancellable,
            list(self.locations),
            self.raw_input,
            self.raw_output,
        )


@dataclass(slots=True)
class TerminalView:
    """An agent-owned terminal (v2): its command, directory, output so far (bytes) and exit."""

    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output: bytearray = field(default_factory=bytearray)
    exit_code: int | None = None
    signal: str | None = None
    exited: bool = False


@dataclass(frozen=True, slots=True)
class PlanEntryView:
    """One entry of a plan."""

    content: str
    priority: str
    status: str


@dataclass(frozen=True, slots=True)
class TextAdded:
    """``text`` was added to ``message`` (``replaced``: a v2 whole-message update set it to ``text``)."""

    message: MessageView
    text: str
    replaced: bool = False


@dataclass(frozen=True, slots=True)
class ToolCallChanged:
    """A tool call was created or updated; ``call`` is its merged view."""

    call: ToolCallView


@dataclass(frozen=True, slots=True)
class TerminalChanged:
    """An agent-owned terminal was created or updated; ``appended`` is the output it added.

    A snapshot (``terminal_update`` with ``output``) that goes on from the output so far appends
    what is new; one that rewrites it gives the whole new output.
    """

    terminal: TerminalView
    appended: bytes = b""


@dataclass(frozen=True, slots=True)
class PlanChanged:
    """A plan's entries, whole (``plan_id`` ``None`` on v1, which has one plan per session)."""

    plan_id: str | None
    entries: tuple[PlanEntryView, ...]


@dataclass(frozen=True, slots=True)
class StateChanged:
    """The session's foreground state: ``running``, ``requires_action``, ``idle`` (or a custom value).

    ``stop_reason`` is set on ``idle`` when a turn ended (``end_turn``, ``cancelled``...).
    """

    state: str
    stop_reason: str | None = None


#: What a message changed in the view.
TurnEvent: TypeAlias = TextAdded | ToolCallChanged | TerminalChanged | PlanChanged | StateChanged


class TurnView:
    """The session as its messages left it, the same for ACP v1 and v2 (see the module docstring)."""

    __slots__ = (
        "_by_id",
        "_new_turn",
        "_turn_start",
        "messages",
        "plans",
        "state",
        "stop_reason",
        "terminals",
        "tool_calls",
    )

    def __init__(self) -> None:
        #: Every message, in the order each was first seen.
        self.messages: list[MessageView] = []
        #: The tool calls by id.
        self.tool_calls: dict[str, ToolCallView] = {}
        #: The agent-owned terminals (v2) by id.
        self.terminals: dict[str, TerminalView] = {}
        #: The plans by id (``None``: v1's single plan).
        self.plans: dict[str | None, tuple[PlanEntryView, ...]] = {}
        #: ``running``, ``requires_action``, ``idle``...; ``idle`` before the first prompt.
        self.state = "idle"
        #: Why the last turn ended; ``None`` before that.
        self.stop_reason: str | None = None
        self._by_id: dict[str, MessageView] = {}
        #: Where the current turn's messages start in :attr:`messages`.
        self._turn_start = 0
        #: A turn ended: the next new message starts the next one.
        self._new_turn = False

    def __repr__(self) -> str:
        return (
            f"<TurnView {self.state} messages={len(self.messages)} tool_calls={len(self.tool_calls)} "
            f"terminals={len(self.terminals)}>"
        )

    @property
    def text(self) -> str:
        """The agent's text in the current (or last) turn: its messages of the turn, joined.

        A turn's messages are those first seen after its prompt was sent or the previous turn
        ended.
        """
        return "".join(m.text for m in self.messages[self._turn_start :] if m.role == "agent")

    def start_turn(self) -> StateChanged:
        """A prompt was sent: the next new message starts its turn, and the state is ``running``."""
        self._new_turn = True
        return self._set_state("running", None)

    def end_turn(self, stop_reason: str) -> StateChanged:
        """The turn ended (v1: the agent answered ``session/prompt``)."""
        return self._set_state("idle", stop_reason)

    def apply(self, message: SessionMessage) -> TurnEvent | None:
        """Read one ``session/update`` into the view; the change it made, ``None`` if none shown here.

        Updates this view has no place for (commands, config options, usage...) and requests give
        ``None``. Raises :class:`~acpio.InvalidParams` for an update that does not match the schema.
        """
        dispatch = message.dispatch
        if type(dispatch) is NotificationDispatch and dispatch.method == "session/update":
            chunk = text_chunk(dispatch.params, message.protocol_version)
            if chunk is not None:  # the common case, read without building the models
                return self._chunk(*chunk)
        if message.protocol_version == 2:
            update_v2 = message.update_v2
            return None if update_v2 is None else self.apply_update_v2(update_v2)
        update = message.update
        return None if update is None else self._apply_v1(update)

    # --- v1 ------------------------------------------------------------------------------------------

    def _apply_v1(self, update: Any) -> TurnEvent | None:
        from acpio.schema import (
            AgentMessageChunk,
            AgentThoughtChunk,
            Plan,
            ToolCall,
            ToolCallUpdate,
            UserMessageChunk,
        )

        if isinstance(update, AgentMessageChunk | AgentThoughtChunk | UserMessageChunk):
            return self._chunk(
                _CHUNK_ROLES[update.session_update], update.message_id, block_text(update.content)
            )
        if isinstance(update, ToolCall | ToolCallUpdate):
            if isinstance(update, ToolCall):
                self._call(update.tool_call_id).content = []
            return ToolCallChanged(self._merge_v1(update))
        if isinstance(update, Plan):
            return self._plan(None, update.entries)
        return None

    # --- v2 ------------------------------------------------------------------------------------------

    def apply_update_v2(self, update: v2.SessionUpdate) -> TurnEvent | None:
        """Read one typed v2 update (``UpdateSessionNotification.update``) as :meth:`apply` does.

        For a reader holding the typed notification rather than a :class:`SessionMessage` (a
        proxy's handler); the change it made, ``None`` if none shown here.
        """
        from acpio.schema import v2

        if isinstance(update, v2.AgentMessageChunk | v2.AgentThoughtChunk | v2.UserMessageChunk):
            return self._chunk(
                _CHUNK_ROLES[update.session_update], update.message_id, block_text(update.content)
            )
        if isinstance(update, v2.AgentMessage | v2.AgentThought | v2.UserMessage):
            return self._whole_message(update)
        if isinstance(update, v2.RunningStateUpdate | v2.RequiresActionStateUpdate | v2.OtherStateUpdate):
            return self._set_state(str(update.state), None)
        if isinstance(update, v2.IdleStateUpdate):
            return self._set_state("idle", update.stop_reason)
        if isinstance(update, v2.ToolCallUpdate):
            return ToolCallChanged(self._merge_v2(update))
        if isinstance(update, v2.ToolCallContentChunk):
            call = self._call(update.tool_call_id)
            call.content.append(_tool_content(update.content))
            return ToolCallChanged(call)
        if isinstance(update, v2.TerminalUpdate):
            return self._terminal(update)
        if isinstance(update, v2.TerminalOutputChunk):
            terminal = self.terminals.setdefault(update.terminal_id, TerminalView(update.terminal_id))
            data = _decoded(update.data)
            terminal.output += data
            return TerminalChanged(terminal, data)
        if isinstance(update, v2.PlanUpdate) and isinstance(update.plan, v2.PlanItems):
            return self._plan(update.plan.plan_id, update.plan.entries)
        return None

    def _whole_message(self, update: Any) -> TextAdded | None:
        role = _MESSAGE_ROLES[update.session_update]
        message = self._message(role, update.message_id)
        if "content" not in update.model_fields_set:
            return None  # only its _meta changed
        message.text = "".join(block_text(block) for block in update.content or ())
        return TextAdded(message, message.text, replaced=True)

    def _terminal(self, update: Any) -> TerminalChanged:
        terminal = self.terminals.setdefault(update.terminal_id, TerminalView(update.terminal_id))
        given = update.model_fields_set
        if "command" in given:
            terminal.command = update.command
        if "cwd" in given:
            terminal.cwd = update.cwd
        appended = b""
        if "output" in given:  # a snapshot: it replaces what was there
            old = bytes(terminal.output)
            new = _decoded(update.output.data) if update.output is not None else b""
            terminal.output = bytearray(new)
            appended = new[len(old) :] if new.startswith(old) else new  # what was not there yet
        if "exit_status" in given:
            status = update.exit_status
            terminal.exited = status is not None
            terminal.exit_code = status.exit_code if status is not None else None
            terminal.signal = status.signal if status is not None else None
        return TerminalChanged(terminal, appended)

    def _merge_v1(self, update: Any) -> ToolCallView:
        """Merge a v1 ``ToolCall``/``ToolCallUpdate`` (a field left out or ``null`` keeps its value)."""
        call = self._call(update.tool_call_id)
        for name in ("title", "kind", "status"):
            value = getattr(update, name)
            if value is not None:
                setattr(call, name, str(value))
        if update.content is not None:
            call.content = [_tool_content(item) for item in update.content]
        if update.locations is not None:
            call.locations = [location.path for location in update.locations]
        if update.raw_input is not None:
            call.raw_input = update.raw_input
        if update.raw_output is not None:
            call.raw_output = update.raw_output
        return call

    def _merge_v2(self, update: Any) -> ToolCallView:
        """Merge a v2 ``ToolCallUpdate`` upsert (a field left out keeps its value; ``null`` clears it)."""
        call = self._call(update.tool_call_id)
        given = update.model_fields_set
        for name in ("title", "kind", "status"):
            if name in given:
                value = getattr(update, name)
                setattr(call, name, None if value is None else str(value))
        if "capabilities" in given:
            capabilities = update.capabilities
            call.cancellable = getattr(capabilities, "cancel", None) is not None
        content = update.content
        if "content" in given:  # a list, or null: cleared
            call.content = [_tool_content(item) for item in content] if isinstance(content, list) else []
        if "locations" in given:
            locations = update.locations
            call.locations = [location.path for location in locations] if isinstance(locations, list) else []
        for name in ("raw_input", "raw_output"):
            if name in given:
                setattr(call, name, getattr(update, name))
        return call

    def apply_permission_request(self, tool_call: Any) -> ToolCallView:
        """Merge the tool call a ``session/request_permission`` asks about; give the merged view.

        ``tool_call`` is the request's ``toolCall`` (a v1 :class:`~acpio.schema.ToolCallUpdate`)
        or a v2 request's subject tool call (a v2 ``ToolCallUpdate``). What it leaves out keeps
        what the call's earlier updates said: the reference agent's edit asks without ``kind``,
        and the view still has the ``edit`` its ``tool_call`` gave.
        """
        from acpio.schema import v2

        if isinstance(tool_call, v2.ToolCallUpdate):
            return self._merge_v2(tool_call)
        return self._merge_v1(tool_call)

    # --- shared --------------------------------------------------------------------------------------

    def _set_state(self, state: str, stop_reason: str | None) -> StateChanged:
        self.state = state
        if state == "idle" and stop_reason is not None:
            self.stop_reason = stop_reason
            self._new_turn = True
        return StateChanged(state, stop_reason)

    def _message(self, role: MessageRole, message_id: str | None) -> MessageView:
        if self._new_turn and (message_id is None or message_id not in self._by_id):
            self._new_turn = False
            self._turn_start = len(self.messages)
        if message_id is not None:
            known = self._by_id.get(message_id)
            if known is None:
                known = self._by_id[message_id] = MessageView(message_id, role)
                self.messages.append(known)
            return known
        # v1 chunks without an id continue the last message of the turn if it is the same role's
        messages = self.messages
        if len(messages) > self._turn_start:
            last = messages[-1]
            if last.role == role and last.message_id is None:
                return last
        message = MessageView(None, role)
        self.messages.append(message)
        return message

    def _chunk(self, role: MessageRole, message_id: str | None, text: str) -> TextAdded:
        message = self._message(role, message_id)
        message.add(text)
        return TextAdded(message, text)

    def _call(self, tool_call_id: str) -> ToolCallView:
        call = self.tool_calls.get(tool_call_id)
        if call is None:
            call = self.tool_calls[tool_call_id] = ToolCallView(tool_call_id)
        return call

    def _plan(self, plan_id: str | None, entries: Any) -> PlanChanged:
        views = tuple(PlanEntryView(e.content, str(e.priority), str(e.status)) for e in entries)
        self.plans[plan_id] = views
        return PlanChanged(plan_id, views)


_CHUNK_ROLES: dict[str, MessageRole] = {
    "agent_message_chunk": "agent",
    "agent_thought_chunk": "thought",
    "user_message_chunk": "user",
}
_MESSAGE_ROLES: dict[str, MessageRole] = {
    "agent_message": "agent",
    "agent_thought": "thought",
    "user_message": "user",
}


def text_chunk(params: object, protocol_version: int) -> tuple[MessageRole, str | None, str] | None:
    """Whose, which message and what text a ``session/update``'s params add, read from their JSON.

    Only for a message chunk (the agent's, its thoughts, the user's) carrying a text block, in
    the shape every SDK writes: each object holding only the members the schema names for it (in
    their wire spelling, ``_meta`` an object or ``null``), each value of its type. Params of that
    shape always validate, into the same role, message id and text: reading them here skips
    building the models. Anything else (other updates and blocks, ``annotations``, unknown
    members, the other spelling, bad values) gives ``None``: read it through the models.
    """
    if type(params) is not dict:
        return None
    update = params.get("update")
    if type(update) is not dict or type(params.get("sessionId")) is not str:
        return None
    content = update.get("content")
    kind = update.get("sessionUpdate")
    if type(content) is not dict or type(kind) is not str or content.get("type") != "text":
        return None
    role = _CHUNK_ROLES.get(kind)
    text = content.get("text")
    message_id = update.get("messageId")
    if role is None or type(text) is not str:
        return None
    if type(message_id) is not str and (message_id is not None or protocol_version == 2):
        return None  # v2 requires an id; v1 takes one, or null
    # No member beyond those read, counted (cheaper than comparing key sets); else _meta may be the one.
    identified = "messageId" in update
    if len(params) == 2 and len(update) == 2 + identified and len(content) == 2:
        return role, message_id, text
    if (
        len(params) != 2 + _meta_given(params)
        or len(update) != 2 + identified + _meta_given(update)
        or len(content) != 2 + _meta_given(content)
    ):
        return None
    return role, message_id, text


def _meta_given(value: dict[str, Any]) -> int:
    """1 if ``value`` has a ``_meta`` member (an object or ``null``), 0 if none; 9 (no match) if bad."""
    if "_meta" not in value:
        return 0
    meta = value["_meta"]
    return 1 if meta is None or type(meta) is dict else 9


def block_text(block: object) -> str:
    """The text of a text content block of either version; ``""`` for any other block."""
    text = getattr(block, "text", None) if getattr(block, "type", None) == "text" else None
    return text if isinstance(text, str) else ""


def block_mark(block: object) -> str:
    """The text of a content block; a short mark for images, audio and resources."""
    kind = getattr(block, "type", None)
    if kind == "text":
        return block_text(block)
    if kind in ("image", "audio"):
        return f"[{kind} {getattr(block, 'mime_type', '')}]"
    if kind == "resource_link":
        return f"[link {getattr(block, 'uri', '')}]"
    if kind == "resource":
        return f"[resource {getattr(getattr(block, 'resource', None), 'uri', '')}]"
    return f"[{kind or 'content'}]"


def _tool_content(item: Any) -> ToolContent:
    """A tool call's content item of either version, as a :data:`ToolContent`."""
    kind = getattr(item, "type", None)
    if kind == "content":
        return block_mark(item.content)
    if kind == "terminal":
        return TerminalRef(item.terminal_id)
    if kind != "diff":
        return f"[{kind or 'content'}]"
    if hasattr(item, "changes"):  # v2: the paths, and the text as a git patch
        changes = tuple(_change(change.to_wire()) for change in item.changes)
        return DiffView(changes, item.patch.text if item.patch is not None else None)
    operation = "add" if item.old_text is None else "modify"
    return DiffView((FileChange(operation, item.path, old_text=item.old_text, new_text=item.new_text),))


def _change(wire: dict[str, Any]) -> FileChange:
    old_path = wire.get("oldPath")
    return FileChange(
        str(wire.get("operation", "")),
        str(wire.get("path", "")),
        old_path if isinstance(old_path, str) else None,
    )


def _decoded(data: str) -> bytes:
    """Base64 ``data`` as bytes; what does not decode is kept as its UTF-8 text (shown, not lost)."""
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return data.encode()
