"""A cassette replayed as the agent: a deterministic fake agent for testing clients.

:class:`ReplayAgent` is a component (``Client.builder().connect_with(ReplayAgent(cassette), main)``),
``acpio replay CASSETTE`` the same agent as a command, on stdin and stdout. It waits for each
message the client sent in the recording and answers with what the agent sent after it:

* the client's request ids are its own: each recorded answer goes out with the id of the live
  request it answers, and the client answers the agent's requests by their recorded ids;
* ``<cwd>`` in the recorded messages becomes the directory the client gives ``session/new`` (or
  ``load``, ``resume``), ``<home>`` this process's home directory;
* the client's consecutive messages may come in another order than recorded; a message the
  recording does not have next is a *departure*: a request is answered ``-32603`` saying what the
  cassette expected, a notification is dropped, and both are noted (:attr:`ReplayAgent.departures`,
  and on stderr for ``acpio replay``).

:class:`Faults` injects the failures a client must survive: a slow agent, a line that is not JSON,
a message cut in the middle of its line, an agent that dies.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from acpio.testing.matching import kind_of
from acpio.trace.cassette import Cassette, Entry
from acpio.trace.redact import restore_paths
from acpio.transports.base import OversizedFrame, Transport
from acpio.transports.lines import LineSplitter
from acpio.transports.streams import Lines

__all__ = ["AgentCrashed", "Faults", "ReplayAgent", "replay_as_agent"]

_log = logging.getLogger("acpio.testing")


@dataclass(frozen=True)
class Faults:
    """Failures a replayed agent injects; messages are counted from 1, the agent's only.

    ``delay``: seconds before each message (a slow agent); ``garbage_at``: a line that is not JSON
    before message N; ``cut_at``: message N cut in the middle of its line, then the agent's output
    ends; ``crash_at``: the agent dies before message N (``acpio replay`` exits with code 1).
    """

    delay: float = 0.0
    garbage_at: int | None = None
    cut_at: int | None = None
    crash_at: int | None = None


class AgentCrashed(Exception):
    """The replay stopped as :attr:`Faults.crash_at` or :attr:`Faults.cut_at` asked."""


GARBAGE = b"this line is not JSON-RPC: a replayed agent's injected fault"


async def replay_as_agent(
    cassette: Cassette,
    read: Callable[[], Awaitable[bytes]],
    write: Callable[[bytes], Awaitable[object]],
    *,
    faults: Faults | None = None,
    departures: list[str] | None = None,
) -> None:
    """Play the agent of ``cassette`` over bytes: ``read()`` a chunk (``b""`` at the end), ``write(data)``.

    Returns when the client's input ends; raises :class:`AgentCrashed` when a fault ended the agent.
    ``departures`` collects a note for each message of the client the cassette did not expect.
    """
    replay = _AgentReplay(cassette, write, faults or Faults(), departures if departures is not None else [])
    splitter = LineSplitter()
    await replay.emit_agent_turn()
    while True:
        chunk = await read()
        if not chunk:
            return
        for frame in splitter.feed(chunk):
            if not isinstance(frame, OversizedFrame):
                await replay.on_client_frame(frame)


class _AgentReplay:
    def __init__(
        self,
        cassette: Cassette,
        write: Callable[[bytes], Awaitable[object]],
        faults: Faults,
        notes: list[str],
    ) -> None:
        self.entries = cassette.entries
        self.write = write
        self.faults = faults
        self.notes = notes
        self.position = 0
        self.consumed: set[int] = set()
        #: Recorded client request id -> the live id (as JSON text).
        self.ids: dict[str, Any] = {}
        self.paths = {"<home>": str(Path.home())}
        self.sent = 0
        #: The method of each request by (sender, id), to pair answers.
        self.methods: dict[tuple[str, str], str] = {}

    async def on_client_frame(self, frame: bytes) -> None:
        try:
            message = orjson.loads(frame)
        except orjson.JSONDecodeError:
            self.note(f"the client sent a line that is not JSON: {frame[:80]!r}")
            return
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict):
                await self.on_client_message(item)

    async def on_client_message(self, message: dict[str, Any]) -> None:
        kind = kind_of("client", message, self.methods.get(("agent", _id(message.get("id")))))
        index = self.expected(kind)
        if index is None:
            await self.departure(message)
            return
        self.consumed.add(index)
        recorded = self.entries[index].message
        if "id" in recorded and "method" in recorded:
            self.ids[_id(recorded["id"])] = message["id"]
        self.learn_cwd(message)
        while self.position < len(self.entries) and self.position in self.consumed:
            self.position += 1
        await self.emit_agent_turn()

    def expected(self, kind: tuple[str, ...]) -> int | None:
        """The first unconsumed client entry of ``kind`` among the client's next messages."""
        index = self.position
        while index < len(self.entries) and self.entries[index].sender == "client":
            entry = self.entries[index]
            answered = self.methods.get(("agent", _id(entry.message.get("id"))))
            if index not in self.consumed and kind_of("client", entry.message, answered) == kind:
                return index
            index += 1
        return None

    async def emit_agent_turn(self) -> None:
        """Send the agent's recorded messages up to the client's next one."""
        while self.position < len(self.entries) and self.entries[self.position].sender == "agent":
            await self.emit(self.entries[self.position])
            self.position += 1
        self.note_client_requests()

    def note_client_requests(self) -> None:
        index = self.position
        while index < len(self.entries) and self.entries[index].sender == "client":
            self.remember(self.entries[index])
            index += 1

    def remember(self, entry: Entry) -> None:
        if entry.is_request and entry.method is not None:
            self.methods[(entry.sender, _id(entry.message["id"]))] = entry.method

    async def emit(self, entry: Entry) -> None:
        self.remember(entry)
        message = restore_paths(entry.message, self.paths)
        if entry.is_response:
            message = {**message, "id": self.ids.get(_id(message["id"]), message["id"])}
        self.sent += 1
        faults = self.faults
        if faults.delay:
            await asyncio.sleep(faults.delay)
        if faults.crash_at == self.sent:
            raise AgentCrashed(f"the replayed agent crashed before its message {self.sent}, as asked")
        if faults.garbage_at == self.sent:
            await self.write(GARBAGE + b"\n")
        data = orjson.dumps(message)
        if faults.cut_at == self.sent:
            await self.write(data[: len(data) // 2])
            raise AgentCrashed(f"the replayed agent's message {self.sent} was cut mid-line, as asked")
        await self.write(data + b"\n")

    def learn_cwd(self, message: dict[str, Any]) -> None:
        params = message.get("params")
        if isinstance(params, dict) and isinstance(params.get("cwd"), str):
            self.paths["<cwd>"] = params["cwd"]

    async def departure(self, message: dict[str, Any]) -> None:
        index = self.position
        wanted = "nothing more (the cassette ends here)"
        while index < len(self.entries):
            entry = self.entries[index]
            if entry.sender == "client" and index not in self.consumed:
                wanted = entry.method or "an answer to the agent's request"
                break
            index += 1
        got = message.get("method") or "an answer"
        note = f"the client sent {got} where the cassette has {wanted}"
        self.note(note)
        if "id" in message and "method" in message:
            error = {"code": -32603, "message": f"acpio replay: {note}", "data": {"expected": wanted}}
            await self.write(orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}) + b"\n")

    def note(self, text: str) -> None:
        self.notes.append(text)
        _log.warning("acpio replay: %s", text)


def _id(value: Any) -> str:
    return orjson.dumps(value).decode()


class ReplayAgent:
    """The agent of a cassette, in this process: a component to connect a client to (module docstring).

    ``cassette`` is a :class:`~acpio.trace.cassette.Cassette` or the path of one. Each :meth:`open`
    starts a fresh replay; :attr:`departures` lists what the client did that the cassette did not.
    """

    def __init__(self, cassette: Cassette | str | Path, *, faults: Faults | None = None) -> None:
        self.cassette = cassette if isinstance(cassette, Cassette) else Cassette.load(cassette)
        self.faults = faults or Faults()
        self.departures: list[str] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"ReplayAgent({self.cassette.path or len(self.cassette)!r})"

    async def open(self) -> Transport:
        """Start a replay; the transport a client talks to it through."""
        to_agent: asyncio.Queue[bytes] = asyncio.Queue()
        to_client: asyncio.Queue[bytes] = asyncio.Queue()

        async def write(data: bytes) -> None:
            to_client.put_nowait(data)

        async def run() -> None:
            try:
                await replay_as_agent(
                    self.cassette, to_agent.get, write, faults=self.faults, departures=self.departures
                )
            except AgentCrashed as exc:
                _log.info("%s", exc)
            finally:
                to_client.put_nowait(b"")

        async def send(data: bytes) -> None:
            to_agent.put_nowait(data)

        async def close() -> None:
            to_agent.put_nowait(b"")

        task = asyncio.create_task(run(), name="acpio replayed agent")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return Lines(to_client.get, send, close=close, label="the replayed agent")
