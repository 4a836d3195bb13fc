"""Commands a :class:`~acpio.app.Turn` runs itself on v2, shown to the client as agent-owned terminals.

v2 has no client terminals: the agent runs the command, and the client only displays it from
``terminal_update`` (the command, its cwd, then its exit status) and ``terminal_output_chunk``
(each piece of output, base64). The client may ask to stop one with ``terminal/cancel``
(:meth:`AgentTerminals.cancel`).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import shlex
import signal
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from acpio.app.client_requests import CommandResult
from acpio.app.tool_calls import ActiveToolCall
from acpio.app.updates_v2 import V2Updates

__all__ = ["AgentTerminals", "run_agent_terminal"]

_READ: Final = 64 * 1024
#: The capabilities of a running agent terminal: ``terminal/cancel`` kills it.
_CANCEL: Final[dict[str, Any]] = {"cancel": {}}
#: What a shell answers for a command it cannot find or start.
_CANNOT_RUN: Final = 127


class AgentTerminals:
    """The commands running in one session's agent terminals, by terminal id."""

    def __init__(self) -> None:
        self._running: dict[str, asyncio.subprocess.Process] = {}

    def __repr__(self) -> str:
        return f"<AgentTerminals running={len(self._running)}>"

    def cancel(self, terminal_id: str) -> bool:
        """Kill the command of ``terminal_id`` (``terminal/cancel``); whether it was running."""
        process = self._running.get(terminal_id)
        if process is None or process.returncode is not None:
            return False
        _kill(process)
        return True

    def started(self, terminal_id: str, process: asyncio.subprocess.Process) -> None:
        """``process`` runs in ``terminal_id``."""
        self._running[terminal_id] = process

    def ended(self, terminal_id: str) -> None:
        """The command of ``terminal_id`` ended."""
        self._running.pop(terminal_id, None)


def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill the command and what it started: its process group (``sh -c`` leaves its children the pipe)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def _exit_status(code: int | None) -> dict[str, Any]:
    if code is not None and code < 0:
        try:
            return {"signal": signal.Signals(-code).name}
        except ValueError:
            return {"signal": str(-code)}
    return {"exitCode": code}


async def run_agent_terminal(
    updates: V2Updates,
    terminals: AgentTerminals,
    argv: list[str],
    cwd: Path,
    env: Mapping[str, str] | None,
    output_limit: int | None,
    call: ActiveToolCall | None,
    kill_after: float | None,
) -> CommandResult:
    """Run ``argv`` in ``cwd`` as an agent-owned terminal of the session; how it ended.

    The output (stdout and stderr together) streams to the client as it comes; the result keeps its
    last ``output_limit`` bytes. A cancelled turn kills the command and still reports its end.
    """
    terminal_id = f"term_{uuid.uuid4().hex[:16]}"
    await updates.send_v2(
        {
            "sessionUpdate": "terminal_update",
            "terminalId": terminal_id,
            "command": shlex.join(argv),
            "cwd": str(cwd),
        }
    )
    if call is not None:
        await call.show_terminal(terminal_id)
    try:
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env={**os.environ, **env} if env else None,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,  # a group of its own, killed whole (see _kill)
        )
    except OSError as error:
        text = f"{argv[0]}: {error.strerror or error}\n".encode()
        await _chunk(updates, terminal_id, text)
        await _exited(updates, terminal_id, {"exitCode": _CANNOT_RUN})
        return CommandResult(text.decode(), False, _CANNOT_RUN, None)
    terminals.started(terminal_id, process)
    # terminal/cancel is served from now on: advertised (clients send only what is advertised)
    await updates.send_v2(
        {"sessionUpdate": "terminal_update", "terminalId": terminal_id, "capabilities": _CANCEL}
    )
    output = bytearray()
    timed_out = False
    try:
        try:
            async with asyncio.timeout(kill_after):
                await _stream(process, updates, terminal_id, output)
        except TimeoutError:
            timed_out = True
            _kill(process)
            await _stream(process, updates, terminal_id, output)
        code = await process.wait()
    except BaseException:
        if process.returncode is None:
            _kill(process)
        if not updates.cx.closed:  # not awaited: a cancelled turn must still report the end
            status = (
                _exit_status(process.returncode) if process.returncode is not None else {"signal": "SIGKILL"}
            )
            updates.post_v2(_exit_update(terminal_id, status))
        raise
    finally:
        terminals.ended(terminal_id)
    await _exited(updates, terminal_id, _exit_status(code))
    truncated = output_limit is not None and len(output) > output_limit
    kept = bytes(output[-output_limit:]) if output_limit is not None and truncated else bytes(output)
    signal_name = _exit_status(code).get("signal")
    exit_code = None if signal_name is not None else code
    return CommandResult(kept.decode(errors="replace"), truncated, exit_code, signal_name, timed_out)


async def _stream(
    process: asyncio.subprocess.Process, updates: V2Updates, terminal_id: str, output: bytearray
) -> None:
    assert process.stdout is not None
    while data := await process.stdout.read(_READ):
        output += data
        await _chunk(updates, terminal_id, data)


async def _chunk(updates: V2Updates, terminal_id: str, data: bytes) -> None:
    await updates.send_v2(
        {
            "sessionUpdate": "terminal_output_chunk",
            "terminalId": terminal_id,
            "data": base64.b64encode(data).decode("ascii"),
        }
    )


async def _exited(updates: V2Updates, terminal_id: str, status: dict[str, Any]) -> None:
    await updates.send_v2(_exit_update(terminal_id, status))


def _exit_update(terminal_id: str, status: dict[str, Any]) -> dict[str, Any]:
    """The terminal's end: its exit status, and no more ``cancel`` (``null`` clears the capabilities)."""
    return {
        "sessionUpdate": "terminal_update",
        "terminalId": terminal_id,
        "exitStatus": status,
        "capabilities": None,
    }
