"""testy's sessions: in memory, for the life of the process.

A :class:`SessionStore` hands out ids ``testy-1``, ``testy-2``... and finds sessions again for
every session method. A :class:`TestySession` keeps what the protocol lets a client see or change:
its working directory, mode (``chat`` or ``plan``), the ``verbosity`` config option, title, plan,
and the conversation history that ``session/load`` replays.

A session is *active* from ``session/new``, ``session/load`` or ``session/resume`` until
``session/close``; prompts and settings need an active session. A closed session is still listed
and can be loaded or resumed; ``session/delete`` forgets it.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final, TypeAlias

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
    from acpio.agents.testy.turn import Turn

__all__ = ["VERBOSITY", "VERBOSITY_OPTION", "AgentText", "HistoryEntry", "SessionStore", "TestySession"]

#: The config option testy offers, and its values (``normal`` is the default).
VERBOSITY_OPTION: Final = "verbosity"
VERBOSITY: Final[tuple[str, ...]] = ("brief", "normal", "verbose")
_VERBOSITY_NAMES: Final = {
    "brief": ("Brief", "help lists the command words only"),
    "normal": ("Normal", "the default"),
    "verbose": ("Verbose", "a thought chunk announces each script command before it runs"),
}
_MODE_NAMES: Final = {
    "chat": ("Chat", "the default mode"),
    "plan": ("Plan", "a mode to switch to; testy behaves the same in both"),
}


class AgentText:
    """Agent message text in a session's history: the chunks of one stretch of agent messages."""

    __slots__ = ("parts",)

    def __init__(self, text: str) -> None:
        self.parts = [text]

    @property
    def text(self) -> str:
        """The chunks joined."""
        return "".join(self.parts)


#: One entry of a session's history: a content block of a prompt, or agent message text.
HistoryEntry: TypeAlias = ContentBlock | AgentText


class TestySession:
    """One session: its settings, its history and the prompt turn running in it, if any."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, session_id: str, cwd: str) -> None:
        self.session_id = session_id
        self.cwd = cwd
        self.mode_id = MODES[0]
        self.verbosity = "normal"
        self.title: str | None = None
        #: The steps of the last ``plan`` command, for ``progress``.
        self.plan: tuple[str, ...] = ()
        self.history: list[HistoryEntry] = []
        self.active = True
        #: The prompt turn in progress, if any.
        self.turn: Turn | None = None
        self._tool_calls = itertools.count(1)

    def __repr__(self) -> str:
        state = "active" if self.active else "closed"
        return f"<TestySession {self.session_id!r} {state} cwd={self.cwd!r}>"

    def resolve(self, path: str) -> str:
        """``path`` as an absolute path: relative paths are taken from the session's cwd."""
        return os.path.normpath(os.path.join(self.cwd, path))

    def next_tool_call_id(self) -> str:
        """A tool call id not used before in this session: ``tool-1``, ``tool-2``..."""
        return f"tool-{next(self._tool_calls)}"

    # --- history ----------------------------------------------------------------------------------

    def remember_user(self, blocks: list[ContentBlock]) -> None:
        """Add the blocks of a prompt to the history."""
        self.history.extend(blocks)

    def remember_agent(self, text: str) -> None:
        """Add agent message text to the history, joined to the agent text right before it."""
        last = self.history[-1] if self.history else None
        if isinstance(last, AgentText):
            last.parts.append(text)
        else:
            self.history.append(AgentText(text))

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
        return [verbosity]

    def info(self) -> SessionInfo:
        """The session as ``session/list`` shows it."""
        info = SessionInfo(session_id=self.session_id, cwd=self.cwd)
        if self.title is not None:
            info.title = self.title
        return info

    # --- what the client may change ---------------------------------------------------------------

    def set_mode(self, mode_id: str) -> None:
        """Switch to ``mode_id``; raises ``InvalidParams`` (-32602) for a mode testy does not have."""
        if mode_id not in MODES:
            raise InvalidParams(
                {"modeId": mode_id, "available": list(MODES)},
                message=f"Unknown mode {mode_id!r}: testy's modes are {', '.join(MODES)}",
            )
        self.mode_id = mode_id

    def set_config_option(self, config_id: str, value: object) -> None:
        """Set a config option; raises ``InvalidParams`` (-32602) for an unknown option or value."""
        if config_id != VERBOSITY_OPTION:
            raise InvalidParams(
                {"configId": config_id},
                message=f"Unknown config option {config_id!r}: testy has one, {VERBOSITY_OPTION!r}",
            )
        if not isinstance(value, str) or value not in VERBOSITY:
            raise InvalidParams(
                {"configId": config_id, "value": value, "allowed": list(VERBOSITY)},
                message=f"{VERBOSITY_OPTION} takes one of {', '.join(VERBOSITY)}, not {value!r}",
            )
        self.verbosity = value


class SessionStore:
    """All of testy's sessions, by id."""

    def __init__(self) -> None:
        self._sessions: dict[str, TestySession] = {}
        self._ids = itertools.count(1)

    def __len__(self) -> int:
        return len(self._sessions)

    def create(self, cwd: str) -> TestySession:
        """A new active session in ``cwd``, with the next free id."""
        session_id = f"testy-{next(self._ids)}"
        session = self._sessions[session_id] = TestySession(session_id, cwd)
        return session

    def find(self, session_id: str) -> TestySession | None:
        """The session with this id, or ``None``."""
        return self._sessions.get(session_id)

    def get(self, session_id: str) -> TestySession:
        """The session with this id; raises ``InvalidParams`` (-32602) naming the id if there is none."""
        session = self._sessions.get(session_id)
        if session is None:
            raise InvalidParams(
                {"sessionId": session_id},
                message=f"Unknown session {session_id!r}: testy keeps sessions in memory for the life of "
                "its process, and has none with this id. Create one with session/new, or pick one from "
                "session/list.",
            )
        return session

    def get_active(self, session_id: str, method: str) -> TestySession:
        """:meth:`get`, and the session must be active (not closed) for ``method``."""
        session = self.get(session_id)
        if not session.active:
            raise InvalidParams(
                {"sessionId": session_id},
                message=f"Session {session_id!r} is closed: load or resume it (session/load, "
                f"session/resume) before sending {method}.",
            )
        return session

    def delete(self, session_id: str) -> None:
        """Forget the session (nothing happens if there is none)."""
        self._sessions.pop(session_id, None)

    def listed(self, cwd: str | None = None) -> list[TestySession]:
        """The sessions in creation order; with ``cwd``, only those whose cwd is that directory."""
        sessions = list(self._sessions.values())
        if cwd is None:
            return sessions
        wanted = os.path.normpath(cwd)
        return [s for s in sessions if os.path.normpath(s.cwd) == wanted]
