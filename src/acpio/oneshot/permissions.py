"""Answering ``session/request_permission`` in ``acpio prompt``: always allow, always deny, or ask the person.

A policy turns the agent's request into an outcome (an option it offered, or ``cancelled``). The
first two are the shared ones of :mod:`acpio.client.permissions` (importable from here too):

* :class:`~acpio.client.permissions.AllowPolicy` (``--allow``) picks the ``allow_once`` option (else
  ``allow_always``; a request that offers no allow option gets its reject option);
* :class:`~acpio.client.permissions.DenyPolicy` (``--deny``) picks ``reject_once`` (else
  ``reject_always``, else ``cancelled``);
* :class:`AskPolicy` (``--ask``) shows the request and its options and reads the answer, a line
  from the terminal or stdin (:class:`LineInput`), without blocking the event loop: an option
  number, its id, its name, ``y``/``n``. End of input counts as a refusal.

Cancelling the turn is not a policy's business: the caller answers ``cancelled`` on its own once
the turn is cancelled (the spec's rule), abandoning a question still on screen.

The agent's commands (``terminal/create``) are decided by the same policy, through a request this
client makes up (:func:`command_request`: "Run ``COMMAND``", with the program, the directory and
the environment it would get as the tool call's content), unless a permission the person granted
in this run already covers the command (:class:`CommandGrants`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Final, TextIO

from acpio.client.permissions import (
    ALLOW_KINDS,
    REJECT_KINDS,
    AllowPolicy,
    DenyPolicy,
    Outcome,
    PermissionPolicy,
    allows,
    describe_request,
    pick_option,
)
from acpio.errors import InvalidParams
from acpio.oneshot.render_tools import diff_lines
from acpio.oneshot.sanitize import sanitize
from acpio.oneshot.terminals import TerminalCommand
from acpio.schema import (
    CancelledPermissionOutcome,
    Content,
    Diff,
    PermissionOption,
    PermissionOptionKind,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    TextContent,
    ToolCallUpdate,
    ToolKind,
)

__all__ = [
    "RUN_OPTIONS",
    "AllowPolicy",
    "AskPolicy",
    "CommandGrants",
    "DenyPolicy",
    "LineInput",
    "Outcome",
    "PermissionPolicy",
    "allows",
    "command_refusal",
    "command_request",
    "describe_request",
    "parse_answer",
    "pick_option",
]

_READ_SIZE: Final = 4096
_GREEN: Final = "\x1b[32m"
_RED: Final = "\x1b[31m"
_RESET: Final = "\x1b[0m"
#: Lines of a tool call's text content shown with an ``--ask`` question.
_DETAIL_LINES: Final = 20
#: Shells whose ``-c SCRIPT`` is shown (and granted) as the script itself.
_SHELLS: Final = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish"})

#: The options of the question about one of the agent's commands.
RUN_OPTIONS: Final = (
    PermissionOption(option_id="run", name="Run it", kind=PermissionOptionKind.ALLOW_ONCE),
    PermissionOption(option_id="refuse", name="Refuse", kind=PermissionOptionKind.REJECT_ONCE),
)


def command_request(command: TerminalCommand, tool_call_id: str) -> RequestPermissionRequest:
    """The question about running ``command``: "Run COMMAND LINE", its details as text, run or refuse.

    Its ``rawInput`` holds the command, arguments, directory and variables, as a rule policy reads them.
    """
    details = TextContent(text="\n".join(command.describe()))
    raw_input = {
        "command": command.command,
        "args": list(command.args),
        "cwd": str(command.cwd),
        "env": dict(command.env),
    }
    tool_call = ToolCallUpdate(
        tool_call_id=tool_call_id,
        title=f"Run {command.command_line}",
        kind=ToolKind.EXECUTE,
        content=[Content(content=details)],
        raw_input=raw_input,
    )
    return RequestPermissionRequest(
        session_id=command.session_id, tool_call=tool_call, options=list(RUN_OPTIONS)
    )


def command_refusal(command: TerminalCommand, refused: str, why: str, **more: object) -> InvalidParams:
    """The ``-32602`` refusing to run ``command``: "Refused to run COMMAND LINE: ``why``".

    Its data names the command, its arguments and what refused it (``refused``: the option chosen,
    ``cancelled``, ``env``...), then ``more`` (the ``variables`` an ``env`` refusal is about).
    """
    return InvalidParams(
        {"command": command.command, "args": list(command.args), "refused": refused, **more},
        message=f"Refused to run {command.command_line}: {why}",
    )


class CommandGrants:
    """The permissions granted in this run that cover a command the agent then runs in a terminal.

    An agent usually asks permission for a tool call (titled ``npm test``), then runs it with
    ``terminal/create``. When the person allowed a request whose title (what they were shown) is
    exactly the command line, in backticks or not, after the verb "Run" or not (``npm test``,
    ```npm test```, ``Run `npm test```), that permission covers the command: once for
    ``allow_once``, for the rest of the run for ``allow_always``. A command that sets variables
    deciding what runs or loads (``PATH``, ``LD_PRELOAD``...) is never covered: the person was not
    shown them.
    """

    def __init__(self) -> None:
        self._once: list[str] = []
        self._always: set[str] = set()

    def record(self, request: RequestPermissionRequest, outcome: Outcome) -> None:
        """Remember what an answered permission request allowed, if it allowed something."""
        option = allows(request, outcome)
        title = _titled_command(request.tool_call.title or "")
        if option is None or not title:
            return
        if option.kind == PermissionOptionKind.ALLOW_ALWAYS:
            self._always.add(title)
        else:
            self._once.append(title)

    def take(self, command: TerminalCommand) -> bool:
        """Whether a grant covers ``command`` (an ``allow_once`` grant is used up by it)."""
        if command.risky_variables:
            return False
        forms = _command_forms(command)
        if forms & self._always:
            return True
        for index, title in enumerate(self._once):
            if title in forms:
                del self._once[index]
                return True
        return False


def _titled_command(title: str) -> str:
    """The command line a tool call's title shows: ``npm test``, ```npm test``` or ``Run `npm test```.

    Only one quoted span counts: ```a` and `b``` shows two commands, not the command line between.
    """
    title = title.strip()
    verb, _, rest = title.partition(" ")
    if verb.casefold() == "run" and _quoted(rest.strip()):
        title = rest.strip()
    return title[1:-1].strip() if _quoted(title) else title


def _quoted(text: str) -> bool:
    return len(text) > 2 and text[0] == text[-1] == "`" and "`" not in text[1:-1]


def _command_forms(command: TerminalCommand) -> set[str]:
    """The ways a title may show ``command``: as a shell would, words joined, or a shell's ``-c`` script."""
    argv = command.argv
    forms = {shlex.join(argv), " ".join(argv)}
    args = command.args
    if os.path.basename(command.command) in _SHELLS and len(args) == 2 and args[0] in ("-c", "-lc"):
        forms.add(args[1].strip())
    return forms


def parse_answer(answer: str, options: Sequence[PermissionOption]) -> PermissionOption | None:
    """The option a typed answer names: its number (1-based), id, name or kind, or ``y``/``n``.

    ``y``/``yes`` means allow once (else always), ``n``/``no`` reject once (else always),
    ``a``/``always`` allow always. ``None`` when the answer names no offered option.
    """
    text = answer.strip().casefold()
    if not text:
        return None
    if text.isdigit():
        index = int(text)
        return options[index - 1] if 1 <= index <= len(options) else None
    for option in options:
        if text in (option.option_id.casefold(), option.name.strip().casefold(), str(option.kind)):
            return option
    if text in ("y", "yes"):
        return pick_option(options, ALLOW_KINDS)
    if text in ("n", "no"):
        return pick_option(options, REJECT_KINDS)
    if text in ("a", "always"):
        return pick_option(options, (PermissionOptionKind.ALLOW_ALWAYS,))
    return None


class LineInput:
    """Lines typed by a person, read from a file descriptor without blocking the event loop.

    The descriptor is watched with ``loop.add_reader`` and read only when it has data, so a
    pending :meth:`readline` can be cancelled at any time (no thread stays blocked on it). A regular
    file (``< answers.txt``) is read directly.
    """

    def __init__(self, fd: int, *, name: str, owned: bool = False) -> None:
        self._fd = fd
        self.name = name
        self._owned = owned
        self._buffer = bytearray()
        self._eof = False

    def __repr__(self) -> str:
        return f"<LineInput {self.name}>"

    @classmethod
    def stdin(cls) -> LineInput:
        """Read from standard input (not closed by :meth:`close`)."""
        return cls(sys.stdin.fileno(), name="stdin")

    @classmethod
    def terminal(cls) -> LineInput:
        """Read from the controlling terminal, ``/dev/tty``; raises ``OSError`` when there is none."""
        return cls(os.open("/dev/tty", os.O_RDONLY | os.O_NOCTTY), name="/dev/tty", owned=True)

    async def readline(self) -> str | None:
        """The next line, without its line ending; ``None`` at the end of input."""
        while b"\n" not in self._buffer and not self._eof:
            chunk = await self._read()
            if chunk:
                self._buffer += chunk
            else:
                self._eof = True
        if not self._buffer:
            return None
        line, _, rest = bytes(self._buffer).partition(b"\n")
        self._buffer = bytearray(rest)
        return line.decode("utf-8", "replace").rstrip("\r")

    async def _read(self) -> bytes:
        loop = asyncio.get_running_loop()
        readable: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not readable.done():
                readable.set_result(None)

        try:
            loop.add_reader(self._fd, wake)
        except PermissionError:  # a regular file: it never blocks, and epoll cannot watch it
            return os.read(self._fd, _READ_SIZE)
        try:
            await readable
        finally:
            loop.remove_reader(self._fd)
        try:
            return os.read(self._fd, _READ_SIZE)
        except BlockingIOError:
            return await self._read()

    def close(self) -> None:
        """Close the descriptor if this object opened it (``/dev/tty``)."""
        if self._owned:
            self._owned = False
            with contextlib.suppress(OSError):
                os.close(self._fd)


class AskPolicy:
    """``--ask``: show the request on ``output`` and read the person's choice from ``answers``."""

    def __init__(self, answers: LineInput, output: TextIO, *, colour: bool = False) -> None:
        self._answers = answers
        self._output = output
        self._colour = colour

    def _detail(self, line: str) -> str:
        """A line of the details, indented; with ``colour``, added diff lines green, removed ones red."""
        if self._colour and line.startswith(("+", "-")) and not line.startswith(("+++", "---")):
            return f"    {_GREEN if line.startswith('+') else _RED}{line}{_RESET}"
        return f"    {line}"

    async def decide(self, request: RequestPermissionRequest) -> Outcome:
        """Ask until the answer names an option; end of input refuses (reject option, else ``cancelled``)."""
        options = request.options
        if not options:
            return CancelledPermissionOutcome()
        out = self._output
        kind = request.tool_call.kind
        about = f" ({kind})" if kind else ""
        lines = [
            sanitize(f"The agent asks for permission: {describe_request(request)}{about}", single_line=True)
        ]
        lines += [self._detail(sanitize(line, single_line=True)) for line in _details(request)]
        lines += [
            f"  {number}) {sanitize(option.name, single_line=True)}"
            for number, option in enumerate(options, 1)
        ]
        out.write("\n".join(lines) + "\n")
        while True:
            out.write(f"Choose 1-{len(options)} (or y/n): ")
            out.flush()
            answer = await self._answers.readline()
            if answer is None:
                out.write(f"\nNo answer (end of {self._answers.name}): refusing.\n")
                out.flush()
                option = pick_option(options, REJECT_KINDS)
                if option is None:
                    return CancelledPermissionOutcome()
                return SelectedPermissionOutcome(option_id=option.option_id)
            option = parse_answer(answer, options)
            if option is not None:
                return SelectedPermissionOutcome(option_id=option.option_id)
            out.write(f"{answer.strip()!r} is not one of the choices.\n")


def _details(request: RequestPermissionRequest) -> list[str]:
    """What the tool call a request is about shows: its command, text and diffs, cut to the first lines."""
    lines: list[str] = []
    raw = request.tool_call.raw_input
    command = raw.get("command") if isinstance(raw, dict) else None
    args = raw.get("args") if isinstance(raw, dict) else None
    if isinstance(command, str) and isinstance(args, list) and all(isinstance(word, str) for word in args):
        command = [command, *args]
    if isinstance(command, list) and all(isinstance(word, str) for word in command):
        command = shlex.join(command)
    own_question = request.options == list(RUN_OPTIONS)  # its content describes the command already
    if isinstance(command, str) and command.strip() and not own_question:
        lines.append(f"$ {command}")
    for item in request.tool_call.content or ():
        if isinstance(item, Content) and isinstance(item.content, TextContent):
            lines += item.content.text.splitlines()
        elif isinstance(item, Diff):
            lines += [text for text, _ in diff_lines(item)]
    if len(lines) > _DETAIL_LINES:
        lines = [*lines[:_DETAIL_LINES], f"[… {len(lines) - _DETAIL_LINES} more lines]"]
    return lines
