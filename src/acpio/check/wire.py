"""The agent under test on stdio, with every line kept, driven by a client that answers as advertised.

:class:`AgentUnderTest` starts the command, writes requests and notifications, and reads every
line the agent writes into :attr:`AgentUnderTest.frames` (a line that is not JSON too). The agent's
own requests are answered the way a client with the given capabilities would (:class:`ScriptedClient`):
files under the work directory, a terminal that runs nothing, permission granted (``cancelled`` in
a session whose turn was cancelled), ``-32601`` for what was not advertised. A permission request
can be *held* instead, to cancel the turn under it.
Every wait is bounded: a hung agent gives a :class:`NoAnswer`, never a hang.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

__all__ = ["AgentUnderTest", "Frame", "NoAnswer", "ScriptedClient"]

JsonObject = dict[str, Any]


@dataclass
class Frame:
    """One line on the wire: ``"out"`` (the check wrote it) or ``"in"`` (the agent did)."""

    direction: str
    raw: bytes
    #: The decoded message; ``None`` when the line is not JSON (``problem`` says why).
    message: Any = None
    problem: str | None = None


class NoAnswer(Exception):
    """The agent did not answer in time, or its stdout ended first; the message says what was awaited."""


@dataclass
class ScriptedClient:
    """The check's answers to the agent's requests, for the capabilities it advertised."""

    capabilities: Mapping[str, Any]
    root: Path
    #: Hold permission requests (the check then cancels the turn under them) instead of granting them.
    hold_permissions: bool = False
    held: list[JsonObject] = field(default_factory=list)
    #: Sessions whose turn was cancelled (``session/cancel`` or ``session/close`` sent, no prompt
    #: since): a permission asked there is answered ``cancelled``, as a client answers the questions
    #: of a turn it cancelled. Kept by :meth:`sending`.
    cancelled: set[str] = field(default_factory=set)
    _terminals: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def advertises(self, method: str) -> bool:
        """Whether the client advertised what the agent needs to send ``method``."""
        fs = self.capabilities.get("fs") or {}
        if method == "fs/read_text_file":
            return fs.get("readTextFile") is True
        if method == "fs/write_text_file":
            return fs.get("writeTextFile") is True
        if method.startswith("terminal/"):
            return self.capabilities.get("terminal") is True
        if method == "elicitation/create":
            return bool(self.capabilities.get("elicitation"))
        return True

    def sending(self, message: Any) -> None:
        """Follow a message the check sends: a cancel or close ends its session's turn, a prompt opens one."""
        method = message.get("method") if isinstance(message, dict) else None
        params = message.get("params") if isinstance(message, dict) else None
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if not isinstance(session_id, str):
            return
        if method in ("session/cancel", "session/close"):
            self.cancelled.add(session_id)
        elif method == "session/prompt":
            self.cancelled.discard(session_id)

    def answer(self, request: JsonObject) -> JsonObject | None:
        """The response to the agent's ``request``; ``None`` when it is held."""
        method, params = request.get("method"), request.get("params") or {}
        if not isinstance(method, str) or not self.advertises(method):
            return _error(request, -32601, f"Method not found: {method}")
        if method == "session/request_permission":
            if self.hold_permissions:
                self.held.append(request)
                return None
            if params.get("sessionId") in self.cancelled:
                return _result(request, {"outcome": {"outcome": "cancelled"}})
            options = params.get("options") or [{}]
            allowing = [o for o in options if str(o.get("kind", "")).startswith("allow")] or options
            return _result(
                request, {"outcome": {"outcome": "selected", "optionId": allowing[0].get("optionId")}}
            )
        if method == "fs/read_text_file":
            path = Path(str(params.get("path")))
            if not path.is_relative_to(self.root) or not path.is_file():
                return _error(request, -32002, f"Resource not found: {path}")
            return _result(request, {"content": path.read_text(errors="replace")})
        if method == "fs/write_text_file":
            path = Path(str(params.get("path")))
            if not path.is_relative_to(self.root):
                return _error(request, -32602, f"Invalid params: {path} is outside {self.root}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(str(params.get("content", "")))
            return _result(request, {})
        if method == "elicitation/create":
            return _result(request, {"action": "decline"})
        if method == "terminal/create":
            return _result(request, {"terminalId": f"term-{next(self._terminals)}"})
        if method == "terminal/output":
            return _result(request, {"output": "", "truncated": False, "exitStatus": {"exitCode": 0}})
        if method == "terminal/wait_for_exit":
            return _result(request, {"exitCode": 0})
        if method.startswith("terminal/"):
            return _result(request, {})
        return _error(request, -32601, f"Method not found: {method}")


def _result(request: JsonObject, result: Any) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request.get("id"), "result": result}


def _error(request: JsonObject, code: int, message: str) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request.get("id"), "error": {"code": code, "message": message}}


class AgentUnderTest:
    """An agent command on stdio, driven by a :class:`ScriptedClient`; every line kept in :attr:`frames`."""

    def __init__(
        self, process: asyncio.subprocess.Process, client: ScriptedClient, timeout: float, stderr: Path
    ) -> None:
        self.process = process
        #: Where the agent's stderr goes (its last line is shown when its stdout ends).
        self.stderr = stderr
        self.client = client
        #: Seconds any one answer may take.
        self.timeout = timeout
        self.frames: list[Frame] = []
        self.exit_code: int | None = None
        self._ids = itertools.count(1)
        self._ended = False
        self._closing = False
        self._responses: dict[Any, JsonObject] = {}

    @classmethod
    async def start(
        cls,
        argv: tuple[str, ...],
        client: ScriptedClient,
        *,
        stderr: Path,
        answer_within: float,
        cwd: Path | None = None,
        env: Mapping[str, str] | None = None,
    ) -> AgentUnderTest:
        """Start ``argv``, its stdin and stdout piped, its stderr to ``stderr``.

        It runs in ``cwd`` (default: this process's directory) with ``env`` (default: this
        process's environment). Raises :class:`OSError` when the command cannot be started.
        """
        with stderr.open("ab") as errors:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=errors,
                cwd=cwd,
                env=dict(os.environ if env is None else env),
                limit=1 << 24,
            )
        return cls(process, client, answer_within, stderr)

    def send(self, message: Any) -> None:
        """Write one message (a line of compact JSON); a dead agent's pipe is ignored."""
        raw = orjson.dumps(message)
        self.client.sending(message)
        self.frames.append(Frame("out", raw, message))
        assert self.process.stdin is not None
        if not self.process.stdin.is_closing():
            self.process.stdin.write(raw + b"\n")

    def request(self, method: str, params: Any, request_id: int | str | None = None) -> int | str:
        """Send a request; returns its id (1, 2... unless given)."""
        rid = next(self._ids) if request_id is None else request_id
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def call(
        self, method: str, params: Any, request_id: int | str | None = None, *, within: float | None = None
    ) -> JsonObject:
        """Send a request and return its response (answering the agent's requests meanwhile)."""
        return await self.response_to(self.request(method, params, request_id), method, within=within)

    async def response_to(
        self, request_id: int | str, method: str, *, within: float | None = None
    ) -> JsonObject:
        """Read until the response to ``request_id`` arrives; :class:`NoAnswer` after ``within`` seconds."""
        seconds = self.timeout if within is None else within
        deadline = asyncio.get_running_loop().time() + seconds
        while request_id not in self._responses:
            await self._read(f"the answer to {method}", deadline, seconds)
        return self._responses[request_id]

    async def until(self, seconds: float, *, stop: Callable[[Frame], bool] | None = None) -> None:
        """Read for ``seconds``, or until a frame satisfies ``stop(frame)``, or to the end of stdout."""
        deadline = asyncio.get_running_loop().time() + seconds
        with contextlib.suppress(NoAnswer):
            while True:
                frame = await self._read("nothing", deadline)
                if stop is not None and stop(frame):
                    return

    @property
    def ended(self) -> bool:
        """Whether the agent's stdout ended (it exited or closed it)."""
        return self._ended

    def index(self, message: Any) -> int:
        """The position in :attr:`frames` of the frame carrying ``message``."""
        return next(i for i, f in enumerate(self.frames) if f.message is message)

    async def _read(self, waiting_for: str, deadline: float, seconds: float = 0.0) -> Frame:
        assert self.process.stdout is not None
        if self._ended:
            raise NoAnswer(f"the agent's stdout ended while waiting for {waiting_for}")
        try:
            async with asyncio.timeout_at(deadline):
                line = await self.process.stdout.readline()
        except TimeoutError:
            raise NoAnswer(
                f"nothing within {seconds or self.timeout:g} s while waiting for {waiting_for}"
            ) from None
        if not line:
            self._ended = True
            raise NoAnswer(f"the agent's stdout ended while waiting for {waiting_for}{self._last_words()}")
        frame = _decode(line.removesuffix(b"\n"))
        self.frames.append(frame)
        message = frame.message
        if isinstance(message, dict) and "method" not in message:
            self._responses.setdefault(message.get("id"), message)
        elif isinstance(message, dict) and "id" in message and not self._closing:
            answer = self.client.answer(message)
            if answer is not None:
                self.send(answer)
        return frame

    def _last_words(self) -> str:
        """The last line the agent wrote on stderr, as the end of a sentence (empty when none)."""
        try:
            lines = self.stderr.read_text(errors="replace").strip().splitlines()
        except OSError:
            return ""
        return f"; its stderr ends: {lines[-1][:300]}" if lines else ""

    async def finish(self, exit_within: float) -> None:
        """Close the agent's stdin, read what it still writes, and wait for it to exit (else kill it)."""
        assert self.process.stdin is not None
        self._closing = True
        self.process.stdin.close()
        deadline = asyncio.get_running_loop().time() + exit_within
        with contextlib.suppress(NoAnswer, BrokenPipeError, ConnectionResetError):
            while True:
                await self._read("the end of stdout", deadline)
        try:
            async with asyncio.timeout_at(deadline + 0.5):
                self.exit_code = await self.process.wait()
        except TimeoutError:
            await self.kill()

    async def kill(self) -> None:
        """Stop the agent at once."""
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()


def _decode(line: bytes) -> Frame:
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Frame("in", line, problem=f"not UTF-8: {exc}")
    try:
        message = orjson.loads(text)
    except orjson.JSONDecodeError:
        return Frame("in", line, problem="not JSON")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return Frame("in", line, message, problem="not one JSON-RPC 2.0 message")
    return Frame("in", line, message)
