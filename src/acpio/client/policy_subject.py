"""What a permission request is about, as a rule policy reads it: kind, title, paths, command, MCP server.

:func:`subject_of` merges the request's tool call with the view of the same tool call the client
kept from the earlier ``tool_call`` and its updates (:class:`~acpio.session.ToolCallView`): a field
the request leaves out is taken from the view. When neither names a ``kind`` it is inferred from
the call (a diff means ``edit``, a command in ``rawInput`` means ``execute``) and
:attr:`ToolCallSubject.inferred` says why, so that a kind-based rule does not silently miss it.

A command comes from ``rawInput`` (``command``, a string or a list of words, with ``args``,
``cwd`` and ``env``), as agents and ``acpio prompt``'s ``terminal/create`` questions put it. A
command string holding shell syntax (``;``, ``|``, ``$(...)``...) is a shell script: its argv is
``sh -c SCRIPT``, so a rule about ``git`` never matches ``git status; rm -rf ~``.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from acpio.schema import Diff, RequestPermissionRequest

if TYPE_CHECKING:
    from acpio.session.turn_view import ToolCallView

__all__ = ["ToolCallSubject", "subject_of"]

#: Characters that make a command string a shell script rather than words.
_SHELL_SYNTAX: Final = frozenset(";&|<>$`(){}*?[]~!#\n\\")
_MCP_PREFIX: Final = "mcp__"


@dataclass(frozen=True, slots=True)
class ToolCallSubject:
    """The tool call a permission request is about, merged and normalised for rules.

    ``paths`` are as the agent named them (resolving them against the session root is the rule's
    business); ``argv``, ``cwd`` and ``env`` are set for a call that runs a command; ``inferred``
    says why ``kind`` was inferred, ``None`` when the agent gave it.
    """

    tool_call_id: str
    kind: str | None
    title: str | None
    paths: tuple[str, ...] = ()
    argv: tuple[str, ...] | None = None
    cwd: str | None = None
    env: tuple[tuple[str, str], ...] = ()
    mcp_server: str | None = None
    inferred: str | None = None

    @property
    def command_line(self) -> str | None:
        """The command as a shell would show it, ``None`` for a call that runs none."""
        return None if self.argv is None else shlex.join(self.argv)


def subject_of(request: RequestPermissionRequest, call: ToolCallView | None = None) -> ToolCallSubject:
    """The subject of ``request``, its tool call merged with ``call`` (the earlier updates' view)."""
    tool_call = request.tool_call
    title = tool_call.title or (call.title if call is not None else None)
    kind = str(tool_call.kind) if tool_call.kind is not None else (call.kind if call is not None else None)
    paths = [location.path for location in tool_call.locations or ()]
    paths += [item.path for item in tool_call.content or () if isinstance(item, Diff)]
    has_diff = any(isinstance(item, Diff) for item in tool_call.content or ())
    if call is not None:
        for item in call.content:
            changes = getattr(item, "changes", ())
            has_diff = has_diff or bool(changes)
            for change in changes:
                paths += [change.path] + ([change.old_path] if change.old_path else [])
    argv, cwd, env = _command(tool_call.raw_input)
    inferred = None
    if kind is None and has_diff:
        kind, inferred = "edit", "the tool call carries a diff"
    elif kind is None and argv is not None:
        kind, inferred = "execute", "the tool call's rawInput holds a command"
    return ToolCallSubject(
        tool_call_id=tool_call.tool_call_id,
        kind=kind,
        title=title,
        paths=tuple(dict.fromkeys(path for path in paths if path)),
        argv=argv,
        cwd=cwd,
        env=env,
        mcp_server=_mcp_server(tool_call.name, title),
        inferred=inferred,
    )


def _command(raw: object) -> tuple[tuple[str, ...] | None, str | None, tuple[tuple[str, str], ...]]:
    """The argv, cwd and environment a ``rawInput`` names; ``(None, None, ())`` when it names no command."""
    if not isinstance(raw, Mapping):
        return None, None, ()
    command, args = raw.get("command"), raw.get("args")
    argv: tuple[str, ...] | None = None
    if isinstance(command, list) and command and all(isinstance(word, str) for word in command):
        argv = tuple(command)
    elif isinstance(command, str) and command.strip():
        if isinstance(args, list) and all(isinstance(word, str) for word in args):
            argv = (command, *args)
        else:
            argv = _words(command)
    cwd = raw.get("cwd")
    return argv, cwd if isinstance(cwd, str) else None, _env(raw.get("env"))


def _words(command: str) -> tuple[str, ...]:
    """A command string's argv: its words; ``sh -c`` with it if it holds shell syntax or an unclosed quote."""
    if _SHELL_SYNTAX.isdisjoint(command):
        try:
            return tuple(shlex.split(command))
        except ValueError:  # an unclosed quote: a shell would read it, not a word list
            pass
    return ("sh", "-c", command)


def _env(env: object) -> tuple[tuple[str, str], ...]:
    """``{"NAME": "value"}`` or ``[{"name": ..., "value": ...}]`` (the terminal request's form) as pairs."""
    if isinstance(env, Mapping):
        return tuple((str(name), str(value)) for name, value in env.items())
    if isinstance(env, list):
        pairs: Iterable[object] = env
        return tuple(
            (str(item.get("name")), str(item.get("value", "")))
            for item in pairs
            if isinstance(item, Mapping) and isinstance(item.get("name"), str)
        )
    return ()


def _mcp_server(name: str | None, title: str | None) -> str | None:
    """The MCP server of a tool named ``mcp__SERVER__TOOL`` (the convention Claude Code and others use)."""
    for text in (name, title):
        if text and text.startswith(_MCP_PREFIX):
            server, separator, tool = text[len(_MCP_PREFIX) :].partition("__")
            if server and separator and tool:
                return server
    return None
