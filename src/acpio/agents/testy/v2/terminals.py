"""Agent-owned terminals (ACP v2): testy runs the command itself and shows it to the client.

On v2 the client has no terminal methods: the agent runs commands and reports them as display-only
terminals. :class:`AgentTerminal` starts one process (stdout and stderr merged, in the session's
cwd), reports it with ``terminal_update`` (command, cwd, ``capabilities.cancel``), streams what it
writes as ``terminal_output_chunk`` (base64, one chunk per read), and ends with a
``terminal_update`` carrying the full output snapshot and ``exitStatus``. :meth:`AgentTerminal.cancel`
(``terminal/cancel``, a timeout, a cancelled turn) kills the process; the final update still comes.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import shlex
import signal
from collections.abc import Callable, Sequence
from typing import Final

from acpio.schema.v2 import (
    SessionUpdate,
    TerminalCancelCapabilities,
    TerminalCapabilities,
    TerminalExitStatus,
    TerminalOutput,
    TerminalOutputChunk,
    TerminalUpdate,
)

__all__ = ["AgentTerminal"]

#: How much one read takes from the process's output (one ``terminal_output_chunk`` each).
_READ_SIZE: Final = 4096


class AgentTerminal:
    """One command run by testy and shown to the client as terminal ``terminal_id``."""

    def __init__(
        self, terminal_id: str, argv: Sequence[str], cwd: str, send: Callable[[SessionUpdate], None]
    ) -> None:
        self.terminal_id = terminal_id
        self.argv = tuple(argv)
        self.cwd = cwd
        self._send = send
        self._output = bytearray()
        self._process: asyncio.subprocess.Process | None = None
        self._exit: TerminalExitStatus | None = None
        #: Whether the process was killed (``terminal/cancel``, a timeout or a cancelled turn).
        self.killed = False

    def __repr__(self) -> str:
        return f"<AgentTerminal {self.terminal_id!r} {' '.join(self.argv)!r}>"

    @property
    def output(self) -> str:
        """Everything the command wrote so far, decoded (invalid UTF-8 replaced)."""
        return self._output.decode("utf-8", "replace")

    @property
    def exited(self) -> bool:
        """Whether the command has ended (and its final ``terminal_update`` was sent)."""
        return self._exit is not None

    @property
    def exit_status(self) -> TerminalExitStatus | None:
        """How the command ended (``None`` while it runs)."""
        return self._exit

    async def start(self) -> None:
        """Start the process and announce the terminal; raises ``OSError`` if it cannot start."""
        self._process = await asyncio.create_subprocess_exec(
            *self.argv,
            cwd=self.cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        self._send(
            TerminalUpdate(
                terminal_id=self.terminal_id,
                command=shlex.join(self.argv),
                cwd=self.cwd,
                capabilities=TerminalCapabilities(cancel=TerminalCancelCapabilities()),
            )
        )

    async def wait(self) -> TerminalExitStatus:
        """Stream the output until the command ends; send the final snapshot and exit status."""
        process = self._process
        assert process is not None, "start() first"
        assert process.stdout is not None
        while data := await process.stdout.read(_READ_SIZE):
            self._output += data
            chunk = base64.b64encode(data).decode("ascii")
            self._send(TerminalOutputChunk(terminal_id=self.terminal_id, data=chunk))
        code = await process.wait()
        if code < 0:
            status = TerminalExitStatus(signal=signal.Signals(-code).name)
        else:
            status = TerminalExitStatus(exit_code=code)
        self._exit = status
        snapshot = TerminalOutput(data=base64.b64encode(bytes(self._output)).decode("ascii"))
        self._send(TerminalUpdate(terminal_id=self.terminal_id, output=snapshot, exit_status=status))
        return status

    def cancel(self) -> None:
        """Kill the command (it ends, and :meth:`wait` reports the signal); nothing once it exited."""
        process = self._process
        if process is None or process.returncode is not None:
            return
        self.killed = True
        with contextlib.suppress(ProcessLookupError):
            process.kill()
