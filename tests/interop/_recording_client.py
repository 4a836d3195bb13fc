"""acpio's own client for the interop tests: a builder-style ``Client`` that records what it sees.

It plays the part ``peers/ts/client.mjs`` and ``peers/official_py/client.py`` play for the other SDKs, and
records the same summary (see ``peers/README.md``), so one set of checks serves every client:

* ``initialize`` with fs read/write and terminal advertised, ``session/new`` in the work directory, one turn
  per prompt, then a turn cancelled with ``session/cancel`` as soon as its first update arrives;
* file system requests confined to the work directory, terminals as real processes, permission requests
  answered by policy (``allow``: the first ``allow_*`` option; ``reject``; ``cancel``);
* every update as acpio parsed it (``update.to_wire()``) *and* every frame as it crossed the wire
  (``wire``: the agent's stdout lines), so a test can check that acpio re-serializes what it read exactly.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from typing import Any

import orjson

from acpio import Client, RequestError, SessionConnection
from acpio import schema as acp
from acpio.errors import InvalidParams, MethodNotFound, ResourceNotFound
from acpio.jsonrpc import Connection, RequestDispatch, Responder
from acpio.session import ActiveSession, TurnEnded
from acpio.transports import AcpAgent, Component, Direction, OversizedFrame, Tap

NAME = "acpio-recording-client"


class _Terminal:
    """A real process run for the agent, its output kept (up to the agent's byte limit)."""

    def __init__(
        self, process: asyncio.subprocess.Process, record: dict[str, Any], limit: int | None
    ) -> None:
        self.process = process
        self.record = record
        self.limit = limit
        self.output = bytearray()
        self.truncated = False
        self.exit_status: acp.TerminalExitStatus | None = None
        self.reader = asyncio.ensure_future(self._collect())

    async def _collect(self) -> None:
        assert self.process.stdout is not None
        while chunk := await self.process.stdout.read(65536):
            self.output += chunk
            if self.limit is not None and len(self.output) > self.limit:
                del self.output[: len(self.output) - self.limit]
                self.truncated = True
        code = await self.process.wait()
        if code >= 0:
            self.exit_status = acp.TerminalExitStatus(exit_code=code)
        else:
            self.exit_status = acp.TerminalExitStatus(signal=f"signal {-code}")
        self.record["exitStatus"] = self.exit_status.to_wire()
        self.record["output"] = self.text()

    def text(self) -> str:
        return self.output.decode("utf-8", errors="replace")

    async def end(self) -> None:
        if self.exit_status is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(self.reader), 3)


class RecordingClient:
    """Drive one agent process through turns with acpio's builder-style client.

    :meth:`run` returns the summary.
    """

    def __init__(
        self, root: Path, *, permission: str = "allow", timeout: float = 30.0, negotiate: bool = False
    ) -> None:
        self.root = root.resolve()
        #: Initialize with ``cx.initialize()`` (offer v2, accept v1) instead of the typed v1 request.
        self.negotiate = negotiate
        self.permission = permission
        self.timeout = timeout
        self.summary: dict[str, Any] = {
            "client": {"name": NAME, "sdk": "acpio"},
            "initialize": None,
            "newSession": None,
            "turns": [],
            "requests": [],
            "terminals": [],
            "sdkErrors": [],
            "wire": [],
            "agentStderr": "",
            "agentExit": None,
            "fatal": None,
        }
        self._terminals: dict[str, _Terminal] = {}
        self._next_terminal = 0
        self._cancelling = False

    # --- the handlers -------------------------------------------------------------------------------

    def _record(self, method: str, request: Any) -> dict[str, Any]:
        entry = {"method": method, "params": request.to_wire()}
        self.summary["requests"].append(entry)
        return entry

    def _confined(self, path: str) -> Path:
        candidate = Path(path)
        if not candidate.is_absolute():
            raise InvalidParams({"path": path, "reason": "path must be absolute"})
        resolved = candidate.resolve()
        if not resolved.is_relative_to(self.root):
            raise InvalidParams(
                {"path": path, "reason": f"path is outside the allowed directory {self.root}"}
            )
        return resolved

    def _terminal(self, terminal_id: str) -> _Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None:
            raise ResourceNotFound({"terminalId": terminal_id})
        return terminal

    def builder(self) -> Any:
        """The client builder with a handler for every request an agent may send."""
        app = Client.builder(name=NAME)

        @app.on_request
        async def permission(req: acp.RequestPermissionRequest) -> acp.RequestPermissionResponse:
            entry = self._record(req.METHOD, req)
            outcome: Any = acp.CancelledPermissionOutcome()
            if not self._cancelling and self.permission != "cancel":
                for option in req.options:
                    if str(option.kind).startswith(self.permission):
                        outcome = acp.SelectedPermissionOutcome(option_id=option.option_id)
                        break
            response = acp.RequestPermissionResponse(outcome=outcome)
            entry["answer"] = response.to_wire()["outcome"]
            return response

        @app.on_request
        async def read_text_file(req: acp.ReadTextFileRequest) -> acp.ReadTextFileResponse:
            self._record(req.METHOD, req)
            target = self._confined(req.path)
            try:
                text = target.read_text(encoding="utf-8")
            except OSError as error:
                raise ResourceNotFound({"path": req.path, "reason": str(error)}) from error
            if req.line is not None or req.limit is not None:
                lines = text.split("\n")
                start = max((req.line or 1) - 1, 0)
                end = start + req.limit if req.limit is not None else len(lines)
                text = "\n".join(lines[start:end])
            return acp.ReadTextFileResponse(content=text)

        @app.on_request
        async def write_text_file(req: acp.WriteTextFileRequest) -> acp.WriteTextFileResponse:
            self._record(req.METHOD, req)
            target = self._confined(req.path)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(req.content, encoding="utf-8")
            return acp.WriteTextFileResponse()

        @app.on_request
        async def create_terminal(req: acp.CreateTerminalRequest) -> acp.CreateTerminalResponse:
            self._record(req.METHOD, req)
            env = dict(os.environ)
            env.update({variable.name: variable.value for variable in req.env or []})
            try:
                process = await asyncio.create_subprocess_exec(
                    req.command,
                    *(req.args or []),
                    cwd=req.cwd or str(self.root),
                    env=env,
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.STDOUT,
                )
            except OSError as error:
                raise RequestError(-32603, f"cannot run {req.command}: {error}") from error
            self._next_terminal += 1
            terminal_id = f"acpio-term-{self._next_terminal}"
            record = {"command": req.command, "args": list(req.args or []), "cwd": req.cwd}
            self.summary["terminals"].append(record)
            self._terminals[terminal_id] = _Terminal(process, record, req.output_byte_limit)
            return acp.CreateTerminalResponse(terminal_id=terminal_id)

        @app.on_request
        async def terminal_output(req: acp.TerminalOutputRequest) -> acp.TerminalOutputResponse:
            self._record(req.METHOD, req)
            terminal = self._terminal(req.terminal_id)
            return acp.TerminalOutputResponse(
                output=terminal.text(), truncated=terminal.truncated, exit_status=terminal.exit_status
            )

        @app.on_request
        async def wait_for_exit(
            req: acp.WaitForTerminalExitRequest,
            responder: Responder[acp.WaitForTerminalExitResponse],
            cx: Connection,
        ) -> None:
            self._record(req.METHOD, req)
            terminal = self._terminal(req.terminal_id)

            async def answer() -> None:
                # Waiting happens beside the dispatch loop, never in it.
                await asyncio.shield(terminal.reader)
                status = terminal.exit_status
                assert status is not None
                responder.respond(
                    acp.WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)
                )

            cx.spawn(answer)

        @app.on_request
        async def kill_terminal(req: acp.KillTerminalRequest) -> acp.KillTerminalResponse:
            self._record(req.METHOD, req)
            terminal = self._terminal(req.terminal_id)
            if terminal.exit_status is None:
                with contextlib.suppress(ProcessLookupError):
                    terminal.process.terminate()
            return acp.KillTerminalResponse()

        @app.on_request
        async def release_terminal(req: acp.ReleaseTerminalRequest) -> acp.ReleaseTerminalResponse:
            self._record(req.METHOD, req)
            terminal = self._terminals.pop(req.terminal_id, None)
            if terminal is None:
                raise ResourceNotFound({"terminalId": req.terminal_id})
            await terminal.end()
            return acp.ReleaseTerminalResponse()

        return app

    # --- the run --------------------------------------------------------------------------------------

    def _wire(self, direction: Direction, frame: bytes | OversizedFrame) -> None:
        if direction is Direction.INCOMING and isinstance(frame, bytes):
            self.summary["wire"].append(orjson.loads(frame))

    def _stderr(self, line: str) -> None:
        self.summary["agentStderr"] = (self.summary["agentStderr"] + line + "\n")[-16384:]

    async def run(
        self, agent: list[str] | Component, prompts: list[str], cancel_prompt: str | None = None
    ) -> dict[str, Any]:
        """Spawn ``agent`` (or connect to a component: a remote agent), run the turns; return the summary."""
        process = AcpAgent(agent, stderr=self._stderr) if isinstance(agent, list) else agent

        async def main(cx: SessionConnection) -> None:
            capabilities = acp.ClientCapabilities(
                fs=acp.FileSystemCapabilities(read_text_file=True, write_text_file=True), terminal=True
            )
            request = acp.InitializeRequest(
                protocol_version=1,
                client_capabilities=capabilities,
                client_info=acp.Implementation(name=NAME, version="0"),
            )
            async with asyncio.timeout(self.timeout):
                response = await (cx.initialize(request) if self.negotiate else cx.send_request(request))
            self.summary["initialize"] = response.to_wire()
            async with asyncio.timeout(self.timeout):
                session = await cx.build_session(self.root).start_session()
            async with session:
                self.summary["newSession"] = session.response().to_wire()
                for text in prompts:
                    await self._turn(session, text, cancel=False)
                if cancel_prompt is not None:
                    await self._turn(session, cancel_prompt, cancel=True)

        try:
            await self.builder().connect_with(Tap(await process.open(), self._wire), main)
        except Exception as error:
            self.summary["fatal"] = f"{type(error).__name__}: {error}"
        finally:
            for terminal in self._terminals.values():
                await terminal.end()
        returncode = process.returncode if isinstance(process, AcpAgent) else None
        if returncode is not None:
            self.summary["agentExit"] = (
                {"code": returncode, "signal": None}
                if returncode >= 0
                else {"code": None, "signal": signal.Signals(-returncode).name}
            )
        return self.summary

    async def _turn(self, session: ActiveSession, text: str, *, cancel: bool) -> None:
        record: dict[str, Any] = {
            "prompt": text,
            "cancelled": cancel,
            "updates": [],
            "stopReason": None,
            "error": None,
        }
        self.summary["turns"].append(record)
        self._cancelling = False
        session.send_prompt(text)
        try:
            async with asyncio.timeout(self.timeout):
                while True:
                    item = await session.read_update()
                    if isinstance(item, TurnEnded):
                        record["stopReason"] = str(item.stop_reason)
                        return
                    if item.is_request:
                        # Every request an agent may send has a builder handler; anything else is a finding.
                        self.summary["sdkErrors"].append(f"unhandled request in the session: {item.method}")
                        assert isinstance(item.dispatch, RequestDispatch)
                        item.dispatch.responder.respond_with_error(MethodNotFound(item.method))
                        continue
                    try:
                        update = item.update
                    except InvalidParams as error:
                        self.summary["sdkErrors"].append(f"acpio rejected a {item.method}: {error}")
                        continue
                    if update is None:
                        self.summary["sdkErrors"].append(
                            f"unexpected notification in the session: {item.method}"
                        )
                        continue
                    record["updates"].append(update.to_wire())
                    if cancel and not self._cancelling:
                        self._cancelling = True
                        session.cancel()
        except RequestError as error:
            record["error"] = {"code": error.code, "message": error.message, "data": error.data}
        except TimeoutError:
            record["error"] = {
                "code": None,
                "message": f"no end of turn within {self.timeout} s",
                "data": None,
            }
        finally:
            self._cancelling = False
