"""testy's sessions, kept in a session store (:mod:`acpio.store`): in memory by default.

:class:`TestySessions` hands out ids ``testy-1``, ``testy-2``... (the first free one in the
store) and finds sessions again for every session method, from the store when this process has
not seen them (``acpio testy --store sqlite:///...``: a session outlives the process). A
:class:`TestySession` keeps what the protocol lets a client see or change: its working
directory, mode (``chat`` or ``plan``), the ``verbosity`` config option, title, plan, and the
conversation history that ``session/load`` replays. Each change and each history entry is
written to the store as it happens, so a killed testy loses at most the entry being written.

A session is *active* from ``session/new``, ``session/load`` or ``session/resume`` until
``session/close``; prompts and settings need an active session. A closed session is still listed
and can be loaded or resumed; ``session/delete`` forgets it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Coroutine, Iterator
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from acpio.agents.testy.script import MODES
from acpio.errors import InvalidParams
from acpio.schema import (
    AgentMessageChunk,
    ContentBlock,
    SessionConfigOption,
    SessionConfigSelectOption,
    SessionInfo,
    SessionMode,
    SessionModeState,
    SessionNotification,
    TextContent,
    UserMessageChunk,
)

if TYPE_CHECKING:
    from acpio.agents.testy.turn import CancellableTurn
    from acpio.store import SessionRecord, SessionStore

__all__ = [
    "SHOUT_OPTION",
    "VERBOSITY",
    "VERBOSITY_OPTION",
    "AgentText",
    "HistoryEntry",
    "TestySession",
    "TestySessions",
]

#: The config option testy offers, and its values (``normal`` is the default).
VERBOSITY_OPTION: Final = "verbosity"
VERBOSITY: Final[tuple[str, ...]] = ("brief", "normal", "verbose")
#: The boolean config option testy offers to clients that advertise boolean config options: when on,
#: testy's message text is upper-cased.
SHOUT_OPTION: Final = "shout"
_VERBOSITY_NAMES: Final = {
    "brief": ("Brief", "help lists the command words only"),
    "normal": ("Normal", "the default"),
    "verbose": ("Verbose", "a thought chunk announces each script command before it runs"),
}
_MODE_NAMES: Final = {
    "chat": ("Chat", "the default mode"),
    "plan": ("Plan", "a mode to switch to; testy behaves the same in both"),
}


#: The ``_meta`` of a stored chunk that replaces its message's text (``replace`` on v2).
_REPLACES: Final = {"acpio": {"replaces": True}}


def _with_id(message_id: str | None) -> dict[str, str]:
    """``message_id=`` for a v1 chunk model when there is one (v1 entries are stored without it)."""
    return {} if message_id is None else {"message_id": message_id}


class AgentText:
    """Agent message text in a session's history: the chunks of one stretch of agent messages.

    On v2 a stretch is one message, with the ``message_id`` its chunks carried (``None`` on v1).
    """

    __slots__ = ("message_id", "parts")

    def __init__(self, text: str, message_id: str | None = None) -> None:
        self.parts = [text]
        self.message_id = message_id

    @property
    def text(self) -> str:
        """The chunks joined."""
        return "".join(self.parts)


#: One entry of a session's history: a content block of a prompt, or agent message text.
HistoryEntry: TypeAlias = ContentBlock | AgentText


class TestySession:
    """One session: its settings, its history and the prompt turn running in it, if any."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, session_id: str, cwd: str, store: SessionStore | None = None) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.mode_id = MODES[0]
        self.verbosity = "normal"
        #: The boolean option ``shout``: agent message text in upper case.
        self.shout = False
        #: Whether the client takes boolean config options (``shout`` is offered only then).
        self.booleans = False
        self._title: str | None = None
        #: Where the session's changes and history entries are written (``None``: nowhere).
        self.store = store
        self._writes: set[asyncio.Task[Any]] = set()
        #: The steps of the last ``plan`` command, for ``progress``.
        self.plan: tuple[str, ...] = ()
        self.history: list[HistoryEntry] = []
        #: The v2 message id of each history entry (``None``: a v1 entry), in step with ``history``.
        self.message_ids: list[str | None] = []
        self.active = True
        #: The prompt turn in progress, if any.
        self.turn: CancellableTurn | None = None
        self._tool_calls = itertools.count(1)
        self._ids: dict[str, itertools.count[int]] = {}

    def __repr__(self) -> str:
        state = "active" if self.active else "closed"
        return f"<TestySession {self.session_id!r} {state} cwd={self.cwd!r}>"

    @classmethod
    def restore(cls, record: SessionRecord, entries: list[bytes], store: SessionStore) -> TestySession:
        """The session as the store kept it: its settings, and its history from the stored entries."""
        session = cls(record.session_id, record.cwd)
        if record.mode in MODES:
            session.mode_id = record.mode
        verbosity = record.config.get(VERBOSITY_OPTION)
        if verbosity in VERBOSITY:
            session.verbosity = verbosity
        session.shout = record.config.get(SHOUT_OPTION) is True
        session.title = record.title
        for entry in entries:
            update = SessionNotification.model_validate_json(entry).update
            if isinstance(update, UserMessageChunk):
                session.remember_user([update.content], update.message_id)
            elif isinstance(update, AgentMessageChunk) and isinstance(update.content, TextContent):
                if update.meta == _REPLACES and update.message_id is not None:
                    session.replace_agent(update.content.text, update.message_id)
                else:
                    session.remember_agent(update.content.text, update.message_id)
        session.store = store
        return session

    @property
    def title(self) -> str | None:
        """The session's title (``None``: none); setting it writes it to the store."""
        return self._title

    @title.setter
    def title(self, title: str | None) -> None:
        self._title = title
        if self.store is not None:
            self._write(self.store.set_title(self.session_id, title))

    def _write(self, change: Coroutine[Any, Any, object]) -> None:
        """Write a change to the store in a task of its own (the caller may not await)."""
        task = asyncio.get_running_loop().create_task(change)
        self._writes.add(task)
        task.add_done_callback(self._writes.discard)

    async def flush(self) -> None:
        """Wait for the changes still being written to the store."""
        if self._writes:
            await asyncio.gather(*self._writes, return_exceptions=True)

    def _record(self, update: UserMessageChunk | AgentMessageChunk) -> None:
        if self.store is not None:
            entry = SessionNotification(session_id=self.session_id, update=update)
            self.store.append_soon(self.session_id, entry.to_wire_json())

    def resolve(self, path: str) -> str:
        """``path`` as an absolute path: relative paths are taken from the session's cwd."""
        return os.path.normpath(os.path.join(self.cwd, path))

    def next_tool_call_id(self) -> str:
        """A tool call id not used before in this session: ``tool-1``, ``tool-2``..."""
        return f"tool-{next(self._tool_calls)}"

    def next_id(self, prefix: str) -> str:
        """An id not used before in this session for ``prefix``: ``compaction-1``, ``elicitation-2``..."""
        return f"{prefix}-{next(self._ids.setdefault(prefix, itertools.count(1)))}"

    # --- history ----------------------------------------------------------------------------------

    def new_message_id(self, kind: str) -> str:
        """A v2 message id for the next history entry: ``user-N``/``agent-N``, N the history's length.

        The history only grows, and each message starts at its own position, so ids never repeat,
        even in a session restored from the store.
        """
        return f"{kind}-{len(self.history)}"

    def remember_user(self, blocks: list[ContentBlock], message_id: str | None = None) -> None:
        """Add the blocks of a prompt to the history (with its v2 message id)."""
        self.history.extend(blocks)
        self.message_ids.extend([message_id] * len(blocks))
        ids = _with_id(message_id)
        for block in blocks:
            self._record(UserMessageChunk(content=block, **ids))

    def remember_agent(self, text: str, message_id: str | None = None) -> None:
        """Add agent message text to the history, joined to the same message's text right before it."""
        last = self.history[-1] if self.history else None
        if isinstance(last, AgentText) and last.message_id == message_id:
            last.parts.append(text)
        else:
            self.history.append(AgentText(text, message_id))
            self.message_ids.append(message_id)
        self._record(AgentMessageChunk(content=TextContent(text=text), **_with_id(message_id)))

    def replace_agent(self, text: str, message_id: str) -> None:
        """Replace the text of agent message ``message_id`` when it is the history's last entry (v2).

        Stored as a chunk marked ``_meta.acpio.replaces``, which :meth:`restore` applies the same way.
        """
        last = self.history[-1] if self.history else None
        if isinstance(last, AgentText) and last.message_id == message_id:
            last.parts[:] = [text]
        else:
            self.history.append(AgentText(text, message_id))
            self.message_ids.append(message_id)
        chunk = AgentMessageChunk(content=TextContent(text=text), message_id=message_id, meta=_REPLACES)
        self._record(chunk)

    def replay(self) -> Iterator[SessionNotification]:
        """The history as ``session/update`` notifications, in order.

        One user message chunk per prompt block, one agent message chunk per stretch of agent text.
        """
        for entry in self.history:
            if isinstance(entry, AgentText):
                chunk: AgentMessageChunk | UserMessageChunk = AgentMessageChunk(
                    content=TextContent(text=entry.text)
                )
            else:
                chunk = UserMessageChunk(content=entry)
            yield SessionNotification(session_id=self.session_id, update=chunk)

    def history_words(self) -> int:
        """How many words of text the history holds, user and agent (what ``usage`` reports)."""
        return sum(
            len(entry.text.split()) for entry in self.history if isinstance(entry, AgentText | TextContent)
        )

    # --- what the client sees ---------------------------------------------------------------------

    def modes(self) -> SessionModeState:
        """The session's modes and the current one."""
        available = [
            SessionMode(id=mode, name=_MODE_NAMES[mode][0], description=_MODE_NAMES[mode][1])
            for mode in MODES
        ]
        return SessionModeState(current_mode_id=self.mode_id, available_modes=available)

    def config_options(self) -> list[SessionConfigOption]:
        """The session's config options with their current values (one: ``verbosity``)."""
        choices = [
            SessionConfigSelectOption(value=value, name=name, description=description)
            for value, (name, description) in _VERBOSITY_NAMES.items()
        ]
        verbosity = SessionConfigOption(
            id=VERBOSITY_OPTION,
            name="Verbosity",
            description="How much testy says beside what the script asks for",
            type="select",
            current_value=self.verbosity,
            options=choices,
        )
        if not self.booleans:
            return [verbosity]
        shout = SessionConfigOption(
            id=SHOUT_OPTION,
            name="Shout",
            description="testy's messages in upper case",
            type="boolean",
            current_value=self.shout,
        )
        return [verbosity, shout]

    # --- what the client may change ---------------------------------------------------------------

    def set_mode(self, mode_id: str) -> None:
        """Switch to ``mode_id``; raises ``InvalidParams`` (-32602) for a mode testy does not have."""
        if mode_id not in MODES:
            raise InvalidParams(
                {"modeId": mode_id, "available": list(MODES)},
                message=f"Unknown mode {mode_id!r}: testy's modes are {', '.join(MODES)}",
            )
        self.mode_id = mode_id
        if self.store is not None:
            self._write(self.store.set_mode(self.session_id, mode_id))

    def set_config_option(self, config_id: str, value: object) -> None:
        """Set a config option; raises ``InvalidParams`` (-32602) for an unknown option or value."""
        if config_id == SHOUT_OPTION and self.booleans:
            if not isinstance(value, bool):
                raise InvalidParams(
                    {"configId": config_id, "value": value},
                    message=f"{SHOUT_OPTION} is a boolean option: its value is true or false, not {value!r}",
                )
            self.shout = value
            if self.store is not None:
                self._write(self.store.set_config(self.session_id, SHOUT_OPTION, value))
            return
        if config_id != VERBOSITY_OPTION:
            known = [VERBOSITY_OPTION, SHOUT_OPTION] if self.booleans else [VERBOSITY_OPTION]
            raise InvalidParams(
                {"configId": config_id},
                message=f"Unknown config option {config_id!r}: testy's options are "
                f"{', '.join(repr(k) for k in known)}",
            )
        if not isinstance(value, str) or value not in VERBOSITY:
            raise InvalidParams(
                {"configId": config_id, "value": value, "allowed": list(VERBOSITY)},
                message=f"{VERBOSITY_OPTION} takes one of {', '.join(VERBOSITY)}, not {value!r}",
            )
        self.verbosity = value
        if self.store is not None:
            self._write(self.store.set_config(self.session_id, VERBOSITY_OPTION, value))


class TestySessions:
    """All of testy's sessions: those live in this process, backed by a session store."""

    def __init__(self, store: SessionStore | None = None) -> None:
        if store is None:
            from acpio.store import MemoryStore

            store = MemoryStore()
        #: Where the sessions are kept (a :class:`~acpio.store.MemoryStore` unless given).
        self.store = store
        self._live: dict[str, TestySession] = {}
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._live)

    async def create(self, cwd: str, mcp_servers: list[dict[str, Any]]) -> TestySession:
        """A new active session in ``cwd``, with the next id free in the store."""
        while True:
            session_id = f"testy-{next(self._ids)}"
            try:
                await self.store.create(
                    cwd,
                    session_id=session_id,
                    mcp_servers=mcp_servers,
                    mode=MODES[0],
                    config={VERBOSITY_OPTION: "normal"},
                )
            except ValueError:  # taken: by an earlier process on the same store
                continue
            break
        await self.store.open(session_id)
        session = self._live[session_id] = TestySession(session_id, cwd, self.store)
        return session

    def find(self, session_id: str) -> TestySession | None:
        """The session with this id if this process has it, or ``None``."""
        return self._live.get(session_id)

    async def get(self, session_id: str) -> TestySession:
        """The session with this id, from the store if needed; ``InvalidParams`` (-32602) if there is none."""
        session = self._live.get(session_id)
        if session is not None:
            return session
        record = await self.store.get(session_id)
        if record is None:
            raise InvalidParams(
                {"sessionId": session_id},
                message=f"Unknown session {session_id!r}: testy has none with this id in its session store "
                f"({type(self.store).__name__}). Create one with session/new, or pick one from session/list.",
            )
        entries = [entry async for entry in self.store.history(session_id)]
        session = TestySession.restore(record, entries, self.store)
        session.active = False
        self._live[session_id] = session
        return session

    async def get_active(self, session_id: str, method: str) -> TestySession:
        """:meth:`get`, and the session must be active (not closed) for ``method``."""
        session = await self.get(session_id)
        if not session.active:
            raise InvalidParams(
                {"sessionId": session_id},
                message=f"Session {session_id!r} is closed: load or resume it (session/load, "
                f"session/resume) before sending {method}.",
            )
        return session

    async def reopen(self, session: TestySession, cwd: str, mcp_servers: list[dict[str, Any]]) -> None:
        """Make the session active again in ``cwd``, with the client's MCP servers."""
        session.cwd = cwd
        session.active = True
        await session.flush()
        await self.store.update(session.session_id, cwd=cwd, mcp_servers=mcp_servers)
        await self.store.open(session.session_id)

    async def close(self, session: TestySession) -> None:
        """Close the session: it stays stored (and listed)."""
        session.active = False
        await session.flush()
        await self.store.close(session.session_id)

    async def delete(self, session_id: str) -> None:
        """Forget the session (nothing happens if there is none)."""
        session = self._live.pop(session_id, None)
        if session is not None:
            await session.flush()
        await self.store.delete(session_id)

    async def exists(self, session_id: str) -> bool:
        """Whether the store has a session with this id."""
        return session_id in self._live or await self.store.get(session_id) is not None

    async def listed(self, cwd: str | None = None) -> list[SessionInfo]:
        """Every stored session, most recently updated first; with ``cwd``, those whose cwd is exactly it."""
        infos: list[SessionInfo] = []
        cursor: str | None = None
        while True:
            page = await self.store.list(cwd=cwd, cursor=cursor, limit=500)
            for record in page.sessions:
                info = SessionInfo(session_id=record.session_id, cwd=record.cwd, updated_at=record.updated_at)
                if record.title is not None:
                    info.title = record.title
                infos.append(info)
            if page.next_cursor is None:
                return infos
            cursor = page.next_cursor
