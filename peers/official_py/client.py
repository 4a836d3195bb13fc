"""An ACP client written with the official Python SDK (module ``acp``), for acpio's interoperability tests.

Run it with the interpreter of the official SDK's virtualenv (``peers/install.py`` makes it)::

    <official-python> peers/official_py/client.py --cwd DIR [--load SESSION_ID] [--prompt TEXT]...
        [--cancel-prompt TEXT] [--permission allow|reject|cancel] [--timeout SECONDS]
        [--write-returns-none] -- AGENT [ARGS...]

It behaves like ``peers/ts/client.mjs``: spawns AGENT, sends ``initialize`` (fs read/write and terminal
advertised), ``session/new`` with cwd DIR (or ``session/load`` of ``--load``), each ``--prompt`` as one
turn, then ``--cancel-prompt`` as a turn it cancels once the turn's first ``session/update`` arrives. The
file system is confined to DIR, terminals run real processes, permissions are answered per
``--permission``. It prints one JSON summary on stdout (see ``peers/README.md``) and exits 0 when the run
got to its end, 1 when it could not (``fatal`` says why).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import logging
import os
import signal
import sys
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process, text_block
from acp.interfaces import Agent
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    CreateTerminalResponse,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    Implementation,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from pydantic import BaseModel

NAME = "official-python-peer-client"
STDERR_TAIL = 16_384


def dump(value: Any) -> Any:
    """A model as JSON data, with the fields the peer sent (explicit nulls kept)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, list):
        return [dump(item) for item in value]
    return value


class Complaints(logging.Handler):
    """Collects what the SDK logs at warning level and above (invalid messages, handler errors)."""

    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        """Keep the record as one line."""
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            text += f": {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        self.sink.append(text)


@dataclass
class Terminal:
    """A real process run for the agent."""

    process: asyncio.subprocess.Process
    record: dict[str, Any]
    limit: int | None
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    exit_status: TerminalExitStatus | None = None
    reader: asyncio.Task[None] | None = None

    async def collect(self) -> None:
        """Read the process's output to its end, then record how it exited."""
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(65536):
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                del self.output[: len(self.output) - self.limit]
                self.truncated = True
        code = await self.process.wait()
        self.exit_status = (
            TerminalExitStatus(exit_code=code) if code >= 0 else TerminalExitStatus(signal=f"signal {-code}")
        )
        self.record["exitStatus"] = dump(self.exit_status)
        self.record["output"] = self.text()

    def text(self) -> str:
        """The output so far, as text."""
        return self.output.decode("utf-8", errors="replace")


@dataclass
class Turn:
    """The turn being read: its record, and whether it is to be cancelled at its first update."""

    record: dict[str, Any]
    cancel: bool
    cancelling: bool = False


class PeerClient:
    """The client; the SDK calls one method per request or notification the agent sends."""

    def __init__(self, options: argparse.Namespace, summary: dict[str, Any]) -> None:
        self.options = options
        self.root = Path(options.cwd).resolve()
        self.summary = summary
        self.turn: Turn | None = None
        #: Whether a session/load is waiting for its answer (its replayed updates go to ``replay``).
        self.loading = False
        self.agent: Agent | None = None
        self.session_id: str | None = None
        self.terminals: dict[str, Terminal] = {}
        self.ids = itertools.count(1)

    def on_connect(self, conn: Agent) -> None:
        """The SDK hands over the connection to the agent."""
        self.agent = conn

    def record(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Record one of the agent's requests (``None`` fields left out)."""
        entry = {
            "method": method,
            "params": {key: value for key, value in params.items() if value is not None},
        }
        self.summary["requests"].append(entry)
        return entry

    def confined(self, path: str) -> Path:
        """``path`` if it is absolute and inside the work directory; else an invalid-params error."""
        candidate = Path(path)
        if not candidate.is_absolute():
            raise RequestError.invalid_params({"path": path, "reason": "path must be absolute"})
        resolved = candidate.resolve()
        if not resolved.is_relative_to(self.root):
            raise RequestError.invalid_params(
                {"path": path, "reason": f"path is outside the allowed directory {self.root}"}
            )
        return resolved

    # --- session updates ------------------------------------------------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        """Record the update in the current turn; cancel a turn that is to be cancelled."""
        turn = self.turn
        if turn is None and self.loading:
            self.summary["replay"].append(dump(update))
            return
        if turn is None:
            self.summary["sdkErrors"].append(f"session/update outside a turn: {dump(update)}")
            return
        turn.record["updates"].append(dump(update))
        if turn.cancel and not turn.cancelling:
            turn.cancelling = True
            assert self.agent is not None
            await self.agent.cancel(session_id=session_id)

    # --- permission ---------------------------------------------------------------------------------

    async def request_permission(
        self, session_id: str, tool_call: ToolCallUpdate, options: list[PermissionOption], **kwargs: Any
    ) -> RequestPermissionResponse:
        """Answer by the ``--permission`` policy (``cancelled`` while cancelling)."""
        entry = self.record(
            "session/request_permission",
            {"sessionId": session_id, "toolCall": dump(tool_call), "options": dump(options)},
        )
        outcome: AllowedOutcome | DeniedOutcome = DeniedOutcome(outcome="cancelled")
        cancelling = self.turn is not None and self.turn.cancelling
        if not cancelling and self.options.permission != "cancel":
            prefix = "allow" if self.options.permission == "allow" else "reject"
            for option in options:
                if str(option.kind).startswith(prefix):
                    outcome = AllowedOutcome(outcome="selected", option_id=option.option_id)
                    break
        entry["answer"] = dump(outcome)
        return RequestPermissionResponse(outcome=outcome)

    # --- file system --------------------------------------------------------------------------------

    async def read_text_file(
        self, session_id: str, path: str, line: int | None = None, limit: int | None = None, **kwargs: Any
    ) -> ReadTextFileResponse:
        """Read a file inside the work directory (``line``/``limit`` honoured)."""
        self.record(
            "fs/read_text_file", {"sessionId": session_id, "path": path, "line": line, "limit": limit}
        )
        target = self.confined(path)
        try:
            text = target.read_text(encoding="utf-8")
        except OSError as error:
            raise RequestError.resource_not_found(path) from error
        if line is not None or limit is not None:
            lines = text.split("\n")
            start = max((line or 1) - 1, 0)
            end = start + limit if limit is not None else len(lines)
            text = "\n".join(lines[start:end])
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        """Write a file inside the work directory.

        With ``--write-returns-none`` this returns ``None``, as the SDK's ``Client`` interface allows; the SDK
        then answers ``"result": null``.
        """
        self.record("fs/write_text_file", {"sessionId": session_id, "path": path, "content": content})
        target = self.confined(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return None if self.options.write_returns_none else WriteTextFileResponse()

    # --- terminals ----------------------------------------------------------------------------------

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        """Start the command as a real process, its stdout and stderr captured."""
        self.record(
            "terminal/create",
            {
                "sessionId": session_id,
                "command": command,
                "args": args,
                "cwd": cwd,
                "outputByteLimit": output_byte_limit,
            },
        )
        environment = dict(os.environ)
        environment.update({variable.name: variable.value for variable in env or []})
        try:
            process = await asyncio.create_subprocess_exec(
                command,
                *(args or []),
                cwd=cwd or str(self.root),
                env=environment,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
            )
        except OSError as error:
            raise RequestError.internal_error({"command": command, "reason": str(error)}) from error
        terminal_id = f"term-{next(self.ids)}"
        record = {"command": command, "args": args or [], "cwd": cwd, "exitStatus": None, "output": ""}
        self.summary["terminals"].append(record)
        terminal = Terminal(process=process, record=record, limit=output_byte_limit)
        terminal.reader = asyncio.create_task(terminal.collect())
        self.terminals[terminal_id] = terminal
        return CreateTerminalResponse(terminal_id=terminal_id)

    def terminal(self, terminal_id: str) -> Terminal:
        """The terminal with that id; else a resource-not-found error."""
        terminal = self.terminals.get(terminal_id)
        if terminal is None:
            raise RequestError.resource_not_found(terminal_id)
        return terminal

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        """The output so far, and the exit status once the command ended."""
        self.record("terminal/output", {"sessionId": session_id, "terminalId": terminal_id})
        terminal = self.terminal(terminal_id)
        return TerminalOutputResponse(
            output=terminal.text(), truncated=terminal.truncated, exit_status=terminal.exit_status
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        """Wait for the command to end."""
        self.record("terminal/wait_for_exit", {"sessionId": session_id, "terminalId": terminal_id})
        terminal = self.terminal(terminal_id)
        assert terminal.reader is not None
        await asyncio.shield(terminal.reader)
        assert terminal.exit_status is not None
        return WaitForTerminalExitResponse(
            exit_code=terminal.exit_status.exit_code, signal=terminal.exit_status.signal
        )

    async def kill_terminal(self, session_id: str, terminal_id: str, **kwargs: Any) -> KillTerminalResponse:
        """Terminate the command; the terminal stays readable."""
        self.record("terminal/kill", {"sessionId": session_id, "terminalId": terminal_id})
        terminal = self.terminal(terminal_id)
        if terminal.exit_status is None:
            with contextlib.suppress(ProcessLookupError):
                terminal.process.terminate()
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse:
        """Kill the command if it still runs, and forget the terminal."""
        self.record("terminal/release", {"sessionId": session_id, "terminalId": terminal_id})
        terminal = self.terminals.pop(terminal_id, None)
        if terminal is None:
            raise RequestError.resource_not_found(terminal_id)
        if terminal.exit_status is None:
            with contextlib.suppress(ProcessLookupError):
                terminal.process.kill()
        return ReleaseTerminalResponse()

    async def end_terminals(self) -> None:
        """Kill and reap every terminal still running."""
        for terminal in self.terminals.values():
            if terminal.exit_status is None:
                with contextlib.suppress(ProcessLookupError):
                    terminal.process.kill()
            if terminal.reader is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(terminal.reader, 3)

    # --- extension messages -------------------------------------------------------------------------

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Extension requests are recorded and refused."""
        self.record(f"_{method}", params)
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        """Extension notifications are recorded."""
        self.summary["notifications"].append({"method": f"_{method}", "params": params})


def error_record(error: BaseException) -> dict[str, Any]:
    """A JSON-RPC error (or another failure) as summary data."""
    if isinstance(error, RequestError):
        return {"code": error.code, "message": str(error), "data": error.data}
    return {"code": None, "message": f"{type(error).__name__}: {error}", "data": None}


def exit_record(returncode: int | None) -> dict[str, Any] | None:
    """A process's exit status as summary data."""
    if returncode is None:
        return None
    if returncode < 0:
        return {"code": None, "signal": signal.Signals(-returncode).name}
    return {"code": returncode, "signal": None}


async def run(options: argparse.Namespace, summary: dict[str, Any]) -> None:
    """Spawn the agent, run the turns, and record the agent's exit once the SDK has ended it."""
    client = PeerClient(options, summary)
    command, *args = options.agent
    stderr_task: asyncio.Task[None] | None = None
    async with spawn_agent_process(client, command, *args, env=dict(os.environ)) as (conn, process):

        async def drain_stderr() -> None:
            assert process.stderr is not None
            while chunk := await process.stderr.read(65536):
                summary["agentStderr"] = (summary["agentStderr"] + chunk.decode("utf-8", "replace"))[
                    -STDERR_TAIL:
                ]

        stderr_task = asyncio.create_task(drain_stderr())
        try:
            await run_turns(conn, client, options, summary)
        finally:
            await client.end_terminals()
    # Leaving the block closed the agent's stdin and waited for it (then terminate, then kill).
    summary["agentExit"] = exit_record(process.returncode)
    if stderr_task is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(stderr_task, 3)


async def run_turns(
    conn: Any, client: PeerClient, options: argparse.Namespace, summary: dict[str, Any]
) -> None:
    """initialize, session/new (or session/load), then one turn per prompt and the cancelled turn."""
    timeout = options.timeout
    response = await asyncio.wait_for(
        conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
            ),
            client_info=Implementation(name=NAME, version=version("agent-client-protocol")),
        ),
        timeout,
    )
    summary["initialize"] = dump(response)
    session_id = options.load
    if session_id is None:
        session = await asyncio.wait_for(conn.new_session(cwd=str(client.root), mcp_servers=[]), timeout)
        summary["newSession"] = dump(session)
        session_id = session.session_id
    else:
        client.loading = True
        try:
            loaded = await asyncio.wait_for(
                conn.load_session(cwd=str(client.root), session_id=session_id, mcp_servers=[]), timeout
            )
        finally:
            client.loading = False
        summary["loadSession"] = dump(loaded)
    turns = [(text, False) for text in options.prompt]
    if options.cancel_prompt is not None:
        turns.append((options.cancel_prompt, True))
    for text, cancel in turns:
        record: dict[str, Any] = {
            "prompt": text,
            "cancelled": cancel,
            "updates": [],
            "stopReason": None,
            "error": None,
        }
        summary["turns"].append(record)
        client.turn = Turn(record=record, cancel=cancel)
        try:
            answer = await asyncio.wait_for(
                conn.prompt(session_id=session_id, prompt=[text_block(text)]), timeout
            )
            record["stopReason"] = str(answer.stop_reason)
        except (RequestError, TimeoutError) as error:
            record["error"] = error_record(error)
        finally:
            client.turn = None


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(prog="client.py", description=__doc__.splitlines()[0])
    parser.add_argument("--cwd", required=True, help="the session's directory; file access is confined to it")
    parser.add_argument("--load", metavar="SESSION_ID", help="continue this session (session/load)")
    parser.add_argument("--prompt", action="append", default=[], help="a prompt turn (repeatable)")
    parser.add_argument("--cancel-prompt", help="a last turn, cancelled at its first update")
    parser.add_argument("--permission", choices=["allow", "reject", "cancel"], default="allow")
    parser.add_argument(
        "--write-returns-none",
        action="store_true",
        help='answer fs/write_text_file with None (the SDK sends `"result": null`)',
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each answer")
    parser.add_argument("agent", nargs="+", help="the agent command, after --")
    return parser.parse_args(argv)


def main() -> int:
    """Run the client, print the summary, return the exit status."""
    options = parse_args(sys.argv[1:])
    summary: dict[str, Any] = {
        "client": {"name": NAME, "sdk": "agent-client-protocol", "version": version("agent-client-protocol")},
        "initialize": None,
        "newSession": None,
        "loadSession": None,
        "replay": [],
        "turns": [],
        "requests": [],
        "notifications": [],
        "terminals": [],
        "sdkErrors": [],
        "agentStderr": "",
        "agentExit": None,
        "fatal": None,
    }
    logging.getLogger().addHandler(Complaints(summary["sdkErrors"]))

    async def main_async() -> None:
        try:
            await run(options, summary)
        except Exception as error:
            summary["fatal"] = f"{type(error).__name__}: {error}"

    asyncio.run(main_async())
    print(json.dumps(summary))
    return 0 if summary["fatal"] is None else 1


if __name__ == "__main__":
    sys.exit(main())
