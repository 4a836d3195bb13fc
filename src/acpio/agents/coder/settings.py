"""The reference agent's settings: TOML files of the user and of the project, and the credential file.

Settings are read, in this order, from ``$XDG_CONFIG_HOME/acpio/agent.toml`` (the user's),
``<project>/.acpio/agent.toml`` (the session's directory) and a file given with ``--settings``;
a later file overrides an earlier one key by key (providers by name, modes by id)::

    model = "openai/gpt-4o-mini"      # the default model ("provider/id")
    mode = "ask"                      # the default mode
    reasoning_effort = "medium"       # low, medium, high
    max_turn_requests = 50            # model calls in one turn before it stops
    instructions = "Answer briefly."  # added to the system prompt

    [providers.openai]                # a local OpenAI-compatible server (Ollama)
    base_url = "http://localhost:11434/v1"
    models = [{ id = "llama3.2", context_window = 128000 }]

    [[modes]]
    id = "review"
    name = "Review only"
    edit = "deny"                     # allow, ask or deny: writing and editing files
    execute = "deny"                  # the same for commands
    model = "anthropic/claude-sonnet-4-5"

API keys are never in these files nor in the session store: they come from the environment
(``OPENAI_API_KEY``...) or from the credential file ``authenticate`` writes
(``$XDG_CONFIG_HOME/acpio/credentials.json``, readable by its owner only).
"""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypeAlias

from acpio._private_files import open_private, private_directory
from acpio.agents.coder.model import REASONING_EFFORTS, ModelInfo, ReasoningEffort

__all__ = [
    "DEFAULT_MODES",
    "CredentialFile",
    "ModeSpec",
    "Permission",
    "ProviderSettings",
    "Settings",
    "SettingsError",
    "config_dir",
    "load_settings",
]

Permission: TypeAlias = Literal["allow", "ask", "deny"]
"""What a mode does with a kind of tool: run it, ask the user first, or not offer it to the model."""


class SettingsError(ValueError):
    """A settings file that cannot be used; the message names the file and what is wrong."""


@dataclass(frozen=True, slots=True)
class ModeSpec:
    """A mode of the agent: what it may do without asking, and optionally its own model and instructions."""

    id: str
    name: str
    description: str | None = None
    edit: Permission = "ask"
    execute: Permission = "ask"
    model: str | None = None
    instructions: str | None = None


DEFAULT_MODES = (
    ModeSpec("ask", "Ask before editing", "Reads freely; asks before it edits a file or runs a command"),
    ModeSpec(
        "auto-edit",
        "Edit automatically",
        "Edits files without asking; asks before it runs a command",
        "allow",
    ),
    ModeSpec(
        "read-only", "Read only", "Reads and plans; never edits files nor runs commands", "deny", "deny"
    ),
)
"""The modes offered when no settings file declares any."""


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """A provider's table: its endpoint, the models it declares, a class of one's own, the rest as written."""

    base_url: str | None = None
    models: tuple[ModelInfo, ...] = ()
    cls: str | None = None
    """``"module:Class"`` of a :class:`~acpio.agents.coder.model.ModelProvider` not built into acpio."""
    options: Mapping[str, Any] = field(default_factory=dict[str, Any])


@dataclass(frozen=True, slots=True)
class Settings:
    """The merged settings (see the module's docstring)."""

    model: str | None = None
    mode: str | None = None
    reasoning_effort: ReasoningEffort | None = None
    max_turn_requests: int = 50
    instructions: str | None = None
    providers: Mapping[str, ProviderSettings] = field(default_factory=dict[str, ProviderSettings])
    modes: tuple[ModeSpec, ...] = DEFAULT_MODES


def config_dir() -> Path:
    """The user's acpio config directory: ``$XDG_CONFIG_HOME/acpio`` (``~/.config/acpio``)."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "acpio"


def load_settings(project: Path | None, extra: Path | None = None, *, user: Path | None = None) -> Settings:
    """The settings for a session in ``project``: the user's file, the project's, then ``extra``.

    ``user`` replaces the user's file (tests). Files that do not exist are skipped; ``extra``
    must exist. Raises :class:`SettingsError` naming the file for bad TOML or a bad value.
    """
    paths = [user if user is not None else config_dir() / "agent.toml"]
    if project is not None:
        paths.append(project / ".acpio" / "agent.toml")
    if extra is not None:
        if not extra.is_file():
            raise SettingsError(f"the settings file {extra} does not exist")
        paths.append(extra)
    settings = Settings()
    for path in paths:
        if path.is_file():
            settings = _merge(settings, path)
    return settings


def _merge(settings: Settings, path: Path) -> Settings:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from exc
    try:
        return _apply(settings, data)
    except (TypeError, ValueError, KeyError) as exc:
        raise SettingsError(f"{path}: {exc}") from exc


def _apply(settings: Settings, data: Mapping[str, Any]) -> Settings:
    known = {"model", "mode", "reasoning_effort", "max_turn_requests", "instructions", "providers", "modes"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown settings {unknown}: known ones are {sorted(known)}")
    changes: dict[str, Any] = {}
    for key in ("model", "mode", "instructions"):
        if key in data:
            changes[key] = _string(data[key], key)
    if "reasoning_effort" in data:
        effort = data["reasoning_effort"]
        if effort not in REASONING_EFFORTS:
            raise ValueError(f"reasoning_effort is {effort!r}: one of {list(REASONING_EFFORTS)}")
        changes["reasoning_effort"] = effort
    if "max_turn_requests" in data:
        limit = data["max_turn_requests"]
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"max_turn_requests is {limit!r}: a positive integer")
        changes["max_turn_requests"] = limit
    if "providers" in data:
        providers = dict(settings.providers)
        for name, table in _table(data["providers"], "providers").items():
            providers[name] = _provider(name, _table(table, f"providers.{name}"))
        changes["providers"] = providers
    if "modes" in data:
        modes = {m.id: m for m in settings.modes} if settings.modes is not DEFAULT_MODES else {}
        for table in data["modes"]:
            mode = _mode(_table(table, "modes"))
            modes[mode.id] = mode
        if not modes:
            raise ValueError("modes is empty: declare at least one [[modes]] table")
        changes["modes"] = tuple(modes.values())
    return replace(settings, **changes)


def _string(value: Any, key: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{key} is {value!r}: a string")
    return value


def _count(value: Any, key: str) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise ValueError(f"{key} is {value!r}: a positive integer")
    return value


def _table(value: Any, key: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{key} is {value!r}: a table")
    return value


def _provider(name: str, table: dict[str, Any]) -> ProviderSettings:
    models = []
    for entry in table.get("models", ()):
        entry = _table(entry, f"providers.{name}.models")
        models.append(
            ModelInfo(
                name,
                _string(entry["id"], "id"),
                str(entry.get("name", "")),
                image=bool(entry.get("image", False)),
                audio=bool(entry.get("audio", False)),
                reasoning=bool(entry.get("reasoning", False)),
                context_window=_count(entry.get("context_window"), "context_window"),
                max_output_tokens=_count(entry.get("max_output_tokens"), "max_output_tokens"),
                description=entry.get("description"),
            )
        )
    base_url = table.get("base_url")
    cls = table.get("class")
    rest = {k: v for k, v in table.items() if k not in ("base_url", "models", "class")}
    return ProviderSettings(
        _string(base_url, "base_url") if base_url is not None else None,
        tuple(models),
        _string(cls, "class") if cls is not None else None,
        rest,
    )


def _mode(table: dict[str, Any]) -> ModeSpec:
    mode_id = _string(table.get("id"), "a mode's id")
    for key in ("edit", "execute"):
        if table.get(key, "ask") not in ("allow", "ask", "deny"):
            raise ValueError(f"mode {mode_id!r}: {key} is {table[key]!r}: allow, ask or deny")
    return ModeSpec(
        mode_id,
        _string(table.get("name", mode_id), "name"),
        table.get("description"),
        table.get("edit", "ask"),
        table.get("execute", "ask"),
        table.get("model"),
        table.get("instructions"),
    )


class CredentialFile:
    """The API keys ``authenticate`` was given, by provider: a JSON file only its owner can read.

    The file is written with mode 0600 in a directory of mode 0700, replaced atomically; it is read
    on every use, so another agent process sees a new key at once.
    """

    def __init__(self, path: Path | None = None) -> None:
        #: Where the keys are kept (default: ``credentials.json`` in :func:`config_dir`).
        self.path = path if path is not None else config_dir() / "credentials.json"

    def __repr__(self) -> str:
        return f"CredentialFile({str(self.path)!r})"

    def _read(self) -> dict[str, str]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict):
            return {}
        return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}

    def get(self, provider: str) -> str | None:
        """The key stored for ``provider``, if any."""
        return self._read().get(provider)

    def set(self, provider: str, key: str) -> None:
        """Store ``key`` for ``provider`` (replacing one stored before)."""
        keys = self._read()
        keys[provider] = key
        self._write(keys)

    def clear(self) -> list[str]:
        """Drop every stored key; the providers that had one."""
        keys = self._read()
        if keys:
            self._write({})
        return sorted(keys)

    def _write(self, keys: Mapping[str, str]) -> None:
        private_directory(self.path.parent)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        descriptor = open_private(temporary, os.O_WRONLY | os.O_TRUNC)
        with os.fdopen(descriptor, "w", encoding="utf-8") as out:
            json.dump(dict(keys), out)
        os.replace(temporary, self.path)
