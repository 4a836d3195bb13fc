"""``acpio prompt -i``: a conversation, turn after turn, in one session.

After each turn acpio asks for the next prompt (``you> ``). On a terminal the line is edited in
place (:class:`TerminalReader`, which never blocks the event loop: the agent's messages are still
read meanwhile): the arrow keys walk the prompts typed so far, and Tab completes the agent's slash
commands (from its ``available_commands_update``) and acpio's own commands; anything else (a pipe,
a test) is read line by line (:class:`PipeReader`).

A line starting with ``:`` is for acpio, not the agent (:func:`converse`):

* ``:mode ID`` switches the session's mode, ``:option ID VALUE`` sets a config option (through
  :func:`acpio.oneshot.controls.set_mode` and :func:`~acpio.oneshot.controls.set_option`, which
  check the choice against what the agent offered); ``:modes`` and ``:options`` list them;
* ``:help`` lists these; ``:quit`` (or Ctrl-D) ends the conversation.

Ctrl-C during a turn cancels that turn, and the conversation goes on (as it does after a turn the
agent answered with an error); at the ``you>`` prompt it only says how to leave.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, Final, Protocol, TextIO

from rich.cells import cell_len

from acpio.errors import RequestError
from acpio.jsonrpc import Connection, Dispatch, NotificationDispatch, Unhandled
from acpio.oneshot.controls import ControlError, set_mode, set_option
from acpio.oneshot.permissions import LineInput
from acpio.schema import SessionConfigOption
from acpio.session import ActiveSession

__all__ = ["LOCAL_COMMANDS", "CommandWatch", "LineReader", "PipeReader", "TerminalReader", "converse"]

#: acpio's own commands in the conversation, with what they do.
LOCAL_COMMANDS: Final = {
    ":mode": ":mode ID — switch the session's mode",
    ":modes": ":modes — the agent's modes",
    ":option": ":option ID VALUE — set a config option",
    ":options": ":options — the agent's config options and their values",
    ":help": ":help — this list",
    ":quit": ":quit — end the conversation (Ctrl-D too)",
}
PROMPT: Final = "you> "


class LineReader(Protocol):
    """Where the next prompt of the conversation comes from."""

    async def read(self, prompt: str) -> str | None:
        """The next line typed (without its line ending); ``None`` at the end of input."""
        ...

    def complete_with(self, words: list[str]) -> None:
        """Offer ``words`` (``/command``, ``:mode``...) to complete, where completion exists."""
        ...

    def close(self) -> None:
        """Give the terminal back as it was."""
        ...


class PipeReader:
    """Lines from a file descriptor (a pipe, a file), without readline: :class:`LineInput`."""

    def __init__(self, lines: LineInput, out: TextIO | None = None) -> None:
        self._lines = lines
        self._out = out if out is not None else sys.stdout

    async def read(self, prompt: str) -> str | None:
        """Write the prompt, then read one line."""
        self._out.write(prompt)
        self._out.flush()
        return await self._lines.readline()

    def complete_with(self, words: list[str]) -> None:
        """Nothing: there is no completion in a pipe."""

    def close(self) -> None:
        """Nothing: the lines are closed by their owner."""


class TerminalReader:
    """Lines typed at a terminal, edited in place: history, Tab completion, Ctrl-C clears the line.

    The terminal is put in a mode without line buffering, echo or signals while a line is read
    (restored after each line, and by :meth:`close`), and its keys are read as the event loop sees
    them ready (no thread, nothing blocks). Keys: printable text, Backspace, Left/Right, Home/End
    (Ctrl-A/Ctrl-E), Up/Down walk the lines typed before, Tab completes the first word, Ctrl-U
    clears, Ctrl-C clears the line (and says how to leave), Ctrl-D on an empty line ends the
    input, Enter sends.
    """

    def __init__(self, fd: int | None = None, out: TextIO | None = None) -> None:
        self._fd = sys.stdin.fileno() if fd is None else fd
        self._out = out if out is not None else sys.stdout
        self._words: list[str] = list(LOCAL_COMMANDS)
        self._history: list[str] = []
        self._saved: list[Any] | None = None

    def complete_with(self, words: list[str]) -> None:
        """Offer ``words`` and acpio's commands to Tab."""
        self._words = sorted({*words, *LOCAL_COMMANDS})

    async def read(self, prompt: str) -> str | None:
        """Read one line, editing it on the terminal; ``None`` at Ctrl-D on an empty line."""
        import codecs

        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        line = _Line(prompt, self._history)
        self._raw()
        try:
            self._draw(line)
            pending = ""
            while True:
                chunk = await self._read_bytes()
                if not chunk:
                    return None
                pending += decoder.decode(chunk)
                pending, outcome = self._keys(pending, line)
                self._draw(line)
                if outcome is not _GO_ON:
                    self._write("\r\n")
                    if isinstance(outcome, str) and outcome.strip():
                        self._history.append(outcome)
                    return outcome if isinstance(outcome, str) else None
        finally:
            self._restore()

    def _keys(self, keys: str, line: _Line) -> tuple[str, object]:
        """Apply the keys typed; what is left (a key sequence cut in two) and the outcome so far."""
        while keys:
            if keys.startswith("\x1b"):
                length = _escape_length(keys)
                if length is None:
                    return keys, _GO_ON  # the rest of the sequence is on its way
                action = _ESCAPES.get(keys[:length])
                keys = keys[length:]
                if action is not None:  # other keys (Ctrl-Right, F5, Alt-x...) are ignored whole
                    getattr(line, action)()
                continue
            key, keys = keys[0], keys[1:]
            if key in "\r\n":
                return keys, line.text
            if key == "\x04":  # Ctrl-D
                if not line.text:
                    return keys, None
                line.delete()
            elif key == "\x03":  # Ctrl-C
                self._write("^C\r\n(leave with Ctrl-D or :quit)\r\n")
                line.clear()
            elif key in ("\x7f", "\x08"):
                line.backspace()
            elif key == "\t":
                line.complete(self._words)
            elif key == "\x01":
                line.home()
            elif key == "\x05":
                line.end()
            elif key == "\x15":
                line.clear()
            elif key.isprintable():
                line.insert(key)
        return "", _GO_ON

    def _draw(self, line: _Line) -> None:
        back = cell_len(line.text[line.cursor :])  # columns, not characters: 日 takes two
        self._write(f"\r\x1b[K{line.prompt}{line.text}" + (f"\x1b[{back}D" if back else ""))

    def _write(self, text: str) -> None:
        self._out.write(text)
        self._out.flush()

    async def _read_bytes(self) -> bytes:
        loop = asyncio.get_running_loop()
        while True:
            ready: asyncio.Future[None] = loop.create_future()
            loop.add_reader(self._fd, _wake, ready)
            try:
                await ready
            finally:
                loop.remove_reader(self._fd)
            with contextlib.suppress(BlockingIOError):  # another reader took the bytes: wait again
                return os.read(self._fd, 1024)

    def _raw(self) -> None:
        import termios

        try:
            attributes = termios.tcgetattr(self._fd)
        except termios.error:
            return
        self._saved = attributes
        changed = list(attributes)
        changed[3] &= ~(termios.ICANON | termios.ECHO | termios.ISIG | termios.IEXTEN)
        changed[6] = list(changed[6])
        changed[6][termios.VMIN] = 1
        changed[6][termios.VTIME] = 0
        termios.tcsetattr(self._fd, termios.TCSADRAIN, changed)

    def _restore(self) -> None:
        saved, self._saved = self._saved, None
        if saved is not None:
            import termios

            with contextlib.suppress(termios.error):
                termios.tcsetattr(self._fd, termios.TCSADRAIN, saved)

    def close(self) -> None:
        """Give the terminal its settings back, if a line was being read."""
        self._restore()


def _wake(ready: asyncio.Future[None]) -> None:
    if not ready.done():
        ready.set_result(None)


#: What :meth:`TerminalReader._keys` returns while the line is not finished.
_GO_ON: Final = object()
#: The escape sequences of the keys the line editor knows, and the :class:`_Line` method of each.
_ESCAPES: Final = {
    "\x1b[A": "older",
    "\x1b[B": "newer",
    "\x1b[C": "right",
    "\x1b[D": "left",
    "\x1b[H": "home",
    "\x1b[F": "end",
    "\x1bOH": "home",
    "\x1bOF": "end",
    "\x1b[3~": "delete",
}


def _escape_length(keys: str) -> int | None:
    """The length of the escape sequence ``keys`` starts with; ``None`` while it is incomplete.

    ``ESC [`` parameters and a final byte (a CSI sequence), ``ESC O`` and one character, or ``ESC``
    and one character (Alt and a key).
    """
    if len(keys) < 2:
        return None
    if keys[1] == "[":
        for index in range(2, len(keys)):
            if "\x40" <= keys[index] <= "\x7e":
                return index + 1
        return None
    if keys[1] == "O":
        return 3 if len(keys) >= 3 else None
    return 2


class _Line:
    """The line being typed: its text, the cursor, and a place in the history."""

    def __init__(self, prompt: str, history: list[str]) -> None:
        self.prompt = prompt
        self.text = ""
        self.cursor = 0
        self._history = history
        self._place = len(history)
        self._draft = ""

    def insert(self, text: str) -> None:
        self.text = self.text[: self.cursor] + text + self.text[self.cursor :]
        self.cursor += len(text)

    def backspace(self) -> None:
        if self.cursor:
            self.text = self.text[: self.cursor - 1] + self.text[self.cursor :]
            self.cursor -= 1

    def delete(self) -> None:
        self.text = self.text[: self.cursor] + self.text[self.cursor + 1 :]

    def clear(self) -> None:
        self.text, self.cursor = "", 0

    def left(self) -> None:
        self.cursor = max(0, self.cursor - 1)

    def right(self) -> None:
        self.cursor = min(len(self.text), self.cursor + 1)

    def home(self) -> None:
        self.cursor = 0

    def end(self) -> None:
        self.cursor = len(self.text)

    def older(self) -> None:
        if self._place > 0:
            if self._place == len(self._history):
                self._draft = self.text
            self._place -= 1
            self.text = self._history[self._place]
            self.cursor = len(self.text)

    def newer(self) -> None:
        if self._place < len(self._history):
            self._place += 1
            self.text = self._history[self._place] if self._place < len(self._history) else self._draft
            self.cursor = len(self.text)

    def complete(self, words: list[str]) -> None:
        """Complete the first word to the words that start with it (as far as they agree)."""
        if " " in self.text or self.cursor != len(self.text):
            return
        matches = [word for word in words if word.startswith(self.text)]
        if not matches:
            return
        common = os.path.commonprefix(matches)  # noqa: RUF071 (words: by character is meant)
        if len(matches) == 1:
            common += " "
        self.text = common
        self.cursor = len(common)


class CommandWatch:
    """Keeps the names of the slash commands the agent offers, for completion; passes everything on."""

    def __init__(self) -> None:
        self.commands: list[str] = []

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Note an ``available_commands_update``; every message goes on to the other handlers."""
        if isinstance(message, NotificationDispatch) and message.method == "session/update":
            params = message.params
            update = params.get("update") if isinstance(params, dict) else None
            if isinstance(update, dict) and update.get("sessionUpdate") == "available_commands_update":
                commands = update.get("availableCommands")
                if isinstance(commands, list):
                    self.commands = [
                        "/" + name
                        for command in commands
                        if isinstance(command, dict) and isinstance(name := command.get("name"), str)
                    ]
        return Unhandled(message)


async def converse(
    session: ActiveSession,
    turn: Callable[[str], Awaitable[int]],
    reader: LineReader,
    note: Callable[[str], None],
    watch: CommandWatch,
    settle: Callable[[], None] = lambda: None,
) -> int:
    """Ask for prompts and run a turn for each until ``:quit`` or the end of input; returns 0.

    ``turn(text)`` runs one turn (a cancelled or failed one included: the conversation goes on); ``note``
    writes a line for the person (``acpio: ...``); ``watch`` has the agent's commands to complete;
    ``settle`` gives the terminal back before each question (the renderer's live region).
    """
    options: list[SessionConfigOption] | None = None
    current_mode = session.modes.current_mode_id if session.modes is not None else None
    while True:
        settle()
        reader.complete_with(watch.commands)
        line = await reader.read(PROMPT)
        if line is None or line.strip() == ":quit":
            return 0
        text = line.strip()
        if not text:
            continue
        if not text.startswith(":"):
            await turn(line)
            continue
        word, _, rest = text.partition(" ")
        try:
            if word == ":mode" and rest.strip():
                await set_mode(session, rest.strip())
                current_mode = rest.strip()
                note(f"mode: {current_mode}")
            elif word == ":modes":
                modes = session.modes
                offered = [mode.id for mode in modes.available_modes] if modes is not None else []
                current = f" (now {current_mode})" if current_mode else ""
                note(f"modes: {', '.join(offered) or 'none'}{current}")
            elif word == ":option" and len(rest.split(None, 1)) == 2:
                option_id, value = rest.split(None, 1)
                options = await set_option(session, option_id, value.strip(), options)
                now = next((o for o in options if o.id == option_id), None)
                note(f"option {option_id}: {_value(now.current_value) if now is not None else value}")
            elif word == ":options":
                known = options if options is not None else list(session.config_options or ())
                listed = ", ".join(f"{o.id}={_value(o.current_value)}" for o in known)
                note(f"options: {listed or 'none'}")
            else:
                note("acpio's commands: " + "; ".join(LOCAL_COMMANDS.values()))
        except ControlError as exc:
            note(str(exc))
        except RequestError as exc:
            note(f"the agent refused: {exc}")


def _value(value: object) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
