"""What an :class:`~acpio.app.AgentApp` lets the user choose: slash commands, modes, config options.

:class:`Menu` holds what the app declared and turns it into the protocol's shapes (the setup
answer's ``modes`` and ``configOptions``, ``available_commands_update``); :class:`SessionSettings`
is one session's current choices. Commands, modes and options are kept as declared and written as
JSON (:meth:`Menu.setup_wire`, :meth:`Menu.commands_wire`: the same bytes as the models): their
models are built only when needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from acpio import schema as acp
from acpio.app.v2_shapes import MODE_CONFIG_ID
from acpio.capabilities import ClientFeatures
from acpio.errors import InvalidParams

if TYPE_CHECKING:
    from acpio.schema import AvailableCommand, AvailableCommandsUpdate, SessionConfigOption, SessionMode

__all__ = ["CommandCall", "Menu", "SessionSettings"]

#: A config option's value: a select option's value, or a boolean.
OptionValue = str | bool


@dataclass(frozen=True)
class CommandCall:
    """A prompt that invoked a slash command: ``/name input``."""

    #: The command's name, without the slash.
    name: str
    #: The text after the name (stripped; empty when there is none).
    input: str


@dataclass
class SessionSettings:
    """One session's current mode and config option values."""

    #: The current mode's id (``None`` when the app offers no modes).
    mode: str | None
    #: The current value of every config option, by id.
    options: dict[str, OptionValue] = field(default_factory=dict)
    #: Whether the client takes boolean config options (else they are not offered to it).
    booleans: bool = False
    #: The modes offered to this session, when they differ from the app's (``None``: the app's).
    modes: list[SessionMode] | None = None
    #: The choices of select options offered to this session, where they differ from the app's.
    choices: dict[str, dict[str, str]] = field(default_factory=dict[str, dict[str, str]])


@dataclass(frozen=True)
class _Option:
    id: str
    name: str
    default: OptionValue
    description: str | None
    category: str | None = None
    choices: Mapping[str, str] | None = None  # None: a boolean option

    def state(self, value: OptionValue, choices: Mapping[str, str] | None = None) -> SessionConfigOption:
        """The option's ``SessionConfigOption`` at ``value``: :meth:`state_wire`'s JSON, validated."""
        return acp.SessionConfigOption.model_validate(self.state_wire(value, choices))

    def state_wire(self, value: OptionValue, choices: Mapping[str, str] | None = None) -> dict[str, Any]:
        """The option's JSON at ``value``, in the model's field order (``state`` validates it)."""
        state: dict[str, Any] = {"id": self.id, "name": self.name, **self._described()}
        state["type"] = "boolean" if self.choices is None else "select"
        state["currentValue"] = value
        if self.choices is not None:
            offered = self.choices if choices is None else choices
            state["options"] = [{"value": v, "name": label} for v, label in offered.items()]
        return state

    def _described(self) -> dict[str, Any]:
        described: dict[str, Any] = {"description": self.description} if self.description else {}
        if self.category:
            described["category"] = self.category
        return described


@dataclass(frozen=True)
class _Mode:
    """A mode the app declared (its ``SessionMode`` is built when first read)."""

    id: str
    name: str
    description: str | None

    def model(self) -> SessionMode:
        """The mode's ``SessionMode``: :meth:`wire`'s JSON, validated."""
        return acp.SessionMode.model_validate(self.wire())

    def wire(self) -> dict[str, str]:
        """The mode's JSON, as the model writes it (``description`` only when given)."""
        mode = {"id": self.id, "name": self.name}
        if self.description is not None:
            mode["description"] = self.description
        return mode


@dataclass(frozen=True)
class _Command:
    """A slash command the app declared (its ``AvailableCommand`` is built when first read)."""

    name: str
    description: str
    hint: str | None

    def model(self) -> AvailableCommand:
        """The command's ``AvailableCommand``: :meth:`wire`'s JSON, validated."""
        return acp.AvailableCommand.model_validate(self.wire())

    def wire(self) -> dict[str, Any]:
        """The command's JSON, as the model writes it (``input`` is set, maybe null)."""
        return {
            "name": self.name,
            "description": self.description,
            "input": None if self.hint is None else {"hint": self.hint},
        }


class Menu:
    """The commands, modes and config options an app declared (see :class:`~acpio.app.AgentApp`)."""

    def __init__(self) -> None:
        self.options: list[_Option] = []
        #: The slash commands, in the order declared.
        self.commands: list[_Command] = []
        self._modes: list[_Mode] = []
        self._mode_models: list[SessionMode] | None = None

    @property
    def has_modes(self) -> bool:
        """Whether the app declared modes (without building their models)."""
        return bool(self._modes)

    @property
    def modes(self) -> list[SessionMode]:
        """The modes the app declared, as models (built when first read)."""
        if self._mode_models is None:
            self._mode_models = [mode.model() for mode in self._modes]
        return self._mode_models

    # --- declaring --------------------------------------------------------------------------------

    def add_command(self, name: str, description: str, hint: str | None) -> None:
        """Declare the slash command ``/name``."""
        name = name.removeprefix("/")
        if not name or any(c.isspace() for c in name):
            raise ValueError(f"A command name is one word without spaces, like 'review'; not {name!r}")
        if any(c.name == name for c in self.commands):
            raise ValueError(f"The command /{name} is declared twice")
        self.commands.append(_Command(name, description, hint))

    def add_mode(self, mode_id: str, name: str, description: str | None) -> None:
        """Declare a session mode."""
        if any(m.id == mode_id for m in self._modes):
            raise ValueError(f"The mode {mode_id!r} is declared twice")
        self._modes.append(_Mode(mode_id, name, description))
        self._mode_models = None

    def add_select(
        self,
        option_id: str,
        name: str,
        choices: Mapping[str, str],
        default: str,
        description: str | None,
        category: str | None,
    ) -> None:
        """Declare a config option chosen among ``choices``."""
        if default not in choices:
            raise ValueError(f"The default {default!r} of option {option_id!r} is not one of {list(choices)}")
        self._add(_Option(option_id, name, default, description, category, dict(choices)))

    def add_boolean(self, option_id: str, name: str, default: bool, description: str | None) -> None:
        """Declare an on/off config option."""
        self._add(_Option(option_id, name, default, description))

    def _add(self, option: _Option) -> None:
        if any(o.id == option.id for o in self.options):
            raise ValueError(f"The config option {option.id!r} is declared twice")
        self.options.append(option)

    # --- per session ------------------------------------------------------------------------------

    def check_v2(self) -> None:
        """Raise ``ValueError`` when the modes cannot be v2's ``mode`` option (an option has that id)."""
        if self._modes and any(o.id == MODE_CONFIG_ID for o in self.options):
            raise ValueError(
                f"The app has modes and a config option {MODE_CONFIG_ID!r}: on ACP v2 the modes are the "
                f"option {MODE_CONFIG_ID!r}; give the option another id to serve v2"
            )

    def settings(self, client: ClientFeatures) -> SessionSettings:
        """A new session's settings: the first mode, every option at its default."""
        return SessionSettings(
            mode=self._modes[0].id if self._modes else None,
            options={o.id: o.default for o in self.options},
            booleans=client.boolean_config_options,
        )

    def restored(
        self, client: ClientFeatures, mode: str | None, values: Mapping[str, Any]
    ) -> SessionSettings:
        """A stored session's settings: its mode and option values where still declared and valid."""
        settings = self.settings(client)
        if mode is not None and any(m.id == mode for m in self._modes):
            settings.mode = mode
        for option in self.options:
            value = values.get(option.id)
            if value is not None and (
                isinstance(value, bool) if option.choices is None else value in option.choices
            ):
                settings.options[option.id] = value
        return settings

    def modes_of(self, settings: SessionSettings) -> list[SessionMode]:
        """The modes offered to a session: its own when it has some, else the app's."""
        return self.modes if settings.modes is None else settings.modes

    def choices_of(self, settings: SessionSettings, option_id: str) -> Mapping[str, str] | None:
        """The choices of a select option for a session (``None`` for a boolean or unknown option)."""
        option = next((o for o in self.options if o.id == option_id), None)
        if option is None or option.choices is None:
            return None
        return settings.choices.get(option_id, option.choices)

    def setup(self, settings: SessionSettings) -> dict[str, Any]:
        """The ``modes`` and ``configOptions`` of a setup answer (only those the app declared)."""
        fields: dict[str, Any] = {}
        modes = self.modes_of(settings)
        if modes and settings.mode is not None:
            fields["modes"] = acp.SessionModeState(current_mode_id=settings.mode, available_modes=list(modes))
        if self.options:
            fields["config_options"] = self.options_state(settings)
        return fields

    def setup_wire(self, settings: SessionSettings) -> dict[str, Any] | None:
        """:meth:`setup` as JSON, in the models' field order, without building them.

        ``None`` when the session was offered modes or choices of its own (models the user built:
        :meth:`setup` writes them).
        """
        if settings.modes is not None or settings.choices:
            return None
        fields: dict[str, Any] = {}
        if self._modes and settings.mode is not None:
            modes = [mode.wire() for mode in self._modes]
            fields["modes"] = {"currentModeId": settings.mode, "availableModes": modes}
        if self.options:
            fields["configOptions"] = [
                o.state_wire(settings.options[o.id])
                for o in self.options
                if o.choices is not None or settings.booleans
            ]
        return fields

    def options_state(self, settings: SessionSettings, with_mode: bool = False) -> list[SessionConfigOption]:
        """Every option the client may see, with its current value.

        ``with_mode`` (v2, which has no modes): the session's modes first, as the select option
        ``mode`` with ``category: "mode"``.
        """
        states = [
            o.state(settings.options[o.id], settings.choices.get(o.id))
            for o in self.options
            if o.choices is not None or settings.booleans
        ]
        modes = self.modes_of(settings)
        if with_mode and modes and settings.mode is not None:
            choices = [acp.SessionConfigSelectOption(value=m.id, name=m.name) for m in modes]
            mode = acp.SessionConfigOption(
                id=MODE_CONFIG_ID,
                name="Mode",
                type="select",
                category="mode",
                current_value=settings.mode,
                options=choices,
            )
            states.insert(0, mode)
        return states

    def commands_update(self) -> AvailableCommandsUpdate:
        """The ``available_commands_update`` that lists the declared commands."""
        return acp.AvailableCommandsUpdate(available_commands=[c.model() for c in self.commands])

    def commands_wire(self) -> dict[str, Any]:
        """:meth:`commands_update`'s ``to_wire()``, written without models."""
        commands = [c.wire() for c in self.commands]
        return {"sessionUpdate": "available_commands_update", "availableCommands": commands}

    def change(self, settings: SessionSettings, config_id: str | None, value: Any) -> None:
        """Set the mode (``config_id`` ``None``) or an option; ``InvalidParams`` (-32602) if it cannot."""
        if config_id is None:
            self.check_mode(value, settings)
            settings.mode = value
        else:
            self.set_option(settings, config_id, value)

    def check_mode(self, mode_id: str, settings: SessionSettings | None = None) -> None:
        """Raise ``InvalidParams`` (-32602) unless ``mode_id`` is a mode offered (to the session)."""
        offered = self._modes if settings is None or settings.modes is None else settings.modes
        ids = [m.id for m in offered]
        if mode_id not in ids:
            raise InvalidParams({"modeId": mode_id, "modes": ids}, message="Unknown mode")

    def set_option(self, settings: SessionSettings, option_id: str, value: Any) -> None:
        """Set an option; ``InvalidParams`` (-32602) for an unknown option or a value it cannot take."""
        option = next((o for o in self.options if o.id == option_id), None)
        if option is None:
            raise InvalidParams(
                {"configId": option_id, "options": [o.id for o in self.options]},
                message="Unknown config option",
            )
        choices = settings.choices.get(option_id, option.choices)
        valid = isinstance(value, bool) if choices is None else value in choices
        if not valid or (choices is not None and isinstance(value, bool)):
            expected = "a boolean" if choices is None else f"one of {list(choices)}"
            raise InvalidParams(
                {"configId": option_id, "value": value, "expected": expected}, message="Invalid config value"
            )
        settings.options[option_id] = value

    def parse_command(self, text: str) -> CommandCall | None:
        """The declared command ``text`` invokes (``/name input``), or ``None``."""
        if not text.startswith("/"):
            return None
        parts = text[1:].split(maxsplit=1)
        if parts and any(c.name == parts[0] for c in self.commands):
            return CommandCall(parts[0], parts[1].strip() if len(parts) > 1 else "")
        return None
