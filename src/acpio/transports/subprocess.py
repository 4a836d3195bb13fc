"""Spawn an agent (or a proxy) as a child process and talk to it over its stdin and stdout.

:class:`AcpAgent` is a :class:`~acpio.transports.base.Component`: ``await agent.open()`` starts the
process and returns an :class:`AgentProcess`, the transport to it. The child:

* inherits our whole environment, plus the command's overrides;
* runs in its own process group (``start_new_session=True``), so ending it ends whatever it spawned;
* has its stderr read all the time by a task, so an agent that writes megabytes of logs never
  stalls on a full pipe; the last 64 KiB are kept and attached to the error if it exits abnormally.

Closing the transport closes the child's stdin and waits ``grace_period`` seconds for it to exit;
then the process group gets SIGTERM, and after ``terminate_timeout`` more seconds SIGKILL. Once the
child has exited, anything left in its process group (grandchildren) is ended the same way.
The same happens, without closing, when the child exits while something it started still holds its
stdout: after ``grace_period`` seconds the group is ended, so that the connection sees the end of
the agent's output instead of waiting for it forever.
:meth:`AgentProcess.kill` (or :meth:`AcpAgent.kill`) sends SIGKILL to the whole group at once, for
a caller that must stop without waiting; closing the transport afterwards still reaps the child.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from acpio._process_control import spawn_in_new_group
from acpio.errors import TransportError
from acpio.transports.base import OversizedFrame
from acpio.transports.commands import AgentCommand
from acpio.transports.lines import DEFAULT_MAX_LINE, LineSplitter
from acpio.transports.streams import READ_SIZE, ByteStreams

__all__ = ["AcpAgent", "AgentProcess"]

logger = logging.getLogger("acpio.transports")

STDERR_TAIL_SIZE = 64 * 1024
"""How many bytes of an agent's stderr are kept for error reports."""

STDERR_LINE_LIMIT = 64 * 1024
"""Longer stderr lines are cut to their start (and marked) before being logged or passed to ``stderr``."""

DEFAULT_GRACE_PERIOD = 2.0
"""Seconds an agent has to exit after its stdin is closed, before it gets SIGTERM."""

DEFAULT_TERMINATE_TIMEOUT = 1.0
"""Seconds an agent has to exit after SIGTERM, before it gets SIGKILL."""

_GROUP_POLL_INTERVAL = 0.02


class AcpAgent:
    """An agent or proxy program to run as a child process: a :class:`~acpio.transports.base.Component`.

    ``command`` is an argv list, a shell-words string (``"python agent.py --fast"``, leading
    ``NAME=value`` words set variables), a JSON string or a mapping
    ``{"command": ..., "args": [...], "env": {...}}``, or an :class:`AgentCommand`. ``env`` adds
    variables to the environment the child inherits; ``cwd`` sets its working directory.

    ``await agent.open()`` starts the process and returns its transport, an :class:`AgentProcess`
    (a :class:`~acpio.transports.tap.Tap` around it shows the frames it moves). ``stderr(line)``
    sees each line the process writes to its stderr. See the module docstring for how the process
    is ended.
    """

    def __init__(
        self,
        command: str | Sequence[str] | Mapping[str, Any] | AgentCommand,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        grace_period: float = DEFAULT_GRACE_PERIOD,
        terminate_timeout: float = DEFAULT_TERMINATE_TIMEOUT,
        max_line: int = DEFAULT_MAX_LINE,
        stderr: Callable[[str], None] | None = None,
    ) -> None:
        parsed = command if isinstance(command, AgentCommand) else AgentCommand.parse(command)
        self._command = parsed.with_env(env) if env else parsed
        self._cwd = cwd
        self._grace_period = grace_period
        self._terminate_timeout = terminate_timeout
        self._max_line = max_line
        self._on_stderr = stderr
        self._process: AgentProcess | None = None

    @classmethod
    def from_string(cls, text: str, **options: Any) -> AcpAgent:
        """An agent from a shell-words string or a JSON config string; ``options`` as for the constructor."""
        return cls(AgentCommand.from_string(text), **options)

    @classmethod
    def from_args(cls, argv: Sequence[str], **options: Any) -> AcpAgent:
        """An agent from command-line words; leading ``NAME=value`` words set environment variables."""
        return cls(AgentCommand.from_args(argv), **options)

    def __repr__(self) -> str:
        return f"AcpAgent({self._command.display()!r})"

    @property
    def command(self) -> AgentCommand:
        """What is run: program, arguments and environment overrides."""
        return self._command

    @property
    def process(self) -> AgentProcess | None:
        """The transport to the process started by the last :meth:`open`, if any."""
        return self._process

    @property
    def pid(self) -> int | None:
        """The process id of the last process started, or ``None`` before :meth:`open`."""
        return self._process.pid if self._process is not None else None

    @property
    def returncode(self) -> int | None:
        """The last process's exit status (negative: the signal that ended it); ``None`` while it runs."""
        return self._process.returncode if self._process is not None else None

    def kill(self) -> None:
        """SIGKILL the process group of the last process started, now (see :meth:`AgentProcess.kill`)."""
        if self._process is not None:
            self._process.kill()

    async def open(self) -> AgentProcess:
        """Start the process; return the transport to it.

        Raises :class:`~acpio.TransportError` if the program cannot be started (not found, not
        executable, bad working directory). Each call starts a new process.
        """
        self._process = await AgentProcess.start(
            self._command,
            cwd=self._cwd,
            grace_period=self._grace_period,
            terminate_timeout=self._terminate_timeout,
            max_line=self._max_line,
            stderr=self._on_stderr,
        )
        return self._process


class _AgentProtocol(asyncio.subprocess.SubprocessStreamProtocol):
    """The standard stream protocol, plus a future that completes the moment the child exits.

    ``Process.wait()`` also waits for every pipe to close, which a grandchild holding stderr
    can delay indefinitely; shutdown needs to know when the child itself is gone.
    """

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(limit=limit, loop=loop)
        self.exited: asyncio.Future[None] = loop.create_future()
        #: Completes when the child's stdout pipe is closed by every process holding it.
        self.output_closed: asyncio.Future[None] = loop.create_future()
        #: Sees each chunk of the child's stdout first; ``True``: it took the chunk (see AgentProcess).
        self.take_stdout: Callable[[bytes], bool] | None = None

    def pipe_data_received(self, fd: int, data: bytes | str) -> None:
        take = self.take_stdout
        if fd == 1 and take is not None and isinstance(data, bytes) and take(data):
            return
        super().pipe_data_received(fd, data)

    def pipe_connection_lost(self, fd: int, exc: Exception | None) -> None:
        super().pipe_connection_lost(fd, exc)
        if fd == 1 and not self.output_closed.done():
            self.output_closed.set_result(None)

    def process_exited(self) -> None:
        super().process_exited()
        if not self.exited.done():
            self.exited.set_result(None)


class _DirectStdout(asyncio.Protocol):
    """The protocol of the child's stdout pipe: each chunk goes to the process protocol at once.

    asyncio's own pipe protocol hands chunks on with ``call_soon``: a response then cost the
    client one more pass of the event loop before it was read. End of output and flow control go
    on to asyncio's protocol, which keeps the subprocess transport's bookkeeping.
    """

    __slots__ = ("_original", "_protocol")

    def __init__(self, original: asyncio.BaseProtocol, protocol: _AgentProtocol) -> None:
        self._original = original
        self._protocol = protocol

    def data_received(self, data: bytes) -> None:
        self._protocol.pipe_data_received(1, data)

    def eof_received(self) -> bool | None:
        eof_received = getattr(self._original, "eof_received", None)
        return eof_received() if eof_received is not None else None

    def connection_lost(self, exc: Exception | None) -> None:
        self._original.connection_lost(exc)

    def pause_writing(self) -> None:
        self._original.pause_writing()

    def resume_writing(self) -> None:
        self._original.resume_writing()


class AgentProcess(ByteStreams):
    """The transport to a running agent process (made by :meth:`AcpAgent.open`).

    When the agent ends its output: ``receive()`` returns ``None`` if it exited with status 0
    and raises :class:`~acpio.TransportError` (exit status in the message, the end of its stderr
    in ``stderr_tail``) if it failed or was killed. :meth:`aclose` ends the process group.
    """

    def __init__(
        self,
        process: asyncio.subprocess.Process,
        transport: asyncio.SubprocessTransport,
        protocol: _AgentProtocol,
        command: AgentCommand,
        *,
        grace_period: float,
        terminate_timeout: float,
        max_line: int,
        stderr: Callable[[str], None] | None,
    ) -> None:
        assert process.stdout is not None
        assert process.stdin is not None
        assert process.stderr is not None
        label = f"agent {command.display()!r} (pid {process.pid})"
        super().__init__(
            process.stdout,
            process.stdin,
            max_line=max_line,
            label=label,
            close_timeout=grace_period,
        )
        self._process = process
        self._subprocess_transport = transport
        self._exited = protocol.exited
        self._output_closed = protocol.output_closed
        self._command = command
        self._grace_period = grace_period
        self._terminate_timeout = terminate_timeout
        self._stderr = _StderrDrain(process.stderr, label, stderr)
        self._closing: asyncio.Future[None] | None = None
        self._orphans: asyncio.Task[None] | None = None
        self._exited.add_done_callback(self._on_exit)
        #: Bytes of stdout fed to the stream reader and not read from it yet.
        self._unread = 0
        protocol.take_stdout = self._stdout_chunk
        stdout_pipe = transport.get_pipe_transport(1)
        if stdout_pipe is not None:
            # Chunks read after this point are delivered in the pipe's callback; those read before
            # were queued with call_soon by asyncio and run first, in order.
            stdout_pipe.set_protocol(_DirectStdout(stdout_pipe.get_protocol(), protocol))

    def _stdout_chunk(self, data: bytes) -> bool:
        """A chunk of the child's stdout: taken as a lone frame (``take_lone_frames``), or left to read."""
        if self._unread == 0:
            try:
                if self.offer_lone_frame(data):
                    return True
            except Exception:  # raised in the pipe's callback it would lose the chunk: read it in order
                logger.exception("Settling a lone response from the agent failed; it is read in order")
        self._unread += len(data)
        return False

    async def _read_chunk(self) -> bytes:
        chunk = await super()._read_chunk()
        self._unread -= len(chunk)
        return chunk

    @classmethod
    async def start(
        cls,
        command: AgentCommand,
        *,
        cwd: str | os.PathLike[str] | None = None,
        grace_period: float = DEFAULT_GRACE_PERIOD,
        terminate_timeout: float = DEFAULT_TERMINATE_TIMEOUT,
        max_line: int = DEFAULT_MAX_LINE,
        stderr: Callable[[str], None] | None = None,
    ) -> AgentProcess:
        """Spawn ``command`` in a new process group with piped stdin, stdout and stderr."""
        loop = asyncio.get_running_loop()
        try:
            transport, protocol = await spawn_in_new_group(
                lambda: _AgentProtocol(limit=2 * READ_SIZE, loop=loop),
                *command.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, **command.env},
                cwd=cwd,
            )
        except OSError as exc:
            raise _start_failed(command, cwd, exc) from exc
        process = asyncio.subprocess.Process(transport, protocol, loop)
        logger.debug("Started agent %s (pid %d)", command.display(), process.pid)
        return cls(
            process,
            transport,
            protocol,
            command,
            grace_period=grace_period,
            terminate_timeout=terminate_timeout,
            max_line=max_line,
            stderr=stderr,
        )

    @property
    def command(self) -> AgentCommand:
        """The command this process runs."""
        return self._command

    @property
    def pid(self) -> int:
        """The child's process id (also its process group id)."""
        return self._process.pid

    @property
    def returncode(self) -> int | None:
        """The exit status (negative: killed by that signal); ``None`` while the process runs."""
        return self._process.returncode

    @property
    def stderr_tail(self) -> str | None:
        """The last 64 KiB of what the agent wrote to stderr so far, or ``None`` if nothing."""
        return self._stderr.tail()

    async def wait(self) -> int:
        """Wait for the process to exit; return its exit status."""
        await asyncio.shield(self._exited)
        returncode = self._process.returncode
        assert returncode is not None
        return returncode

    def kill(self) -> None:
        """SIGKILL the whole process group now, without waiting (to stop at once: a second Ctrl-C).

        :meth:`aclose` is still needed to reap the child and free the pipes; it then finds the
        group gone and returns quickly.
        """
        self._signal_group(signal.SIGKILL)

    # -- how the process ended ---------------------------------------------------------------

    def _on_exit(self, _: asyncio.Future[None]) -> None:
        if self._closing is None and not self._output_closed.done():
            self._orphans = asyncio.get_running_loop().create_task(
                self._end_orphans(), name=f"acpio: leftovers of {self.label}"
            )

    async def _end_orphans(self) -> None:
        """The child exited, its stdout is still open: what it started holds it. End them, after a grace."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._grace_period):
                await asyncio.shield(self._output_closed)
        if not self._output_closed.done() and self._closing is None:
            logger.debug(
                "%s exited %.1f s ago but its process group still holds its stdout; ending the group",
                self.label,
                self._grace_period,
            )
            await self._end_group_leftovers()

    async def _on_end_of_input(self) -> None:
        """The agent closed its stdout: find out whether it exited cleanly."""
        if self.closed:
            return
        await self._exited_within(self._grace_period)
        returncode = self._process.returncode
        if returncode is None or returncode == 0:
            return
        await self._stderr.wait_done(self._grace_period)
        raise TransportError(
            f"The {self.label} {_describe_exit(returncode)}. Its stderr (below) usually says why.",
            stderr_tail=self._stderr.tail(),
        )

    def _read_failed(self, exc: BaseException) -> TransportError:
        return TransportError(
            f"Reading from the {self.label} failed ({exc or type(exc).__name__}){self._exit_note()}.",
            stderr_tail=self._stderr.tail(),
        )

    def _write_failed(self, exc: BaseException) -> TransportError:
        return TransportError(
            f"Writing to the {self.label} failed ({exc or type(exc).__name__}): it stopped reading its "
            f"input{self._exit_note()}.",
            stderr_tail=self._stderr.tail(),
        )

    def _exit_note(self) -> str:
        returncode = self._process.returncode
        return f"; it {_describe_exit(returncode)}" if returncode is not None else ""

    # -- closing ---------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Flush queued frames, close the agent's stdin and end its process group (see module docs)."""
        if self._closing is not None:
            await asyncio.shield(self._closing)
            return
        self._closing = asyncio.get_running_loop().create_future()
        try:
            await super().aclose()
        finally:
            self._closing.set_result(None)

    async def _release(self) -> None:
        if self._orphans is not None and not self._orphans.done():
            self._orphans.cancel()  # _end_process ends the group itself
            await asyncio.wait((self._orphans,))
        try:
            await self._end_process()
        finally:
            await self._stderr.wait_done(self._grace_period)
            await self._stderr.stop()
            self._subprocess_transport.close()

    async def _end_process(self) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        stdin.close()
        with contextlib.suppress(OSError):
            await stdin.wait_closed()
        if not await self._exited_within(self._grace_period):
            logger.debug(
                "%s still runs %.1f s after its stdin closed; sending SIGTERM", self.label, self._grace_period
            )
            self._signal_group(signal.SIGTERM)
            if not await self._exited_within(self._terminate_timeout):
                logger.warning(
                    "%s ignored SIGTERM for %.1f s; killing it", self.label, self._terminate_timeout
                )
                self._signal_group(signal.SIGKILL)
                await self._exited_within(self._terminate_timeout)
        await self._end_group_leftovers()

    async def _exited_within(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the child to exit; whether it did."""
        if not self._exited.done():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await asyncio.shield(self._exited)
        return self._exited.done()

    async def _end_group_leftovers(self) -> None:
        """End processes the child left behind in its group: SIGTERM, then SIGKILL if they stay."""
        if not self._signal_group(signal.SIGTERM):
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._terminate_timeout
        # Nothing signals the end of processes that are not our children: look, briefly.
        while loop.time() < deadline:
            await asyncio.sleep(_GROUP_POLL_INTERVAL)
            if not self._signal_group(0):
                return
        self._signal_group(signal.SIGKILL)

    def _signal_group(self, sig: int) -> bool:
        """Send ``sig`` to the child's process group; whether the group still had members."""
        try:
            os.killpg(self._process.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:  # a member changed identity (setuid): reach the child at least
            if self._process.returncode is not None:
                return False
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._process.pid, sig)
        return True


class _StderrDrain:
    """Reads an agent's stderr until it ends, keeping the last bytes and reporting each line."""

    def __init__(
        self,
        stream: asyncio.StreamReader,
        label: str,
        on_line: Callable[[str], None] | None,
    ) -> None:
        self._stream = stream
        self._label = label
        self._on_line = on_line
        self._tail = bytearray()
        self._dropped = False
        self._task = asyncio.get_running_loop().create_task(self._drain(), name=f"acpio stderr of {label}")

    async def _drain(self) -> None:
        wanted = self._on_line is not None or logger.isEnabledFor(logging.DEBUG)
        lines = LineSplitter(STDERR_LINE_LIMIT) if wanted else None
        while True:
            try:
                chunk = await self._stream.read(READ_SIZE)
            except OSError as exc:
                logger.debug("Reading the stderr of %s failed: %s", self._label, exc)
                break
            if not chunk:
                break
            self._tail += chunk
            if len(self._tail) > 2 * STDERR_TAIL_SIZE:
                del self._tail[:-STDERR_TAIL_SIZE]
                self._dropped = True
            if lines is not None:
                for line in lines.feed(chunk):
                    self._report(line)
        if lines is not None and (rest := lines.finish()) is not None:
            self._report(rest)

    def _report(self, line: bytes | OversizedFrame) -> None:
        if isinstance(line, OversizedFrame):
            text = line.head.decode("utf-8", "replace") + " … [stderr line truncated]"
        else:
            text = line.decode("utf-8", "replace")
        logger.debug("%s stderr: %s", self._label, text)
        if self._on_line is None:
            return
        try:
            self._on_line(text)
        except Exception:
            logger.exception("The stderr callback of %s failed", self._label)

    def tail(self) -> str | None:
        """The last :data:`STDERR_TAIL_SIZE` bytes as text, starting at a line; ``None`` if empty."""
        data = bytes(self._tail[-STDERR_TAIL_SIZE:])
        dropped = self._dropped or len(self._tail) > STDERR_TAIL_SIZE
        if dropped and (newline := data.find(b"\n")) != -1:
            data = data[newline + 1 :]
        text = data.decode("utf-8", "replace").rstrip()
        if not text:
            return None
        return f"[… earlier stderr output omitted]\n{text}" if dropped else text

    async def wait_done(self, seconds: float) -> None:
        """Wait up to ``seconds`` for stderr to reach its end."""
        if not self._task.done():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await asyncio.shield(self._task)

    async def stop(self) -> None:
        """Stop reading (the process is gone; a grandchild may still hold the pipe)."""
        if not self._task.done():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        return f"was killed by {name}"
    return f"exited with exit code {returncode}"


def _start_failed(command: AgentCommand, cwd: str | os.PathLike[str] | None, exc: OSError) -> TransportError:
    program = command.command
    if cwd is not None and not os.path.isdir(cwd):
        return TransportError(
            f"Cannot start agent {program!r}: the working directory {os.fspath(cwd)!r} does not exist"
        )
    if isinstance(exc, FileNotFoundError):
        where = (
            "the path exists" if os.sep in program else "it is installed and on PATH (or give its full path)"
        )
        return TransportError(f"Cannot start agent {program!r}: command not found. Check that {where}.")
    if isinstance(exc, PermissionError):
        return TransportError(
            f"Cannot start agent {program!r}: permission denied. Check that it is an executable file."
        )
    return TransportError(f"Cannot start agent {program!r}: {exc.strerror or exc}")
