"""How an agent or proxy command is written down: an argv list, a shell-words string, or JSON.

The three forms a user or a configuration file may give, parsed into one :class:`AgentCommand`::

    ["python", "agent.py", "--verbose"]                      # argv, taken literally
    "ANTHROPIC_LOG=debug python 'my agent.py' --verbose"     # shell words; leading NAME=value set env
    '{"command": "python", "args": ["agent.py"], "env": {"ANTHROPIC_LOG": "debug"}}'

No shell ever runs: the string form is split with :mod:`shlex`, so quoting works as in a shell but
pipes, globs and ``$VARIABLES`` do not.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AgentCommand"]

_ENV_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_CONFIG_FIELDS = ("command", "args", "env")
_DISPLAY_LIMIT = 100


@dataclass(frozen=True)
class AgentCommand:
    """A program to start, its arguments and the environment variables to set on top of ours."""

    command: str
    """The program: a name looked up on ``PATH``, or a path."""
    args: tuple[str, ...] = ()
    """The arguments after the program."""
    env: Mapping[str, str] = field(default_factory=dict)
    """Variables added to (or replacing those of) the inherited environment."""

    def __post_init__(self) -> None:
        if not isinstance(self.command, str) or not self.command:
            raise ValueError("An agent command needs a program to run; got an empty command")
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "env", dict(self.env))

    @classmethod
    def parse(cls, spec: str | Sequence[str] | Mapping[str, Any]) -> AgentCommand:
        """Parse any of the three forms (see the module docstring); a mapping is a JSON config."""
        if isinstance(spec, str):
            return cls.from_string(spec)
        if isinstance(spec, Mapping):
            return cls.from_config(spec)
        argv = list(spec)
        if not argv:
            raise ValueError("An agent command needs a program to run; got an empty argv list")
        if not all(isinstance(arg, str) for arg in argv):
            raise TypeError(f"Every element of an agent argv must be a string, got {argv!r}")
        return cls(argv[0], tuple(argv[1:]))

    @classmethod
    def from_string(cls, text: str) -> AgentCommand:
        """Parse a JSON config (text starting with ``{``) or shell words (``python agent.py``)."""
        stripped = text.strip()
        if stripped.startswith("{"):
            try:
                config = json.loads(stripped)
            except json.JSONDecodeError as exc:
                raise ValueError(f"The agent command looks like JSON but is not valid JSON: {exc}") from exc
            return cls.from_config(config)
        try:
            words = shlex.split(stripped)
        except ValueError as exc:  # an unclosed quote
            raise ValueError(f"Cannot split the agent command {text!r} into words: {exc}") from exc
        return cls.from_args(words)

    @classmethod
    def from_args(cls, argv: Sequence[str]) -> AgentCommand:
        """Build from command-line words, where leading ``NAME=value`` words set variables.

        ``["DEBUG=1", "python", "agent.py"]`` runs ``python agent.py`` with ``DEBUG=1`` set.
        """
        env: dict[str, str] = {}
        words = list(argv)
        while words and _ENV_ASSIGNMENT.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            env[name] = value
        if not words:
            raise ValueError(f"The agent command {shlex.join(argv)!r} names no program to run")
        return cls(words[0], tuple(words[1:]), env)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> AgentCommand:
        """Build from ``{"command": str, "args": [str, ...], "env": {str: str}}``; ``command`` is required."""
        if not isinstance(config, Mapping):
            raise TypeError(f"An agent config must be a JSON object, got {type(config).__name__}")
        unknown = sorted(set(config) - set(_CONFIG_FIELDS))
        if unknown:
            hint = (
                " (this looks like an MCP server entry, not an agent)"
                if {"type", "name"} & set(unknown)
                else ""
            )
            raise ValueError(
                f"Unknown field(s) {', '.join(map(repr, unknown))} in the agent config{hint}; "
                "the fields are 'command', 'args' and 'env'"
            )
        command = config.get("command")
        if not isinstance(command, str) or not command:
            raise ValueError(f"The agent config needs a non-empty string 'command', got {command!r}")
        args = config.get("args", [])
        if not isinstance(args, list | tuple) or not all(isinstance(arg, str) for arg in args):
            raise ValueError(f"'args' in the agent config must be a list of strings, got {args!r}")
        env = config.get("env", {})
        if not isinstance(env, Mapping) or not all(
            isinstance(key, str) and isinstance(value, str) for key, value in env.items()
        ):
            raise ValueError(f"'env' in the agent config must map names to string values, got {env!r}")
        return cls(command, tuple(args), env)

    @property
    def argv(self) -> list[str]:
        """The program followed by its arguments."""
        return [self.command, *self.args]

    def with_env(self, env: Mapping[str, str]) -> AgentCommand:
        """A copy with more variables set (``env`` wins over the ones already here)."""
        return AgentCommand(self.command, self.args, {**self.env, **env})

    def to_config(self) -> dict[str, Any]:
        """The JSON config form; ``args`` and ``env`` are left out when empty."""
        config: dict[str, Any] = {"command": self.command}
        if self.args:
            config["args"] = list(self.args)
        if self.env:
            config["env"] = dict(self.env)
        return config

    def to_json(self) -> str:
        """The JSON config as text, which :meth:`from_string` reads back."""
        return json.dumps(self.to_config())

    def display(self) -> str:
        """A short shell-like rendering for messages and logs (long commands are cut)."""
        text = shlex.join(self.argv)
        return text if len(text) <= _DISPLAY_LIMIT else text[: _DISPLAY_LIMIT - 1] + "…"
