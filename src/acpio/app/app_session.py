"""What an :class:`~acpio.app.AgentApp` hands its hooks: the :class:`AppSession`, and the function types."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional, TypeAlias, Union

from acpio.app.history import Exchange
from acpio.app.menu import Menu, OptionValue, SessionSettings
from acpio.app.turn import Turn
from acpio.capabilities import ClientFeatures
from acpio.jsonrpc import Connection

if TYPE_CHECKING:
    from acpio.schema import InitializeRequest, InitializeResponse, SessionMode, StopReason

__all__ = [
    "AppSession",
    "ChangeFunction",
    "CloseFunction",
    "InitializeFunction",
    "OpenFunction",
    "PromptFunction",
    "StopReasonName",
]

#: The stop reasons of a turn (``StopReason``), as strings.
StopReasonName: TypeAlias = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
#: A prompt function: takes the :class:`~acpio.app.Turn`, returns why the turn stopped (``None``:
#: ``end_turn``).
#: (The models the aliases name are forward references, so that reading an alias creates no class
#: and imports no pydantic, while the alias stays a typing object: ``PromptFunction | None`` works.)
PromptFunction: TypeAlias = Callable[[Turn], Awaitable[Union["StopReason", StopReasonName, None]]]


@dataclass
class AppSession:
    """A session open on one connection, as :meth:`AgentApp.on_open` and :attr:`AgentApp.sessions` give it."""

    #: The connection to the client it is open on.
    cx: Connection
    #: The session's id.
    id: str
    #: Its working directory.
    cwd: Path
    #: Its current mode and config option values (and what it is offered: see :meth:`offer_choices`).
    settings: SessionSettings
    #: What the client advertised at ``initialize``.
    client: ClientFeatures
    menu: Menu
    #: The MCP servers the client declared for the session, as JSON objects.
    mcp_servers: tuple[Mapping[str, Any], ...] = ()
    #: The other directories the client gave the session (``additionalDirectories``).
    additional_directories: tuple[Path, ...] = ()
    #: How it was opened: ``session/new``, ``session/load``, ``session/resume`` or ``session/fork``.
    method: str = "session/new"
    #: The mode and option values the store kept for it (a loaded or resumed session), even those
    #: the app's own choices do not include: :meth:`offer_modes` and :meth:`offer_choices` restore
    #: them when the session is first offered them.
    restored_mode: str | None = None
    restored_options: dict[str, Any] = field(default_factory=dict[str, Any])
    turn: asyncio.Task[None] | None = None
    current: Turn | None = None
    history: list[Exchange] = field(default_factory=list)
    #: Whether the turn's task has begun to run (a task cancelled before that never runs its code).
    _turn_started: bool = field(default=False, init=False, repr=False)

    def offer_modes(self, modes: list[SessionMode], current: str | None = None) -> None:
        """Offer this session ``modes`` instead of the app's; its mode becomes ``current``.

        ``current`` defaults to the session's mode when it is one of ``modes``, else the first.
        """
        if not modes:
            raise ValueError("offer_modes needs at least one mode")
        ids = [m.id for m in modes]
        chosen = current
        if chosen is None:
            chosen = self.restored_mode if self.restored_mode in ids else self.settings.mode
        self.restored_mode = None
        self.settings.modes = list(modes)
        self.settings.mode = chosen if chosen in ids else ids[0]

    def offer_choices(self, option_id: str, choices: Mapping[str, str], current: str | None = None) -> None:
        """Offer this session other ``choices`` (value -> label) for the select option ``option_id``.

        The value is the stored one when the session was loaded with a value among ``choices`` (the
        first offer only), else it stays when it is still a choice, else it becomes ``current``
        (default: the first choice). The client hears of it with the setup answer, or
        :meth:`AgentApp.refresh_options`.
        """
        if self.menu.choices_of(self.settings, option_id) is None:
            raise ValueError(f"{option_id!r} is not a select option of the app")
        if not choices:
            raise ValueError(f"offer_choices({option_id!r}) needs at least one choice")
        self.settings.choices[option_id] = dict(choices)
        value = self.restored_options.pop(option_id, None)
        if isinstance(value, str) and value in choices:
            self.settings.options[option_id] = value
        elif self.settings.options.get(option_id) not in choices:
            self.settings.options[option_id] = (
                current if current is not None and current in choices else next(iter(choices))
            )

    def value(self, option_id: str) -> OptionValue:
        """The current value of the config option ``option_id``."""
        return self.settings.options[option_id]


#: ``await fn(request, answer)`` before ``initialize`` is answered: it may change ``answer`` (auth
#: methods, capabilities) or return another one.
InitializeFunction: TypeAlias = Callable[
    ["InitializeRequest", "InitializeResponse"], Awaitable[Optional["InitializeResponse"]]
]
#: ``await fn(session)`` when a session is opened, before the answer: it may offer the session its
#: own modes and choices, or raise a :class:`~acpio.RequestError` to refuse it.
OpenFunction: TypeAlias = Callable[[AppSession], Awaitable[None]]
#: ``await fn(session)`` when a session closes (closed, deleted, loaded elsewhere, connection ended).
CloseFunction: TypeAlias = Callable[[AppSession], Awaitable[None]]
#: ``await fn(session, config_id)`` after the client changed a config option (``config_id``) or the
#: mode (``None``), before the answer: it may change other settings to match.
ChangeFunction: TypeAlias = Callable[[AppSession, str | None], Awaitable[None]]
