"""testy's prompt language, parsed: pure functions, no I/O, no protocol types.

A prompt is a *script* when its first line that is neither blank nor a ``#`` comment starts with
a command word (optionally written as a slash command, ``/echo``). Every other non-blank,
non-comment line is then one command, run in order. Any other prompt is echoed back.

:func:`parse_prompt` turns the prompt text into a :class:`Script` (or ``None`` for an echo
prompt). The whole script is checked before anything runs: a line that does not parse becomes a
:class:`ScriptError` naming the line and what is wrong, and testy then runs nothing and reports the
errors as its answer. :data:`COMMANDS` lists every command with its arguments and a one-line
summary; ``help``, ``commands`` and ``acpio testy --help`` are all built from it.

This module imports only the standard library and orjson, so ``acpio --help`` can show the
language without loading the protocol models.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeAlias

import orjson

__all__ = [
    "COMMANDS",
    "COMMAND_WORDS",
    "MODES",
    "STOP_REASONS",
    "Command",
    "CommandSpec",
    "Commands",
    "Compact",
    "Echo",
    "Elicit",
    "Exit",
    "ElicitUrl",
    "Fail",
    "Help",
    "Line",
    "Mode",
    "Mcp",
    "NOTICE_SEVERITIES",
    "Notice",
    "Notify",
    "Option",
    "Permission",
    "Plan",
    "Progress",
    "Read",
    "Run",
    "Script",
    "ScriptError",
    "Hang",
    "Sleep",
    "Stop",
    "Stream",
    "Think",
    "Timeout",
    "Title",
    "Tool",
    "Usage",
    "V2_COMMANDS",
    "Background",
    "Replace",
    "Work",
    "Write",
    "command_table",
    "commands_of",
    "is_script",
    "parse_line",
    "parse_prompt",
    "split_words",
    "unescape",
]

#: The stop reasons ``stop`` accepts (``cancelled`` belongs to cancellation only).
STOP_REASONS: tuple[str, ...] = ("end_turn", "max_tokens", "max_turn_requests", "refusal")
#: The ids of the session modes testy offers; ``mode`` accepts these.
MODES: tuple[str, ...] = ("chat", "plan")
#: The severities ``notice`` accepts.
NOTICE_SEVERITIES: tuple[str, ...] = ("info", "warning", "error")

# JSON-RPC error codes are integers; testy keeps ``fail`` to the signed 32-bit range every peer can hold.
_INT32 = range(-(2**31), 2**31)
_WHOLE_NUMBER = re.compile(r"\d+")
_INTEGER = re.compile(r"[+-]?\d+")
_WORD_CHUNK = re.compile(r"\S+\s*")


# --- the commands ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Echo:
    """``echo TEXT``: TEXT as message chunks, one per word (spaces kept), then a newline chunk."""

    text: str


@dataclass(frozen=True, slots=True)
class Stream:
    """``stream N [TEXT]``: N message chunks, each ``text``, as fast as possible."""

    count: int
    text: str = "."


@dataclass(frozen=True, slots=True)
class Think:
    """``think TEXT``: TEXT as one thought chunk."""

    text: str


@dataclass(frozen=True, slots=True)
class Plan:
    """``plan STEP; STEP; ...``: a plan whose entries are all pending."""

    steps: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Progress:
    """``progress N``: the session's plan again, entries 1..N completed and entry N+1 in progress."""

    done: int


@dataclass(frozen=True, slots=True)
class Tool:
    """``tool TITLE``: a tool call that goes from pending to in progress to completed."""

    title: str


@dataclass(frozen=True, slots=True)
class Read:
    """``read PATH``: a read tool call backed by ``fs/read_text_file``."""

    path: str


@dataclass(frozen=True, slots=True)
class Write:
    """``write PATH TEXT``: an edit tool call backed by ``fs/write_text_file``; ``text`` is unescaped."""

    path: str
    text: str


@dataclass(frozen=True, slots=True)
class Permission:
    """``permission [TITLE]``: ask the client; anything but an allow option stops the script."""

    title: str | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """``run COMMAND [ARGS...]``: an execute tool call backed by the client's terminal methods."""

    command: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Timeout:
    """``timeout SECONDS COMMAND [ARGS...]``: like ``run``, but ``terminal/kill`` once SECONDS have passed."""

    seconds: float
    command: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Notify:
    """``notify METHOD [JSON]``: an extension notification (``params`` is an object or an array)."""

    method: str
    params: Any


@dataclass(frozen=True, slots=True)
class Mcp:
    """``mcp SERVER TOOL [JSON]``: list the tools of a declared MCP server and call one."""

    server: str
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Sleep:
    """``sleep SECONDS``: wait; a ``session/cancel`` ends the wait and the turn."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Hang:
    """``hang SECONDS``: wait, deaf to ``session/cancel`` (a wedged agent); a cancel counts afterwards."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Exit:
    """``exit CODE [MESSAGE]``: MESSAGE to stderr, then testy's process ends at once with exit code CODE."""

    code: int
    message: str = "testy exits on request"


@dataclass(frozen=True, slots=True)
class Fail:
    """``fail CODE [MESSAGE]``: answer the prompt with this JSON-RPC error."""

    code: int
    message: str = "testy failure"


@dataclass(frozen=True, slots=True)
class Stop:
    """``stop REASON``: end the turn now with this stop reason."""

    reason: str


@dataclass(frozen=True, slots=True)
class Mode:
    """``mode ID``: switch the session to this mode and say so."""

    mode_id: str


@dataclass(frozen=True, slots=True)
class Title:
    """``title TEXT``: set the session's title and say so."""

    text: str


@dataclass(frozen=True, slots=True)
class Notice:
    """``notice SEVERITY TITLE [-- DESCRIPTION]``: a ``notice`` update (live, not history)."""

    severity: str
    title: str
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Compact:
    """``compact TEXT``: a context compaction whose summary is TEXT, streamed word by word."""

    summary: str


@dataclass(frozen=True, slots=True)
class Option:
    """``option ID VALUE``: change a config option of the session and send ``config_option_update``."""

    config_id: str
    value: str


@dataclass(frozen=True, slots=True)
class Elicit:
    """``elicit [MESSAGE]``: a form-mode ``elicitation/create`` with a field of every kind."""

    message: str | None = None


@dataclass(frozen=True, slots=True)
class ElicitUrl:
    """``elicit-url URL [MESSAGE]``: a URL-mode elicitation; ``elicitation/complete`` after accept."""

    url: str
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Work:
    """``work SECONDS TITLE`` (v2): a cancellable tool call that takes SECONDS (``tool_call/cancel``)."""

    seconds: float
    title: str


@dataclass(frozen=True, slots=True)
class Background:
    """``background SECONDS TEXT`` (v2): after SECONDS, TEXT as an agent message, the turn long over."""

    seconds: float
    text: str


@dataclass(frozen=True, slots=True)
class Replace:
    """``replace TEXT`` (v2): an ``agent_message`` upsert that replaces the current message's content."""

    text: str


@dataclass(frozen=True, slots=True)
class Commands:
    """``commands``: advertise testy's commands as available (slash) commands."""


@dataclass(frozen=True, slots=True)
class Usage:
    """``usage``: report the session's context usage."""


@dataclass(frozen=True, slots=True)
class Help:
    """``help``: the command list as a message."""


#: One parsed command.
Command: TypeAlias = (
    Echo
    | Stream
    | Think
    | Plan
    | Progress
    | Tool
    | Read
    | Write
    | Permission
    | Run
    | Timeout
    | Notify
    | Mcp
    | Sleep
    | Hang
    | Exit
    | Fail
    | Stop
    | Mode
    | Title
    | Notice
    | Compact
    | Option
    | Elicit
    | ElicitUrl
    | Work
    | Background
    | Replace
    | Commands
    | Usage
    | Help
)


# --- the script -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Line:
    """One command of a script, with where it came from (``number`` counts from 1)."""

    number: int
    text: str
    command: Command


@dataclass(frozen=True, slots=True)
class ScriptError:
    """A script line that does not parse: its number (from 1), its text and what is wrong."""

    number: int
    text: str
    message: str

    def __str__(self) -> str:
        return f"line {self.number}: `{self.text}`: {self.message}"


@dataclass(frozen=True, slots=True)
class Script:
    """A parsed script: its commands in order, and the lines that did not parse.

    testy runs a script only when ``errors`` is empty.
    """

    lines: tuple[Line, ...]
    errors: tuple[ScriptError, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether every line parsed."""
        return not self.errors


class _BadArguments(ValueError):
    """Raised by a command parser: the arguments are wrong, and the message says how."""


# --- argument parsers, one per command ------------------------------------------------------------


def _no_arguments(command: Command) -> Callable[[str], Command]:
    def parse(args: str) -> Command:
        if args:
            raise _BadArguments("takes no arguments")
        return command

    return parse


def _required(args: str, what: str) -> str:
    if not args:
        raise _BadArguments(f"needs {what}")
    return args


def _whole_number(text: str, name: str) -> int:
    if not _WHOLE_NUMBER.fullmatch(text):
        raise _BadArguments(f"{name} must be a whole number (0 or more), not {text!r}")
    return int(text)


def _first_word(text: str) -> tuple[str, str]:
    """The first whitespace-separated word of ``text`` and the rest, stripped ("" when there is none)."""
    parts = text.split(None, 1)
    if not parts:
        return "", ""
    return parts[0], parts[1] if len(parts) == 2 else ""


def _split_path(args: str) -> tuple[str, str]:
    """The path at the start of ``args`` (one word, or quoted with ``"`` or ``'``) and the rest."""
    if args[:1] in ("'", '"'):
        end = args.find(args[0], 1)
        if end < 0:
            raise _BadArguments(f"the quoted path has no closing {args[0]}")
        path, rest = args[1:end], args[end + 1 :]
        if rest and not rest[0].isspace():
            raise _BadArguments("put a space after the quoted path")
        rest = rest.strip()
    else:
        path, rest = _first_word(args)
    if not path:
        raise _BadArguments("needs a PATH")
    return path, rest


def _parse_echo(args: str) -> Command:
    return Echo(args)


def _parse_stream(args: str) -> Command:
    count, text = _first_word(_required(args, "a count N"))
    return Stream(_whole_number(count, "N"), text or ".")


def _parse_think(args: str) -> Command:
    return Think(_required(args, "the TEXT to think"))


def _parse_plan(args: str) -> Command:
    steps = tuple(step.strip() for step in args.split(";") if step.strip())
    if not steps:
        raise _BadArguments("needs at least one STEP (steps are separated by `;`)")
    return Plan(steps)


def _parse_progress(args: str) -> Command:
    return Progress(_whole_number(_required(args, "a count N of completed entries"), "N"))


def _parse_tool(args: str) -> Command:
    return Tool(_required(args, "a TITLE"))


def _parse_read(args: str) -> Command:
    path, rest = _split_path(_required(args, "a PATH"))
    if rest:
        raise _BadArguments(f"takes one PATH; quote a path that has spaces (unexpected {rest!r})")
    return Read(path)


def _parse_write(args: str) -> Command:
    path, text = _split_path(_required(args, "a PATH and the TEXT to write"))
    return Write(path, unescape(text))


def _parse_permission(args: str) -> Command:
    return Permission(args or None)


def _parse_run(args: str) -> Command:
    line = _required(args, "a COMMAND")
    try:
        words = shlex.split(line)
    except ValueError as exc:  # an unclosed quote or a trailing backslash
        raise _BadArguments(f"cannot split into shell words: {exc}") from None
    if not words[0]:  # run ''
        raise _BadArguments("needs a COMMAND, not an empty word")
    return Run(words[0], tuple(words[1:]))


def _parse_timeout(args: str) -> Command:
    seconds_text, rest = _first_word(_required(args, "a number of SECONDS and a COMMAND"))
    seconds = _seconds(seconds_text)
    run = _parse_run(rest)
    assert isinstance(run, Run)
    return Timeout(seconds, run.command, run.args)


def _parse_notice(args: str) -> Command:
    severity, rest = _first_word(_required(args, "a SEVERITY and a TITLE"))
    if severity not in NOTICE_SEVERITIES:
        raise _BadArguments(f"SEVERITY must be one of {', '.join(NOTICE_SEVERITIES)}, not {severity!r}")
    title, _, description = rest.partition(" -- ")
    title, description = title.strip(), description.strip()
    if not title:
        raise _BadArguments("needs a TITLE after the SEVERITY")
    return Notice(severity, title, description or None)


def _parse_compact(args: str) -> Command:
    return Compact(_required(args, "the TEXT of the summary"))


def _parse_option(args: str) -> Command:
    config_id, value = _first_word(_required(args, "an option ID and a VALUE"))
    return Option(config_id, _required(value, "a VALUE after the option ID"))


def _parse_elicit(args: str) -> Command:
    return Elicit(args or None)


def _parse_elicit_url(args: str) -> Command:
    url, message = _first_word(_required(args, "a URL"))
    if "://" not in url:
        raise _BadArguments(f"URL must be an absolute URL (https://...), not {url!r}")
    return ElicitUrl(url, message or None)


def _parse_notify(args: str) -> Command:
    method, payload = _first_word(_required(args, "a METHOD"))
    if len(method) < 2 or not method.startswith("_"):
        raise _BadArguments(f"METHOD must start with `_` (extension methods do), not {method!r}")
    if not payload:
        return Notify(method, {})
    try:
        params = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise _BadArguments(f"the params are not valid JSON ({exc})") from None
    if not isinstance(params, dict | list):
        raise _BadArguments("the params must be a JSON object or array")
    return Notify(method, params)


def _parse_mcp(args: str) -> Command:
    server, rest = _first_word(_required(args, "a SERVER name and a TOOL"))
    tool, payload = _first_word(_required(rest, "a TOOL after the SERVER name"))
    if not payload:
        return Mcp(server, tool, {})
    try:
        arguments = orjson.loads(payload)
    except orjson.JSONDecodeError as exc:
        raise _BadArguments(f"the tool arguments are not valid JSON ({exc})") from None
    if not isinstance(arguments, dict):
        raise _BadArguments("the tool arguments must be a JSON object")
    return Mcp(server, tool, arguments)


def _parse_sleep(args: str) -> Command:
    return Sleep(_seconds(_required(args, "a number of SECONDS")))


def _parse_hang(args: str) -> Command:
    return Hang(_seconds(_required(args, "a number of SECONDS")))


def _parse_exit(args: str) -> Command:
    code_text, message = _first_word(_required(args, "an exit CODE"))
    if not _WHOLE_NUMBER.fullmatch(code_text) or int(code_text) > 255:
        raise _BadArguments(f"CODE must be an exit code from 0 to 255, not {code_text!r}")
    return Exit(int(code_text), message or "testy exits on request")


def _seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise _BadArguments(f"SECONDS must be a number, 0 or more, not {text!r}")
    return seconds


def _parse_fail(args: str) -> Command:
    code_text, message = _first_word(_required(args, "an error CODE"))
    if not _INTEGER.fullmatch(code_text) or int(code_text) not in _INT32:
        raise _BadArguments(f"CODE must be an integer JSON-RPC error code (like -32000), not {code_text!r}")
    return Fail(int(code_text), message or "testy failure")


def _parse_stop(args: str) -> Command:
    reason = _required(args, "a REASON")
    if reason not in STOP_REASONS:
        raise _BadArguments(f"REASON must be one of {', '.join(STOP_REASONS)}, not {reason!r}")
    return Stop(reason)


def _parse_mode(args: str) -> Command:
    mode_id = _required(args, "a mode ID")
    if mode_id not in MODES:
        raise _BadArguments(f"testy's modes are {', '.join(MODES)}, not {mode_id!r}")
    return Mode(mode_id)


def _parse_title(args: str) -> Command:
    return Title(_required(args, "the TEXT of the title"))


def _parse_work(args: str) -> Command:
    seconds, title = _first_word(_required(args, "a number of SECONDS and a TITLE"))
    return Work(_seconds(seconds), _required(title, "a TITLE after the SECONDS"))


def _parse_background(args: str) -> Command:
    seconds, text = _first_word(_required(args, "a number of SECONDS and the TEXT to say"))
    return Background(_seconds(seconds), _required(text, "the TEXT to say after the SECONDS"))


def _parse_replace(args: str) -> Command:
    return Replace(_required(args, "the TEXT the message is replaced with"))


# --- the command table ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """One command word: its arguments as written in help, a one-line summary, and its parser.

    ``versions`` are the ACP versions the command exists in; ``v2_summary`` says what it does on v2
    where that differs (the client's file system and terminals are gone there: testy does the work).
    """

    name: str
    args: str
    summary: str
    parse: Callable[[str], Command]
    versions: tuple[int, ...] = (1, 2)
    v2_summary: str | None = None

    def summary_in(self, version: int) -> str:
        """The summary for ACP ``version``."""
        return self.v2_summary if version == 2 and self.v2_summary is not None else self.summary

    @property
    def usage(self) -> str:
        """The command as written in help: ``read PATH``."""
        return f"{self.name} {self.args}".rstrip()


#: Every command of either version, in the order help lists them.
_ALL_COMMANDS: tuple[CommandSpec, ...] = (
    CommandSpec(
        "echo", "TEXT", "TEXT as message chunks, one per word (spaces kept), then a newline", _parse_echo
    ),
    CommandSpec(
        "stream", "N [TEXT]", "N message chunks as fast as possible, each TEXT (default '.')", _parse_stream
    ),
    CommandSpec("think", "TEXT", "TEXT as one thought chunk", _parse_think),
    CommandSpec(
        "plan", "STEP; STEP; ...", "a plan, entries split on ';', all pending, priority medium", _parse_plan
    ),
    CommandSpec(
        "progress", "N", "the plan again: entries 1..N completed, entry N+1 in progress", _parse_progress
    ),
    CommandSpec("tool", "TITLE", "a tool call: pending, in progress, then completed with text", _parse_tool),
    CommandSpec(
        "read",
        "PATH",
        "read a file through the client (fs/read_text_file) in a tool call",
        _parse_read,
        v2_summary="read a file (testy reads it) in a tool call",
    ),
    CommandSpec(
        "write",
        "PATH TEXT",
        "write TEXT (\\n: newline) through the client, shown as a diff",
        _parse_write,
        v2_summary="write TEXT (\\n: newline; testy writes it), shown as changes and a git patch",
    ),
    CommandSpec(
        "permission",
        "[TITLE]",
        "ask permission (allow-once, allow-always, reject-once); a refusal stops the script",
        _parse_permission,
    ),
    CommandSpec(
        "run",
        "COMMAND [ARGS...]",
        "run a command in a client terminal and report its output",
        _parse_run,
        v2_summary="run a command in an agent terminal (terminal/cancel stops it) and report its output",
    ),
    CommandSpec(
        "timeout",
        "SECONDS COMMAND [ARGS...]",
        "like run, but kill the command (terminal/kill) once SECONDS have passed",
        _parse_timeout,
        v2_summary="like run, but kill the command once SECONDS have passed",
    ),
    CommandSpec(
        "work",
        "SECONDS TITLE",
        "a tool call that takes SECONDS; tool_call/cancel cancels it",
        _parse_work,
        versions=(2,),
    ),
    CommandSpec(
        "background",
        "SECONDS TEXT",
        "after SECONDS, TEXT as a new agent message, while the session is idle",
        _parse_background,
        versions=(2,),
    ),
    CommandSpec(
        "replace",
        "TEXT",
        "replace the content of the current agent message with TEXT (an agent_message upsert)",
        _parse_replace,
        versions=(2,),
    ),
    CommandSpec(
        "notify", "METHOD [JSON]", "send extension notification METHOD (starts with _)", _parse_notify
    ),
    CommandSpec(
        "mcp",
        "SERVER TOOL [JSON]",
        "list the tools of MCP server SERVER (acp or http, by name) and call TOOL in a tool call",
        _parse_mcp,
        versions=(1,),
    ),
    CommandSpec("sleep", "SECONDS", "wait; session/cancel ends the turn at once", _parse_sleep),
    CommandSpec("hang", "SECONDS", "wait, ignoring session/cancel meanwhile (a wedged agent)", _parse_hang),
    CommandSpec(
        "exit",
        "CODE [MESSAGE]",
        "write MESSAGE to stderr and end testy's process now with exit code CODE (a crash)",
        _parse_exit,
    ),
    CommandSpec("fail", "CODE [MESSAGE]", "answer the prompt with JSON-RPC error CODE", _parse_fail),
    CommandSpec("stop", "REASON", f"end the turn with REASON ({', '.join(STOP_REASONS)})", _parse_stop),
    CommandSpec("mode", "ID", f"switch the session mode ({', '.join(MODES)})", _parse_mode, versions=(1,)),
    CommandSpec("title", "TEXT", "set the session title", _parse_title),
    CommandSpec("option", "ID VALUE", "change a config option (verbosity, shout) and say so", _parse_option),
    CommandSpec(
        "notice",
        "SEVERITY TITLE [-- DESCRIPTION]",
        f"a notice for the user ({', '.join(NOTICE_SEVERITIES)})",
        _parse_notice,
        versions=(1,),
    ),
    CommandSpec(
        "compact", "TEXT", "a context compaction whose summary is TEXT", _parse_compact, versions=(1,)
    ),
    CommandSpec(
        "elicit",
        "[MESSAGE]",
        "ask the user to fill a form with a field of every kind",
        _parse_elicit,
        versions=(1,),
    ),
    CommandSpec(
        "elicit-url",
        "URL [MESSAGE]",
        "ask the user to open URL; elicitation/complete once they accept",
        _parse_elicit_url,
        versions=(1,),
    ),
    CommandSpec("commands", "", "advertise these commands as slash commands", _no_arguments(Commands())),
    CommandSpec("usage", "", "report the session's context usage", _no_arguments(Usage())),
    CommandSpec("help", "", "this list", _no_arguments(Help())),
)

#: The commands on ACP v1, in the order help lists them.
COMMANDS: tuple[CommandSpec, ...] = tuple(spec for spec in _ALL_COMMANDS if 1 in spec.versions)
#: The commands on ACP v2 (``acpio testy --protocol 2``): no modes, MCP calls, notices, compactions
#: or elicitations; ``work``, ``background`` and ``replace`` besides.
V2_COMMANDS: tuple[CommandSpec, ...] = tuple(spec for spec in _ALL_COMMANDS if 2 in spec.versions)

_BY_NAME: dict[int, dict[str, CommandSpec]] = {
    1: {spec.name: spec for spec in COMMANDS},
    2: {spec.name: spec for spec in V2_COMMANDS},
}


def commands_of(version: int) -> tuple[CommandSpec, ...]:
    """The commands on ACP ``version`` (1 or 2)."""
    return V2_COMMANDS if version == 2 else COMMANDS


def command_table(indent: str = "  ", version: int = 1) -> str:
    """Every command's usage and summary on ACP ``version``, one per line, aligned (``help``, ``--help``)."""
    specs = commands_of(version)
    width = max(len(spec.usage) for spec in specs)
    return "\n".join(f"{indent}{spec.usage.ljust(width)}  {spec.summary_in(version)}" for spec in specs)


#: The command words (on ACP v1).
COMMAND_WORDS: frozenset[str] = frozenset(_BY_NAME[1])


# --- parsing --------------------------------------------------------------------------------------


def _command_lines(text: str) -> list[tuple[int, str]]:
    """The lines that are neither blank nor comments, stripped, with their numbers (from 1)."""
    found = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line and not line.startswith("#"):
            found.append((number, line))
    return found


def _word(line: str) -> tuple[str, str]:
    """The command word of ``line`` (a leading ``/`` dropped) and its arguments."""
    word, args = _first_word(line)
    return word.removeprefix("/"), args


def is_script(text: str, version: int = 1) -> bool:
    """Whether ``text`` is a script on ACP ``version``: its first command line starts with a command word."""
    lines = _command_lines(text)
    return bool(lines) and _word(lines[0][1])[0] in _BY_NAME[version]


def parse_line(number: int, line: str, version: int = 1) -> Line | ScriptError:
    """One script line as a :class:`Line`, or a :class:`ScriptError` saying what is wrong with it."""
    word, args = _word(line)
    names = _BY_NAME[version]
    spec = names.get(word)
    if spec is None:
        other = 1 if version == 2 else 2
        if word in _BY_NAME[other]:
            return ScriptError(number, line, f"{word!r} is a command of ACP v{other} only, not of v{version}")
        return ScriptError(number, line, f"unknown command {word!r}; the commands are: {', '.join(names)}")
    try:
        return Line(number, line, spec.parse(args))
    except _BadArguments as exc:
        return ScriptError(number, line, f"{spec.name} {exc} (usage: {spec.usage})")


def parse_prompt(text: str, version: int = 1) -> Script | None:
    """Parse a prompt's text (ACP ``version``'s commands): a :class:`Script`, or ``None`` to echo it."""
    if not is_script(text, version):
        return None
    lines: list[Line] = []
    errors: list[ScriptError] = []
    for number, line in _command_lines(text):
        parsed = parse_line(number, line, version)
        if isinstance(parsed, ScriptError):
            errors.append(parsed)
        else:
            lines.append(parsed)
    return Script(tuple(lines), tuple(errors))


# --- text helpers ---------------------------------------------------------------------------------


def split_words(text: str) -> list[str]:
    """``text`` cut into words, each keeping the whitespace after it; joined they give ``text`` back.

    Whitespace before the first word stays with the first chunk; text that is only whitespace is
    one chunk; empty text gives no chunks.
    """
    chunks = _WORD_CHUNK.findall(text)
    if not chunks:
        return [text] if text else []
    lead = len(text) - len(text.lstrip())
    if lead:
        chunks[0] = text[:lead] + chunks[0]
    return chunks


_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\"}


def unescape(text: str) -> str:
    r"""``text`` with ``\n`` as a newline, ``\t`` as a tab, ``\\`` as a backslash; other backslashes stay."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text) and text[i + 1] in _ESCAPES:
            out.append(_ESCAPES[text[i + 1]])
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)
