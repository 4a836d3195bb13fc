"""A permission policy written in TOML: :func:`load_policy` reads it into a :class:`~acpio.client.RulePolicy`.

The format (``examples/policy.toml`` is a complete example)::

    default = "ask"                 # allow | deny | ask: when no rule matches

    [[rule]]
    name = "read inside the project"
    action = "allow"
    kind = ["read", "search"]
    paths = ["**"]

A rule's conditions are the fields of :class:`~acpio.client.Rule`; a list field also takes a
single string. A mistake raises :class:`PolicyFileError`, naming the file, the line and key, and
what to write instead.
"""

from __future__ import annotations

import difflib
import os
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from acpio.client.permissions import PermissionChoice
from acpio.client.policy import RulePolicy
from acpio.client.policy_audit import PolicyDecision
from acpio.client.policy_rules import ACTIONS, Rule

__all__ = ["PolicyFileError", "load_policy", "parse_policy"]

_LIST_KEYS: Final = ("kind", "title", "paths", "any_path", "command", "argv", "env", "mcp_server")
_RULE_KEYS: Final = ("name", "action", "outside_root", *_LIST_KEYS)
_TOP_KEYS: Final = ("default", "rule")
_KINDS: Final = (
    "read",
    "edit",
    "delete",
    "move",
    "search",
    "execute",
    "think",
    "fetch",
    "switch_mode",
    "other",
)


class PolicyFileError(ValueError):
    """A policy file that cannot be read: ``path``, ``line`` (``None`` if unknown) and the message."""

    def __init__(self, path: str, line: int | None, message: str) -> None:
        super().__init__(f"{path}:{line}: {message}" if line is not None else f"{path}: {message}")
        self.path = path
        self.line = line


def load_policy(
    path: str | os.PathLike[str],
    *,
    root: str | os.PathLike[str] | None = None,
    ask: PermissionChoice | None = None,
    on_decision: Callable[[PolicyDecision], None] | None = None,
) -> RulePolicy:
    """The :class:`~acpio.client.RulePolicy` the TOML file at ``path`` describes.

    ``root``, ``ask`` and ``on_decision`` are the policy's (see :class:`~acpio.client.RulePolicy`).
    Raises :class:`PolicyFileError` for a file that cannot be read or describes no valid policy.
    """
    name = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PolicyFileError(name, None, f"cannot read the policy file: {error}") from None
    return parse_policy(text, name, root=root, ask=ask, on_decision=on_decision)


def parse_policy(
    text: str,
    name: str = "<policy>",
    *,
    root: str | os.PathLike[str] | None = None,
    ask: PermissionChoice | None = None,
    on_decision: Callable[[PolicyDecision], None] | None = None,
) -> RulePolicy:
    """The policy the TOML ``text`` describes; ``name`` is the file named in errors."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        line = re.search(r"line (\d+)", str(error))
        raise PolicyFileError(
            name, int(line.group(1)) if line else None, f"not valid TOML ({error}); see examples/policy.toml"
        ) from None
    where = _Locator(name, text)
    for key in data:
        if key not in _TOP_KEYS:
            raise where.error(None, key, f"unknown key {key!r}{_suggest(key, _TOP_KEYS)}")
    default = data.get("default", "ask")
    if default not in ACTIONS:
        raise where.error(None, "default", f"default = {default!r}: write one of {_quoted(ACTIONS)}")
    rules = data.get("rule", [])
    if not isinstance(rules, list) or not all(isinstance(rule, dict) for rule in rules):
        raise where.error(None, "rule", "rules are written as [[rule]] tables, one per rule")
    parsed = [_rule(where, index, rule) for index, rule in enumerate(rules)]
    return RulePolicy(parsed, default=default, root=root, ask=ask, on_decision=on_decision)


def _rule(where: _Locator, index: int, table: dict[str, Any]) -> Rule:
    for key in table:
        if key not in _RULE_KEYS:
            raise where.error(index, key, f"unknown key {key!r}{_suggest(key, _RULE_KEYS)}")
    if "action" not in table:
        raise where.error(
            index, None, f'the rule has no action: add action = "allow" (or {_quoted(ACTIONS)})'
        )
    action = table["action"]
    if action not in ACTIONS:
        raise where.error(index, "action", f"action = {action!r}: write one of {_quoted(ACTIONS)}")
    name = table.get("name")
    if name is not None and not isinstance(name, str):
        raise where.error(index, "name", f'name = {name!r}: write a string, name = "my rule"')
    outside = table.get("outside_root")
    if outside is not None and not isinstance(outside, bool):
        raise where.error(index, "outside_root", f"outside_root = {outside!r}: write true or false")
    lists: dict[str, tuple[str, ...]] = {}
    for key in _LIST_KEYS:
        value = table.get(key, [])
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise where.error(
                index, key, f'{key} = {value!r}: write a string or a list of strings, {key} = ["..."]'
            )
        lists[key] = tuple(value)
    for kind in lists["kind"]:
        if kind not in _KINDS:
            raise where.error(
                index, "kind", f"kind {kind!r} is no tool kind{_suggest(kind, _KINDS)}: use {_quoted(_KINDS)}"
            )
    return Rule(action=action, name=name, outside_root=outside, **lists)


def _quoted(words: tuple[str, ...]) -> str:
    return ", ".join(f'"{word}"' for word in words)


def _suggest(word: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(word, known, n=1)
    return f" (did you mean {close[0]!r}?)" if close else f" (known: {', '.join(known)})"


class _Locator:
    """Finds the line of a key of the n-th ``[[rule]]`` (tomllib gives values, not their lines)."""

    def __init__(self, name: str, text: str) -> None:
        self.name = name
        self.lines = text.splitlines()

    def error(self, rule: int | None, key: str | None, message: str) -> PolicyFileError:
        where = f"rule {rule + 1}" if rule is not None else "top level"
        key_text = f", key {key!r}" if key is not None else ""
        return PolicyFileError(self.name, self._line(rule, key), f"{where}{key_text}: {message}")

    def _line(self, rule: int | None, key: str | None) -> int | None:
        start, end = 0, len(self.lines)
        headers = [i for i, line in enumerate(self.lines) if re.match(r"\s*\[\[\s*rule\s*\]\]", line)]
        if rule is not None and rule < len(headers):
            start = headers[rule]
            end = headers[rule + 1] if rule + 1 < len(headers) else len(self.lines)
        elif rule is None and headers:
            end = headers[0]
        if key is None:
            return start + 1 if rule is not None else None
        pattern = re.compile(rf"\s*[\"']?{re.escape(key)}[\"']?\s*=")
        for number in range(start, end):
            if pattern.match(self.lines[number]):
                return number + 1
        return start + 1 if rule is not None else None
