"""The rules of a permission policy: what a rule matches (kind, title, paths, command, env, MCP server).

A :class:`Rule` matches a :class:`~acpio.client.policy_subject.ToolCallSubject` when every
condition it sets holds (a condition left empty holds for any call); its :attr:`Rule.action` then
decides. Paths are resolved inside the session root before any glob is tried: ``..`` and symlinks
are followed, and a path that ends up outside the root never matches ``paths`` or ``any_path``
(only ``outside_root = true`` matches it).

Globs over paths: ``*`` matches within one path segment, ``**`` any number of segments, ``?`` one
character (``src/**/*.py``, ``**/.env``). Globs over titles, command lines and names: ``*``
matches anything, ``?`` one character.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Final, Literal, TypeAlias

from acpio.client.policy_subject import ToolCallSubject

__all__ = ["ACTIONS", "Action", "Rule", "glob_matches", "resolve_inside"]

#: What a rule decides: allow, deny, or ask (the policy's ``ask`` callback, or the client).
Action: TypeAlias = Literal["allow", "deny", "ask"]
#: The actions, as written in a policy file.
ACTIONS: Final[tuple[Action, ...]] = ("allow", "deny", "ask")


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: the conditions a tool call must meet, and the action when it does.

    * ``kind``: the tool kind is one of these (``read``, ``edit``, ``execute``...);
    * ``title``: the title matches one of these globs, ignoring case;
    * ``paths``: the call names at least one path, and every path it names is inside the session
      root and matches one of these globs (for ``allow`` rules: nothing outside is let through);
    * ``any_path``: some path the call names is inside the root and matches one of these globs
      (for ``deny``/``ask`` rules: ``**/.env``);
    * ``outside_root``: ``True``: some path resolves outside the session root; ``False``: none does;
    * ``command``: the call runs a command whose program (its name, or the path as given) is one of
      these;
    * ``argv``: the call's command line (shell-quoted words) matches one of these globs
      (``git diff *``);
    * ``env``: the call's command sets a variable whose name matches one of these globs (``LD_*``);
    * ``mcp_server``: the call is a tool of an MCP server whose name matches one of these globs.
    """

    action: Action
    name: str | None = None
    kind: tuple[str, ...] = ()
    title: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    any_path: tuple[str, ...] = ()
    outside_root: bool | None = None
    command: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    mcp_server: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"Rule action {self.action!r}: use one of {', '.join(ACTIONS)}")

    def label(self, index: int) -> str:
        """How the audit log names this rule: its name, else ``rule N`` (1-based)."""
        return self.name or f"rule {index + 1}"

    def matches(self, subject: ToolCallSubject, root: Path) -> bool:
        """Whether every condition this rule sets holds for ``subject`` in the session ``root``."""
        if self.kind and subject.kind not in self.kind:
            return False
        title = subject.title.casefold() if subject.title is not None else None
        if self.title and not _any_glob(title, tuple(glob.casefold() for glob in self.title)):
            return False
        if self.paths or self.any_path or self.outside_root is not None:
            resolved = [resolve_inside(path, root, subject.cwd) for path in subject.paths]
            inside = [path for path in resolved if path is not None]
            if self.outside_root is not None and self.outside_root != (len(inside) < len(resolved)):
                return False
            if self.paths and not (
                resolved
                and len(inside) == len(resolved)
                and all(any(glob_matches(p, path) for p in self.paths) for path in inside)
            ):
                return False
            if self.any_path and not any(glob_matches(p, path) for p in self.any_path for path in inside):
                return False
        return self._command_matches(subject) and (
            not self.mcp_server or _any_glob(subject.mcp_server, self.mcp_server)
        )

    def _command_matches(self, subject: ToolCallSubject) -> bool:
        argv = subject.argv
        if (self.command or self.argv or self.env) and argv is None:
            return False
        if argv is None:
            return True
        if self.command and not (argv and (argv[0] in self.command or Path(argv[0]).name in self.command)):
            return False
        if self.argv and not _any_glob(shlex.join(argv), self.argv):
            return False
        return not self.env or any(_any_glob(name, self.env) for name, _ in subject.env)


def _any_glob(text: str | None, globs: tuple[str, ...]) -> bool:
    return text is not None and any(fnmatch.fnmatchcase(text, glob) for glob in globs)


def resolve_inside(path: str, root: Path, cwd: str | None = None) -> str | None:
    """``path`` relative to ``root`` (``/``-separated, ``.`` for the root itself), ``None`` if outside.

    A relative path is taken from ``cwd`` (itself taken in ``root`` when relative; else ``root``);
    ``..`` and symlinks are resolved first, so ``src/../../etc/passwd`` and a link pointing out
    of the root are outside.
    """
    base = root / cwd if cwd else root  # a relative cwd is the root's, not this process's
    real_root = os.path.realpath(root)
    real = os.path.realpath(base / path)
    relative = os.path.relpath(real, real_root)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep) or os.path.isabs(relative):
        return None
    return Path(relative).as_posix()


def glob_matches(glob: str, path: str) -> bool:
    """Whether the root-relative ``path`` matches the path ``glob`` (``*``, ``**``, ``?``)."""
    return _glob_regex(glob).fullmatch(path) is not None


@lru_cache(maxsize=256)
def _glob_regex(glob: str) -> re.Pattern[str]:
    parts: list[str] = []
    index = 0
    glob = glob.removeprefix("./")
    while index < len(glob):
        if glob.startswith("**/", index):
            parts.append("(?:.*/)?")
            index += 3
        elif glob.startswith("**", index):
            parts.append(".*")
            index += 2
        elif glob[index] == "*":
            parts.append("[^/]*")
            index += 1
        elif glob[index] == "?":
            parts.append("[^/]")
            index += 1
        else:
            parts.append(re.escape(glob[index]))
            index += 1
    return re.compile("".join(parts))
