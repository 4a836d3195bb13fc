"""A client on an agent command's stdio that records every line both ways, as the ACP test kit drives one.

:class:`AgentProcess` starts the command, writes requests and notifications, reads every line the
agent writes (keeping it in :attr:`AgentProcess.frames`, in order, even a line that is not JSON) and
answers the agent's own requests the way a client with the given capabilities would
(:class:`MockClient`): files under the work directory, a terminal that runs nothing, permission
granted (or cancelled once the turn was cancelled), ``-32601`` for whatever it did not advertise.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

#: Seconds any one answer may take (a busy 2-core machine starts a Python agent in seconds).
ANSWER_TIMEOUT = 30.0
#: Seconds an agent has to exit after its stdin closed.
EXIT_TIMEOUT = 15.0


@dataclass
class Frame:
    """One line on the wire: ``"out"`` (the client wrote it) or ``"in"`` (the agent did)."""

    direction: str
    raw: bytes
    #: The decoded message; ``None`` when the line is not UTF-8 JSON (``problem`` says why).
    message: Any = None
    problem: str | None = None


class NoAnswer(AssertionError):
    """The agent did not answer a request in time, or its stdout ended first."""


@dataclass
class MockClient:
    """The client's answers to the agent's requests, for the capabilities it advertised."""

    capabilities: Mapping[str, Any]
    root: Path
    #: Sessions whose turn the client cancelled: a permission request there is answered ``cancelled``.
    cancelled: set[str] = field(default_factory=set)
    _terminals: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def advertises(self, method: str) -> bool:
        """Whether the client advertised ``method`` (one the agent may send only if it did)."""
        fs = self.capabilities.get("fs") or {}
        if method == "fs/read_text_file":
            return fs.get("readTextFile") is True
        if method == "fs/write_text_file":
            return fs.get("writeTextFile") is True
        if method.startswith("terminal/"):
            return self.capabilities.get("terminal") is True
        if method == "elicitation/create":
            elicitation = self.capabilities.get("elicitation") or {}
            return elicitation.get("form") is not None or elicitation.get("url") is not None
        return method == "session/request_permission"

    def answer(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The response to the agent's ``request``."""
        method, params = request["method"], request.get("params") or {}
        if not self.advertises(method):
            return _error(request, -32601, f"Method not found: {method}")
        if method == "session/request_permission":
            return _result(request, {"outcome": self._permission(params)})
        if method == "fs/read_text_file":
            path = Path(params["path"])
            if not path.is_relative_to(self.root) or not path.is_file():
                return _error(request, -32002, f"Resource not found: {path}")
            return _result(request, {"content": path.read_text()})
        if method == "fs/write_text_file":
            path = Path(params["path"])
            if not path.is_relative_to(self.root):
                return _error(request, -32602, f"Invalid params: {path} is outside {self.root}")
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(params["content"])
            return _result(request, {})
        if method == "elicitation/create":
            return _result(request, {"action": "decline"})
        return _result(request, self._terminal(method))

    def _permission(self, params: Mapping[str, Any]) -> dict[str, Any]:
        if params.get("sessionId") in self.cancelled:
            return {"outcome": "cancelled"}
        options = params.get("options") or []
        allowing = [o for o in options if str(o.get("kind", "")).startswith("allow")] or options
        return {"outcome": "selected", "optionId": allowing[0]["optionId"]}

    def _terminal(self, method: str) -> dict[str, Any]:
        if method == "terminal/create":
            return {"terminalId": f"term-{next(self._terminals)}"}
        if method == "terminal/output":
            return {"output": "", "truncated": False, "exitStatus": {"exitCode": 0}}
        if method == "terminal/wait_for_exit":
            return {"exitCode": 0}
        return {}  # terminal/kill, terminal/release


def _result(request: Mapping[str, Any], result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request["id"], "result": result}


def _error(request: Mapping[str, Any], code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": message}}


class AgentProcess:
    """An agent command on stdio, driven by a :class:`MockClient`; every line kept in :attr:`frames`."""

    def __init__(self, process: asyncio.subprocess.Process, client: MockClient) -> None:
        self.process = process
        self.client = client
        self.frames: list[Frame] = []
        self.exit_code: int | None = None
        self._ids = itertools.count(1)
        self._ended = False
        self._closing = False
        self._responses: dict[Any, dict[str, Any]] = {}

    @classmethod
    async def start(
        cls, argv: list[str], client: MockClient, *, cwd: Path, env: Mapping[str, str]
    ) -> AgentProcess:
        """Start ``argv`` with its stdin and stdout piped to the client (its stderr to a file)."""
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=(cwd / "agent-stderr.log").open("wb"),
            cwd=cwd,
            env=dict(env),
            limit=1 << 24,
        )
        return cls(process, client)

    def send(self, message: Mapping[str, Any]) -> None:
        """Write one message (a line of compact JSON)."""
        raw = orjson.dumps(message)
        self.frames.append(Frame("out", raw, message))
        assert self.process.stdin is not None
        self.process.stdin.write(raw + b"\n")

    def request(self, method: str, params: Any, request_id: int | str | None = None) -> int | str:
        """Send a request; returns its id (1, 2... unless given)."""
        rid = next(self._ids) if request_id is None else request_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return rid

    def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def call(self, method: str, params: Any, request_id: int | str | None = None) -> dict[str, Any]:
        """Send a request and return its response (answering the agent's requests meanwhile)."""
        return await self.response_to(self.request(method, params, request_id), method)

    async def response_to(
        self, request_id: int | str, method: str, within: float = ANSWER_TIMEOUT
    ) -> dict[str, Any]:
        """Read until the response to ``request_id`` arrives (in ``within`` seconds); it is returned."""
        deadline = asyncio.get_running_loop().time() + within
        while request_id not in self._responses:
            await self._read(f"the answer to {method}", deadline)
        return self._responses[request_id]

    async def _read(self, waiting_for: str, deadline: float) -> Frame:
        assert self.process.stdout is not None
        if self._ended:
            raise NoAnswer(f"the agent's stdout ended while waiting for {waiting_for}")
        try:
            async with asyncio.timeout_at(deadline):
                line = await self.process.stdout.readline()
        except TimeoutError:
            raise NoAnswer(f"timed out waiting for {waiting_for}") from None
        if not line:
            self._ended = True
            raise NoAnswer(f"the agent's stdout ended while waiting for {waiting_for}")
        frame = _decode(line.removesuffix(b"\n"))
        self.frames.append(frame)
        message = frame.message
        if isinstance(message, dict) and "method" not in message:
            self._responses.setdefault(message.get("id"), message)
        elif isinstance(message, dict) and "id" in message and not self._closing:
            self.send(self.client.answer(message))
        return frame

    async def finish(self) -> None:
        """Close the agent's stdin, read what it still writes, and wait for it to exit (else kill it)."""
        assert self.process.stdin is not None
        self._closing = True
        self.process.stdin.close()
        deadline = asyncio.get_running_loop().time() + EXIT_TIMEOUT
        with contextlib.suppress(NoAnswer, BrokenPipeError, ConnectionResetError):
            while True:
                await self._read("the end of stdout", deadline)
        try:
            self.exit_code = await asyncio.wait_for(self.process.wait(), EXIT_TIMEOUT)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()

    async def kill(self) -> None:
        """Stop the agent at once (after a failure)."""
        if self.process.returncode is None:
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
