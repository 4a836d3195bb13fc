"""The agent's terminals (``terminal/*``): real processes, their output kept within a byte limit.

:class:`Terminals` serves ``terminal/create``, ``terminal/output``, ``terminal/wait_for_exit``,
``terminal/kill`` and ``terminal/release`` for one client:

* ``create`` checks the request (a variable name with ``=`` or NUL, a NUL in the command, an
  argument or the ``cwd`` is ``-32602`` naming the field; a ``cwd`` outside the root is refused
  like a file outside it), describes what would run as a :class:`TerminalCommand` (the program
  the command resolves to, through the ``PATH`` the command will have; the arguments; the ``cwd``;
  the agent's environment variables, marking those that decide what runs or loads, such as
  ``PATH`` or ``LD_PRELOAD``) and hands it to ``consent``, which refuses by raising a
  :class:`~acpio.RequestError` for the agent. Only then is anything started: the resolved program
  with ``args`` directly (no shell: ask for ``sh -c "..."`` to get one), with the given ``env`` on
  top of ours, in ``cwd`` (default: the root). stdin is ``/dev/null``; stdout and stderr go to one
  pipe, read all the time. Each command runs in its own process group, so killing it ends whatever
  it started, and Ctrl-C at the terminal does not reach it.
* Output is kept up to ``outputByteLimit`` bytes (default :data:`DEFAULT_OUTPUT_LIMIT`, at most
  :data:`MAX_OUTPUT_LIMIT`): past the limit the oldest bytes are dropped, cutting at a UTF-8
  character boundary as the spec requires, and ``truncated`` becomes true.
* ``kill`` sends SIGTERM to the process group, then SIGKILL after a grace period; the terminal
  stays usable. ``release`` kills a command still running and forgets the terminal id; its last
  output stays available to :meth:`Terminals.snapshot`, for the client to display.

Errors go to the agent as :class:`~acpio.RequestError`: an unknown or released terminal id is
``-32002``; a command that cannot be started is ``-32002`` (not found) or ``-32602``.

Without ``consent``, :class:`Terminals` runs whatever the agent asks (for a client that decided
so); ``acpio prompt`` always passes one (see :mod:`acpio.oneshot.run` and ``docs/security.md``).
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import functools
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, TypeAlias

from acpio._process_control import spawn_in_new_group
from acpio.client.files import ConfinedFiles
from acpio.errors import InvalidParams, RequestError, ResourceNotFound
from acpio.oneshot.failures import signal_name
from acpio.schema import (
    CreateTerminalRequest,
    CreateTerminalResponse,
    KillTerminalRequest,
    KillTerminalResponse,
    ReleaseTerminalRequest,
    ReleaseTerminalResponse,
    TerminalExitStatus,
    TerminalOutputRequest,
    TerminalOutputResponse,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
)

__all__ = [
    "DEFAULT_OUTPUT_LIMIT",
    "KILL_GRACE",
    "MAX_OUTPUT_LIMIT",
    "RISKY_VARIABLES",
    "Consent",
    "OutputBuffer",
    "TerminalCommand",
    "TerminalSnapshot",
    "Terminals",
    "is_risky",
]

_log = logging.getLogger("acpio.oneshot")

#: Output bytes kept for a terminal whose ``terminal/create`` gives no ``outputByteLimit``.
DEFAULT_OUTPUT_LIMIT: Final = 1024 * 1024
#: The most output bytes kept for one terminal, whatever ``outputByteLimit`` asks for.
MAX_OUTPUT_LIMIT: Final = 64 * 1024 * 1024
#: Seconds a killed command has between SIGTERM and SIGKILL.
KILL_GRACE: Final = 2.0
#: Seconds to wait, after a command exited, for the last of its output to arrive.
_OUTPUT_SETTLE: Final = 1.0

#: Environment variables that decide which program runs or what code it loads: a search path for
#: programs or libraries, a program to run in place of another (an editor, a pager, an askpass), a
#: script or options a runtime loads at start, or the configuration (which can name programs) a
#: tool reads. An agent setting one of them, or one starting with ``LD_``, ``DYLD_``,
#: ``BASH_FUNC_`` or ``GIT_CONFIG_``, is pointed out when its command is described; a permission
#: granted for the command alone does not cover it, nor does ``acpio prompt --allow`` unless the
#: user allows the variable by name (``--allow-env``). Not exhaustive: any variable can change what
#: a program does, which is why all of them are shown.
RISKY_VARIABLES: Final = frozenset(
    {
        "PATH", "CDPATH", "IFS", "ENV", "BASH_ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND",
        "SHELL", "ZDOTDIR", "HOME", "XDG_CONFIG_HOME", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP",
        "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONBREAKPOINT", "NODE_OPTIONS", "NODE_PATH", "PERL5LIB",
        "PERL5OPT", "PERLLIB", "RUBYLIB", "RUBYOPT", "GEM_HOME", "GEM_PATH", "LUA_PATH", "LUA_CPATH",
        "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "GIT_EXEC_PATH",
        "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "SSH_ASKPASS", "SUDO_ASKPASS", "GIT_EDITOR",
        "GIT_SEQUENCE_EDITOR", "GIT_PAGER", "GIT_EXTERNAL_DIFF", "GIT_PROXY_COMMAND", "EDITOR",
        "VISUAL", "PAGER", "MANPAGER", "LESSOPEN", "LESSCLOSE", "BROWSER", "RUSTC_WRAPPER",
        "CARGO_HOME", "GOFLAGS",
    }
)  # fmt: skip
_RISKY_PREFIXES: Final = ("LD_", "DYLD_", "BASH_FUNC_", "GIT_CONFIG_")
_IDENTIFIER: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True, slots=True)
class TerminalCommand:
    """What a ``terminal/create`` would run, checked and resolved, for a consent decision to judge."""

    session_id: str
    #: The command as the agent gave it, and its arguments.
    command: str
    args: tuple[str, ...]
    #: The program that would run: ``command`` resolved through the ``PATH`` it would have
    #: (the agent's, if it sets one), or against ``cwd`` when it names a path.
    program: str
    cwd: Path
    #: The agent's environment variables, in its order, set on top of this process's environment.
    env: tuple[tuple[str, str], ...]

    @property
    def argv(self) -> list[str]:
        """The command and its arguments, as the agent gave them."""
        return [self.command, *self.args]

    @property
    def risky_variables(self) -> tuple[str, ...]:
        """The names of the agent's variables that decide what runs or loads (see :data:`RISKY_VARIABLES`)."""
        return tuple(name for name, _ in self.env if is_risky(name))

    @property
    def command_line(self) -> str:
        """The command line as a shell shows it, the agent's variables first: ``NAME=value cmd args``.

        A variable whose name a shell would not take (``A-B``) makes it ``env 'A-B=value' cmd args``.
        """
        if all(_IDENTIFIER.fullmatch(name) for name, _ in self.env):
            return " ".join(
                [*(f"{name}={shlex.quote(value)}" for name, value in self.env), shlex.join(self.argv)]
            )
        return shlex.join(["env", *(f"{name}={value}" for name, value in self.env), *self.argv])

    def environment(self) -> dict[str, str]:
        """The environment the command gets: this process's, with the agent's variables on top."""
        return {**os.environ, **dict(self.env)}

    def describe(self) -> list[str]:
        """Lines for a person deciding: the command, the program, the directory, each variable."""
        lines = [f"command: {shlex.join(self.argv)}"]
        if self.program != self.command:
            lines.append(f"program: {self.program}")
        lines.append(f"in: {self.cwd}")
        for name, value in self.env:
            warning = "  <- decides which programs run or what they load" if is_risky(name) else ""
            shown = name if _IDENTIFIER.fullmatch(name) else shlex.quote(name)
            lines.append(f"environment: {shown}={shlex.quote(value)}{warning}")
        return lines


#: Decides whether a command may run: returns to allow it, raises a RequestError (for the agent) to refuse.
Consent: TypeAlias = Callable[[TerminalCommand], Awaitable[None]]


def is_risky(name: str) -> bool:
    """Whether a variable decides which program runs or what it loads (see :data:`RISKY_VARIABLES`)."""
    return name in RISKY_VARIABLES or name.startswith(_RISKY_PREFIXES)


class OutputBuffer:
    """The last ``limit`` bytes of a command's output, cut at a UTF-8 character boundary.

    A sans-I/O helper: :meth:`append` bytes as they arrive, read :meth:`text` at any time.
    """

    __slots__ = ("_data", "limit", "truncated")

    def __init__(self, limit: int) -> None:
        if limit < 0:
            raise ValueError(f"An output byte limit cannot be negative, got {limit}")
        self.limit = limit
        self._data = bytearray()
        #: Whether bytes were dropped from the start to stay within the limit.
        self.truncated = False

    def __len__(self) -> int:
        return len(self._data)

    def append(self, chunk: bytes) -> None:
        """Add output; drop the oldest bytes past the limit, never leaving half a character at the start."""
        data = self._data
        data += chunk
        excess = len(data) - self.limit
        if excess <= 0:
            return
        cut = excess
        while cut < len(data) and data[cut] & 0xC0 == 0x80:  # a UTF-8 continuation byte
            cut += 1
        del data[:cut]
        self.truncated = True

    def text(self, *, final: bool = True) -> str:
        """The output as text; with ``final=False`` an incomplete character at the end is left out.

        Bytes that are not UTF-8 become U+FFFD.
        """
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        return decoder.decode(bytes(self._data), final=final)


@dataclass(frozen=True, slots=True)
class TerminalSnapshot:
    """What a client shows of a terminal: its command line, output and exit status (once it exited)."""

    terminal_id: str
    #: The command and its arguments, as a shell would show them.
    command_line: str
    output: str
    truncated: bool
    exit_status: TerminalExitStatus | None
    #: Whether the agent released the terminal.
    released: bool


class _OutputProtocol(asyncio.SubprocessProtocol):
    """Collects a command's output into its buffer and reports when the process and its pipe end."""

    def __init__(self, buffer: OutputBuffer, loop: asyncio.AbstractEventLoop) -> None:
        self._buffer = buffer
        self.exited: asyncio.Future[None] = loop.create_future()
        self.output_closed: asyncio.Future[None] = loop.create_future()
        #: Called after each piece of output (once the terminal has its id).
        self.on_data: Callable[[], None] | None = None

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        self._buffer.append(data.encode() if isinstance(data, str) else data)
        if self.on_data is not None:
            self.on_data()

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        if fd == 1 and not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


class _Terminal:
    __slots__ = ("buffer", "command_line", "id", "protocol", "session_id", "transport")

    def __init__(
        self,
        terminal_id: str,
        session_id: str,
        command_line: str,
        buffer: OutputBuffer,
        transport: asyncio.SubprocessTransport,
        protocol: _OutputProtocol,
    ) -> None:
        self.id = terminal_id
        self.session_id = session_id
        self.command_line = command_line
        self.buffer = buffer
        self.transport = transport
        self.protocol = protocol

    @property
    def pid(self) -> int:
        return self.transport.get_pid()

    @property
    def running(self) -> bool:
        return not self.protocol.exited.done()

    def exit_status(self) -> TerminalExitStatus | None:
        if self.running:
            return None
        code = self.transport.get_returncode()
        if code is None:
            return None
        if code < 0:
            return TerminalExitStatus(exit_code=None, signal=signal_name(-code))
        return TerminalExitStatus(exit_code=code, signal=None)

    def snapshot(self, *, released: bool) -> TerminalSnapshot:
        return TerminalSnapshot(
            terminal_id=self.id,
            command_line=self.command_line,
            output=self.buffer.text(final=not self.running),
            truncated=self.buffer.truncated,
            exit_status=self.exit_status(),
            released=released,
        )

    def signal_group(self, sig: int) -> bool:
        """Send ``sig`` to the command's process group; whether anything was there to receive it."""
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:  # a member changed identity; reach the command itself at least
            if not self.running:
                return False
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)
        return True

    async def wait_exited(self, seconds: float | None = None) -> bool:
        if self.running:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await asyncio.shield(self.protocol.exited)
        return not self.running

    async def wait_output(self) -> None:
        """After the exit: wait briefly for the rest of the output (a grandchild may hold the pipe)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_OUTPUT_SETTLE):
                await asyncio.shield(self.protocol.output_closed)

    async def terminate(self, grace: float) -> None:
        """SIGTERM to the group, SIGKILL after ``grace`` seconds if the command still runs."""
        if self.running:
            self.signal_group(signal.SIGTERM)
            if not await self.wait_exited(grace):
                self.signal_group(signal.SIGKILL)
                await self.wait_exited(grace)
        # Whatever the command left behind in its group goes too.
        self.signal_group(signal.SIGKILL)


class Terminals:
    """The terminals of one client: start commands for the agent and answer the ``terminal/*`` methods.

    ``files`` gives the root that a ``cwd`` must lie in (and the default ``cwd``). ``consent`` is
    awaited with each :class:`TerminalCommand` before it is started, and refuses it by raising
    (without it, every command runs). ``on_output(terminal_id)`` is called each time a command
    wrote output (for a client that shows it live). Call :meth:`aclose` at the end: commands still
    running are ended. :meth:`kill_now` ends them at once, without waiting (for a second Ctrl-C).
    """

    def __init__(
        self,
        files: ConfinedFiles,
        *,
        default_output_limit: int = DEFAULT_OUTPUT_LIMIT,
        max_output_limit: int = MAX_OUTPUT_LIMIT,
        kill_grace: float = KILL_GRACE,
        consent: Consent | None = None,
        on_output: Callable[[str], None] | None = None,
    ) -> None:
        self._files = files
        self._consent = consent
        self._on_output = on_output
        self._default_limit = default_output_limit
        self._max_limit = max_output_limit
        self._kill_grace = kill_grace
        self._terminals: dict[str, _Terminal] = {}
        self._released: dict[str, TerminalSnapshot] = {}
        #: The terminals :meth:`aclose` is ending, still reachable by :meth:`kill_now`.
        self._ending: list[_Terminal] = []
        self._count = 0

    def __repr__(self) -> str:
        return f"<Terminals root={str(self._files.root)!r} open={len(self._terminals)}>"

    # --- the methods ---------------------------------------------------------------------------

    async def create(self, request: CreateTerminalRequest) -> CreateTerminalResponse:
        """Check the request, ask ``consent``, start the command; answer with its terminal id at once."""
        # In a thread: resolving the cwd and looking the program up on PATH touch the file system.
        command = await asyncio.to_thread(self.prepare, request)
        if self._consent is not None:
            await self._consent(command)
        limit = self._default_limit if request.output_byte_limit is None else request.output_byte_limit
        buffer = OutputBuffer(min(limit, self._max_limit))
        argv, cwd, env = [command.program, *command.args], command.cwd, command.environment()
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await spawn_in_new_group(
                lambda: _OutputProtocol(buffer, loop),
                *argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=cwd,
                env=env,
            )
        except OSError as exc:
            raise _start_failed(request.command, exc) from exc
        self._count += 1
        terminal_id = f"term-{self._count}"
        terminal = _Terminal(
            terminal_id, request.session_id, command.command_line, buffer, transport, protocol
        )
        self._terminals[terminal_id] = terminal
        if self._on_output is not None:
            protocol.on_data = functools.partial(self._on_output, terminal_id)
        _log.debug(
            "Started %s for the agent as %s (pid %d)", terminal.command_line, terminal_id, terminal.pid
        )
        return CreateTerminalResponse(terminal_id=terminal_id)

    def prepare(self, request: CreateTerminalRequest) -> TerminalCommand:
        """What ``request`` would run, checked: the :class:`TerminalCommand`, or the error for the agent.

        ``-32602`` names the field for a NUL character (or text that is not valid) in the command,
        an argument, the ``cwd`` or a variable, and for a variable name that is empty or contains
        ``=``; a ``cwd`` outside the root or not a directory is ``-32602`` too, and a missing ``cwd``
        or a command that is not found ``-32002``.
        """
        _check_text(request.command, "command", request.command)
        if not request.command:
            raise InvalidParams({"field": "command"}, message="terminal/create: the command is empty")
        args = tuple(request.args or ())
        for index, arg in enumerate(args):
            _check_text(arg, f"args[{index}]", request.command)
        env: list[tuple[str, str]] = []
        for index, variable in enumerate(request.env or ()):
            name, value = variable.name, variable.value
            _check_text(name, f"env[{index}].name", request.command)
            if not name or "=" in name:
                raise InvalidParams(
                    {"field": f"env[{index}].name", "name": name},
                    message=f"Refused to run {request.command!r}: env[{index}].name {name!r} is not an "
                    "environment variable name (it is empty or contains '=')",
                )
            _check_text(value, f"env[{index}].value", request.command)
            env.append((name, value))
        if request.cwd is None:
            cwd = self._files.root
        else:
            _check_text(request.cwd, "cwd", request.command)
            cwd = self._files.resolve(request.cwd, "run a command in")
        if not cwd.is_dir():
            raise InvalidParams(
                {"field": "cwd", "cwd": request.cwd},
                message=f"Cannot run {request.command!r} in {cwd}: not a directory",
            )
        return TerminalCommand(
            session_id=request.session_id,
            command=request.command,
            args=args,
            program=_resolve_program(request.command, cwd, env),
            cwd=cwd,
            env=tuple(env),
        )

    def output(self, request: TerminalOutputRequest) -> TerminalOutputResponse:
        """The output so far, whether it was truncated, and the exit status once the command exited."""
        terminal = self._get(request.terminal_id, request.session_id, "terminal/output")
        snapshot = terminal.snapshot(released=False)
        return TerminalOutputResponse(
            output=snapshot.output, truncated=snapshot.truncated, exit_status=snapshot.exit_status
        )

    async def wait_for_exit(self, request: WaitForTerminalExitRequest) -> WaitForTerminalExitResponse:
        """Wait until the command exits (however long); its exit code, or the signal that ended it."""
        terminal = self._get(request.terminal_id, request.session_id, "terminal/wait_for_exit")
        await terminal.wait_exited()
        await terminal.wait_output()
        status = terminal.exit_status()
        assert status is not None
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill(self, request: KillTerminalRequest) -> KillTerminalResponse:
        """End the command (SIGTERM, then SIGKILL); the terminal stays until released."""
        terminal = self._get(request.terminal_id, request.session_id, "terminal/kill")
        await terminal.terminate(self._kill_grace)
        return KillTerminalResponse()

    async def release(self, request: ReleaseTerminalRequest) -> ReleaseTerminalResponse:
        """End the command if it still runs and forget the terminal id (its output stays for display)."""
        terminal = self._get(request.terminal_id, request.session_id, "terminal/release")
        del self._terminals[terminal.id]
        try:
            await terminal.terminate(self._kill_grace)
            await terminal.wait_output()
        finally:
            self._released[terminal.id] = terminal.snapshot(released=True)
            terminal.transport.close()
        return ReleaseTerminalResponse()

    # --- for the client ------------------------------------------------------------------------

    def snapshot(self, terminal_id: str) -> TerminalSnapshot | None:
        """What the terminal shows now (also after it was released); ``None`` for an unknown id."""
        terminal = self._terminals.get(terminal_id)
        if terminal is not None:
            return terminal.snapshot(released=False)
        return self._released.get(terminal_id)

    def kill_now(self) -> None:
        """SIGKILL every command still running (also those :meth:`aclose` is ending), without waiting."""
        for terminal in [*self._terminals.values(), *self._ending]:
            terminal.signal_group(signal.SIGKILL)

    async def aclose(self) -> None:
        """End every command the agent did not release (SIGTERM, then SIGKILL) and free the terminals."""
        terminals = list(self._terminals.values())
        self._terminals.clear()
        self._ending += terminals
        try:
            await asyncio.gather(*(terminal.terminate(self._kill_grace) for terminal in terminals))
        finally:
            self._ending = [terminal for terminal in self._ending if terminal not in terminals]
            for terminal in terminals:
                self._released[terminal.id] = terminal.snapshot(released=True)
                terminal.transport.close()

    # --- internals -----------------------------------------------------------------------------

    def _get(self, terminal_id: str, session_id: str, method: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None or terminal.session_id != session_id:
            state = "was released" if terminal_id in self._released else "does not exist"
            raise ResourceNotFound(
                {"terminalId": terminal_id},
                message=f"{method}: terminal {terminal_id!r} {state} in session {session_id!r}",
            )
        return terminal


def _check_text(text: str, field: str, command: str) -> None:
    """Refuse (``-32602``, naming ``field``) text that cannot be passed to a process: NUL, lone surrogates."""
    problem = None
    if "\0" in text:
        problem = "contains a NUL character"
    else:
        try:
            os.fsencode(text)
        except UnicodeEncodeError:
            problem = "is not valid text"
    if problem is not None:
        raise InvalidParams(
            {"field": field},
            message=f"Refused to run {command!r}: {field} {problem}, which no process can get",
        )


def _resolve_program(command: str, cwd: Path, env: list[tuple[str, str]]) -> str:
    """The file ``command`` runs: a path (against ``cwd``), or the first match on the ``PATH`` it gets."""
    if os.sep in command:
        return os.path.join(cwd, command)
    path = dict(env).get("PATH", os.environ.get("PATH", os.defpath))
    # A relative entry (or an empty one: the current directory) is relative to the command's cwd.
    found = shutil.which(command, path=os.pathsep.join(os.path.join(cwd, d) for d in path.split(os.pathsep)))
    if found is None:
        raise _start_failed(command, FileNotFoundError(command))
    return found


def _start_failed(command: str, exc: OSError) -> RequestError:
    if isinstance(exc, FileNotFoundError):
        where = "the path exists" if os.sep in command else "it is installed and on PATH"
        return ResourceNotFound(
            {"command": command}, message=f"Cannot run {command!r}: command not found (check that {where})"
        )
    if isinstance(exc, PermissionError):
        return InvalidParams({"command": command}, message=f"Cannot run {command!r}: permission denied")
    return InvalidParams({"command": command}, message=f"Cannot run {command!r}: {exc.strerror or exc}")
