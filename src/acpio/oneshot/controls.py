"""What ``acpio prompt`` changes in a session besides prompting: its mode, its config options.

:func:`set_mode` and :func:`set_option` are the helpers the flags (``--mode ID``,
``--option ID=VALUE``) and the interactive mode call: each checks the choice against what the
agent offered (the session's modes and config options), sends ``session/set_mode`` or
``session/set_config_option`` (``type: "boolean"`` with ``true``/``false`` for a boolean option),
and raises :class:`ControlError` with a message naming the choices when the choice is not one of
them. :func:`client_capabilities` is what ``acpio prompt`` advertises at ``initialize``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from acpio.oneshot.elicitation import ElicitationSettings
from acpio.schema import (
    AuthCapabilities,
    BooleanConfigOptionCapabilities,
    ClientCapabilities,
    ClientSessionCapabilities,
    CompactionCapabilities,
    FileSystemCapabilities,
    NoticeCapabilities,
    SessionConfigOption,
    SessionConfigOptionsCapabilities,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    SetSessionModeRequest,
)
from acpio.session import ActiveSession

__all__ = [
    "ControlError",
    "Controls",
    "apply_controls",
    "client_capabilities",
    "set_mode",
    "set_option",
]

_TRUE = frozenset({"true", "on", "yes", "1"})
_FALSE = frozenset({"false", "off", "no", "0"})


class ControlError(ValueError):
    """A mode or option the agent does not offer, or a value an option does not take (the message says)."""


@dataclass(frozen=True)
class Controls:
    """The session changes ``acpio prompt`` makes before it sends the prompt."""

    #: ``--mode ID``: switch the session to this mode.
    mode: str | None = None
    #: ``--option ID=VALUE``: set these config options, in order (VALUE as typed).
    options: tuple[tuple[str, str], ...] = ()
    #: ``--auth METHOD``: log in with this auth method first.
    auth_method: str | None = None
    #: Whether a terminal auth method could be run (the agent is a command this client starts).
    terminal_auth: bool = False


def client_capabilities(
    elicitation: ElicitationSettings | None = None, *, terminal_auth: bool = False
) -> ClientCapabilities:
    """What ``acpio prompt`` advertises at ``initialize``.

    Files, terminals, notices, compactions, boolean options; terminal auth when it can run it; and
    elicitation in the modes ``elicitation`` can answer.
    """
    extra: dict[str, Any] = {}
    modes = elicitation.capabilities() if elicitation is not None else None
    if modes is not None:
        extra["elicitation"] = modes
    return ClientCapabilities(
        fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
        terminal=True,
        session=ClientSessionCapabilities(
            notices=NoticeCapabilities(),
            compaction=CompactionCapabilities(),
            config_options=SessionConfigOptionsCapabilities(boolean=BooleanConfigOptionCapabilities()),
        ),
        auth=AuthCapabilities(terminal=terminal_auth),
        **extra,
    )


async def set_mode(session: ActiveSession, mode_id: str) -> None:
    """Switch ``session`` to mode ``mode_id`` (``session/set_mode``); :class:`ControlError` if not offered.

    The agent's refusal (a :class:`~acpio.RequestError`) is raised as it is.
    """
    modes = session.modes
    if modes is None:
        raise ControlError(f"mode {mode_id!r}: the agent offers no session modes")
    offered = [mode.id for mode in modes.available_modes]
    if mode_id not in offered:
        raise ControlError(f"mode {mode_id!r}: the agent's modes are {', '.join(offered) or 'none'}")
    await session.connection.send_request(
        SetSessionModeRequest(session_id=session.session_id, mode_id=mode_id)
    )


async def set_option(
    session: ActiveSession,
    option_id: str,
    value: str | bool,
    options: Sequence[SessionConfigOption] | None = None,
) -> list[SessionConfigOption]:
    """Set config option ``option_id`` of ``session`` (``session/set_config_option``); every option after.

    ``options`` are the session's options as last known (default: the setup answer's). ``value`` is a
    select option's value (or its name), or for a boolean option ``True``/``False`` or text
    (``true``/``false``, ``on``/``off``, ``yes``/``no``). :class:`ControlError` names the choices when the
    option or the value is not offered.
    """
    known = list(options if options is not None else session.config_options or ())
    option = next((o for o in known if o.id == option_id), None)
    if option is None:
        names = ", ".join(o.id for o in known) or "none"
        raise ControlError(f"option {option_id!r}: the agent's config options are {names}")
    request: SetSessionConfigOptionRequest
    if option.type == "boolean":
        flag = _boolean(option_id, value)
        request = SetSessionConfigOptionRequest(
            session_id=session.session_id, config_id=option_id, type="boolean", value=flag
        )
    else:
        choices = _select_choices(option)
        text = str(value)
        picked = next((v for v, name in choices if text in (v, name)), None)
        if picked is None:
            offered = ", ".join(v for v, _ in choices) or "nothing"
            raise ControlError(f"option {option_id!r} takes one of {offered}, not {text!r}")
        request = SetSessionConfigOptionRequest(
            session_id=session.session_id, config_id=option_id, value=picked
        )
    answer: SetSessionConfigOptionResponse = await session.connection.send_request(request)
    return list(answer.config_options)


def _boolean(option_id: str, value: str | bool) -> bool:
    if isinstance(value, bool):
        return value
    text = value.strip().casefold()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ControlError(f"option {option_id!r} is on or off: give true or false, not {value!r}")


def _select_choices(option: SessionConfigOption) -> list[tuple[str, str]]:
    """(value, name) of every choice of a select option, groups flattened."""
    found: list[tuple[str, str]] = []
    for item in getattr(option, "options", None) or ():
        inner = getattr(item, "options", None)
        if inner is not None:  # a group of options
            found.extend((o.value, o.name) for o in inner)
        else:
            found.append((item.value, item.name))
    return found


async def apply_controls(session: ActiveSession, controls: Controls, note: Callable[[str], None]) -> None:
    """``--mode`` and ``--option``, in order; raises :class:`ControlError`, or the agent's refusal."""
    if controls.mode is not None:
        await set_mode(session, controls.mode)
        note(f"mode: {controls.mode}")
    options: list[SessionConfigOption] | None = None
    for option_id, value in controls.options:
        options = await set_option(session, option_id, value, options)
        now = next((o for o in options if o.id == option_id), None)
        if now is not None:
            note(f"option {option_id}: {_value_text(now.current_value)}")


def _value_text(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
