"""A v2 client on an agent command's stdio that records every line, for the v2 requirement checks.

:class:`AgentProcess` starts the command, sends requests and notifications, keeps every line the
agent writes (decoded, or why not) and answers the agent's own requests as a v2 client: permission
granted, or ``cancelled`` once the client cancelled that session's turn; anything else ``-32601``.
:meth:`AgentProcess.turn` prompts and reads until the turn's idle ``state_update``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

#: Seconds any one answer may take (a busy 2-core machine starts a Python agent in seconds).
ANSWER_TIMEOUT = 30.0


@dataclass
class Line:
    """One line the agent wrote: the message, or ``problem`` when it is not one JSON-RPC message."""

    raw: bytes
    message: Any = None
    problem: str | None = None


@dataclass
class Turn:
    """A prompt's answer and the messages until its idle ``state_update``."""

    answer: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def updates(self) -> list[dict[str, Any]]:
        """The turn's ``session/update`` payloads, in order."""
        return [m["params"]["update"] for m in self.messages if m.get("method") == "session/update"]

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The updates of one ``sessionUpdate`` kind."""
        return [u for u in self.updates if u.get("sessionUpdate") == kind]

    def requests(self, method: str) -> list[dict[str, Any]]:
        """The agent's requests of ``method`` during the turn."""
        return [m for m in self.messages if m.get("method") == method and "id" in m]


@dataclass
class AgentCommand:
    """An agent under test: its command line and a prompt for each feature it offers (``None``: none)."""

    name: str
    argv: tuple[str, ...]
    #: A prompt that answers with some text and ends the turn.
    simple: str = "hello there"
    #: A prompt whose turn lasts until cancelled (a ``session/cancel`` test).
    busy: str | None = None
    #: A prompt that asks permission once (and waits for the answer).
    permission: str | None = None
    #: A prompt with a tool call that advertises ``capabilities.cancel`` and runs until cancelled.
    cancellable_tool: str | None = None
    #: A prompt that runs a long command in an agent terminal (``terminal/cancel`` ends it).
    terminal: str | None = None
    #: A prompt that edits a file (a diff), and the file's name.
    edit: str | None = None
    #: A prompt that replaces the content of its agent message (an ``agent_message`` upsert).
    upsert: str | None = None
    #: A prompt that sends a plan.
    plan: str | None = None
    #: A prompt that leaves work to speak after the turn, and how long to listen for it.
    background: str | None = None
    #: Extra command-line arguments for an agent that offers auth (``None``: it does not).
    auth_argv: tuple[str, ...] | None = None
    #: Requirements the agent is known to miss (id -> the reason): strict expected failures.
    known_failures: dict[str, str] = field(default_factory=dict)


class NoAnswer(AssertionError):
    """The agent did not answer in time, or its stdout ended first."""


class AgentProcess:
    """The agent's process and what it wrote (see the module docstring)."""

    def __init__(self, process: asyncio.subprocess.Process, cwd: Path) -> None:
        self.process = process
        self.cwd = cwd
        self.lines: list[Line] = []
        self._unread: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._ids = itertools.count(1)
        self._reader = asyncio.ensure_future(self._read())
        #: Sessions whose turn the client cancelled: their permission requests are answered cancelled.
        self.cancelled: set[str] = set()
        #: The capabilities the agent answered ``initialize`` with.
        self.capabilities: dict[str, Any] = {}
        #: Called with each agent request before the default answer; returning ``True`` claims it.
        self.on_request: Callable[[dict[str, Any]], bool] | None = None

    @classmethod
    async def start(cls, argv: Sequence[str], cwd: Path) -> AgentProcess:
        """Start ``argv`` in ``cwd``."""
        process = await asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            limit=16 * 1024 * 1024,
        )
        return cls(process, cwd)

    async def _read(self) -> None:
        assert self.process.stdout is not None
        while line := await self.process.stdout.readline():
            record = Line(line)
            self.lines.append(record)
            try:
                record.message = orjson.loads(line)
            except orjson.JSONDecodeError as error:
                record.problem = f"not JSON: {error}"
                continue
            message = record.message
            if isinstance(message, list):  # a batch answer: v2 has none (ACP2-JSONRPC-004 judges it)
                record.problem = "a JSON array: v2 has no batches"
                await self._unread.put({"batch": message})
                continue
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                record.problem = "not a JSON-RPC 2.0 message object"
                continue
            if "method" in message and "id" in message:
                self._answer(message)
            await self._unread.put(message)
        await self._unread.put(None)

    def _answer(self, request: dict[str, Any]) -> None:
        if self.on_request is not None and self.on_request(request):
            return
        if request["method"] == "session/request_permission":
            session = (request.get("params") or {}).get("sessionId")
            outcome = (
                {"outcome": "cancelled"}
                if session in self.cancelled
                else {"outcome": "selected", "optionId": _allow(request)}
            )
            self.send({"jsonrpc": "2.0", "id": request["id"], "result": {"outcome": outcome}})
            return
        error = {"code": -32601, "message": f"Method not found: {request['method']}"}
        self.send({"jsonrpc": "2.0", "id": request["id"], "error": error})

    def send(self, message: Any) -> None:
        """Write one line: bytes as they are, anything else as JSON."""
        assert self.process.stdin is not None
        self.process.stdin.write((message if isinstance(message, bytes) else orjson.dumps(message)) + b"\n")

    def request(self, method: str, params: Any, request_id: Any = None) -> Any:
        """Send a request; its id."""
        request_id = next(self._ids) if request_id is None else request_id
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id

    def notify(self, method: str, params: Any) -> None:
        """Send a notification."""
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def next(self, within: float = ANSWER_TIMEOUT) -> dict[str, Any]:
        """The next message the agent wrote (``within`` seconds, else :class:`NoAnswer`)."""
        try:
            message = await asyncio.wait_for(self._unread.get(), within)
        except TimeoutError:
            raise NoAnswer(f"nothing from the agent in {within:g} s") from None
        if message is None:
            raise NoAnswer("the agent closed its stdout")
        return message

    async def call(
        self, method: str, params: Any, request_id: Any = None
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Send a request; its response and the messages that came before it."""
        request_id = self.request(method, params, request_id)
        before: list[dict[str, Any]] = []
        while True:
            message = await self.next()
            if "method" not in message and message.get("id") == request_id:
                return message, before
            before.append(message)

    async def quiet(self, seconds: float) -> list[dict[str, Any]]:
        """What the agent sends in the next ``seconds`` (nothing expected to be answered)."""
        found: list[dict[str, Any]] = []
        with contextlib.suppress(NoAnswer):
            while True:
                found.append(await self.next(seconds))
        return found

    async def turn(
        self, session_id: str, text: str, on_message: Callable[[dict[str, Any]], None] | None = None
    ) -> Turn:
        """Prompt ``text``; the answer and every message until the idle ``state_update`` (or an error)."""
        request_id = self.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )
        turn = Turn(answer={})
        idle = False
        while True:
            message = await self.next()
            if "method" not in message and message.get("id") == request_id:
                turn.answer = message
                if "error" in message or idle:
                    return turn
                continue
            turn.messages.append(message)
            if on_message is not None:
                on_message(message)
            update = ((message.get("params") or {}).get("update") or {}) if "method" in message else {}
            if update.get("sessionUpdate") == "state_update" and update.get("state") == "idle":
                idle = True
                if turn.answer:
                    return turn

    async def stop(self) -> None:
        """Close the agent's stdin and wait for it (killed if it does not exit)."""
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.process.stdin.close()
        try:
            await asyncio.wait_for(self.process.wait(), 15)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        await self._reader


def _allow(request: dict[str, Any]) -> str:
    options = (request.get("params") or {}).get("options") or []
    for option in options:
        if option.get("kind") in ("allow_once", "allow_always"):
            return str(option["optionId"])
    return str(options[0]["optionId"]) if options else "allow"
