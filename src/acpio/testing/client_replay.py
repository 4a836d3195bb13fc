"""A cassette replayed as the client: a regression test of an agent against a recorded conversation.

:func:`replay_client` sends the agent what the client sent in the recording, when the recording
sent it (after the agent's messages that came before it), and compares what the agent sends with
what it sent then, tolerantly (:class:`~acpio.testing.matching.Tolerance`): identifiers made up by
either side stand for each other, timestamps match any timestamp, and among the agent's messages
between two of the client's, those of different kinds may come in any order. The
:class:`ReplayReport` lists the departures, and :meth:`ReplayReport.render` shows them in the
conversation, recorded lines ``-``, live ones ``+``::

      client → agent  session/prompt  "hello there"
    - agent ↝ client  session/update  agent_message_chunk "hello "
    + agent ↝ client  session/update  agent_message_chunk "HELLO "
          params.update.content.text: "hello " -> "HELLO "
      agent ⇢ client  session/prompt  stopReason: end_turn
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import orjson

from acpio.testing.client import AgentUnderTest, as_component
from acpio.testing.conversation import conversation_lines
from acpio.testing.matching import Bindings, Tolerance, kind_of
from acpio.trace.cassette import Cassette, Entry
from acpio.trace.redact import restore_paths
from acpio.transports.base import OversizedFrame, Transport

__all__ = ["CassetteMismatch", "Departure", "ReplayReport", "replay_client"]


class CassetteMismatch(AssertionError):
    """The agent departed from the cassette; the message is :meth:`ReplayReport.render`."""


@dataclass(frozen=True)
class Departure:
    """One way the live agent departed from the recording.

    ``kind`` is ``"differs"`` (the message came, changed: :attr:`differences`), ``"missing"`` (it
    never came) or ``"unexpected"`` (the agent sent a message the recording does not have).
    """

    kind: Literal["differs", "missing", "unexpected"]
    recorded: int | None
    """The index of the recorded entry (``None`` for an unexpected message)."""
    live: int | None
    """The index of the live message in :attr:`ReplayReport.live` (``None`` for a missing one)."""
    differences: tuple[str, ...] = ()


@dataclass
class ReplayReport:
    """What :func:`replay_client` saw: the live conversation and its departures from the cassette."""

    cassette: Cassette
    live: list[Entry] = field(default_factory=list)
    """Every message of the live run, both ways, in order."""
    departures: list[Departure] = field(default_factory=list)
    #: Recorded index -> live index of the messages that matched; live index -> recorded index
    #: after which it arrived.
    matched: dict[int, int] = field(default_factory=dict)
    arrived_after: dict[int, int] = field(default_factory=dict)
    #: Whether the agent sent anything at all.
    live_from_agent: bool = False
    #: The recorded client answers not sent, because the agent never made the request they answer.
    unsent: set[int] = field(default_factory=set)
    tolerance: Tolerance = field(default_factory=Tolerance)

    @property
    def ok(self) -> bool:
        """Whether the agent did what the cassette recorded."""
        return not self.departures

    def check(self) -> None:
        """Raise :class:`CassetteMismatch` (an ``AssertionError``) showing the departures, if any."""
        if self.departures:
            raise CassetteMismatch(self.render())

    def as_cassette(self) -> Cassette:
        """The live run as a cassette (to refresh the recorded one: ``report.as_cassette().save(path)``)."""
        return Cassette(tuple(self.live), self.cassette.placeholders)

    def render(self) -> str:
        """The conversation with its departures marked (see the module docstring)."""
        entries = self.cassette.entries
        recorded = conversation_lines(entries)
        shown_live = [Entry(e.sender, self.tolerance.to_recorded(e.message)) for e in self.live]
        live = conversation_lines(shown_live)
        by_recorded = {d.recorded: d for d in self.departures if d.recorded is not None}
        extra: dict[int, list[Departure]] = {}
        for d in self.departures:
            if d.kind == "unexpected" and d.live is not None:
                extra.setdefault(self.arrived_after.get(d.live, -1), []).append(d)
        source = str(self.cassette.path) if self.cassette.path else "the cassette"
        out = [f"the agent departed from {source} ({len(self.departures)} departure(s)):"]
        out.extend(self._unexpected(extra.get(-1, []), live))
        for index, line in enumerate(recorded):
            departure = by_recorded.get(index)
            if index in self.unsent:
                out.append(f"      {line}    (not sent: the agent did not ask)")
            elif departure is None:
                out.append(f"      {line}")
            elif departure.kind == "missing":
                out.append(f"    - {line}    (not sent)")
            else:
                out.append(f"    - {line}")
                out.append(f"    + {live[departure.live] if departure.live is not None else ''}")
                out.extend(f"          {difference}" for difference in departure.differences)
            out.extend(self._unexpected(extra.get(index, []), live))
        return "\n".join(out)

    @staticmethod
    def _unexpected(departures: list[Departure], live: list[str]) -> list[str]:
        return [f"    + {live[d.live]}    (not in the cassette)" for d in departures if d.live is not None]


async def replay_client(
    cassette: Cassette | str | Path,
    agent: AgentUnderTest,
    *,
    cwd: str | Path,
    wait_timeout: float = 5.0,
    start_timeout: float = 30.0,
    tolerance: Tolerance | None = None,
) -> ReplayReport:
    """Replay the client of ``cassette`` against ``agent`` (an ``AgentApp``, a component, a command line).

    ``cwd`` replaces ``<cwd>`` in what is sent (the session's directory). Each wait for the agent
    lasts at most ``wait_timeout`` seconds (``start_timeout`` until the agent's first message: a
    process may take a while to start); a message that does not come by then is ``missing``, and
    one that comes after all takes its place again.
    Returns the :class:`ReplayReport`; call its :meth:`~ReplayReport.check` to fail a test.
    """
    from acpio.jsonrpc.builder import open_transport

    loaded = cassette if isinstance(cassette, Cassette) else Cassette.load(cassette)
    fresh = replace(tolerance or Tolerance(), bindings=Bindings())  # each run binds its own identifiers
    run = _ClientReplay(loaded, cwd, (start_timeout, wait_timeout), fresh)
    transport = await open_transport(as_component(agent))
    try:
        await run.play(transport)
    finally:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(wait_timeout):
                await transport.aclose()
    return run.report


class _ClientReplay:
    def __init__(
        self, cassette: Cassette, cwd: str | Path, timeouts: tuple[float, float], tolerance: Tolerance
    ) -> None:
        self.entries = cassette.entries
        self.timeouts = timeouts
        self.tolerance = tolerance
        self.paths = {"<cwd>": str(cwd), "<home>": str(Path.home())}
        self.report = ReplayReport(cassette, tolerance=tolerance)
        self.pending: list[int] = []
        self.surplus: list[int] = []
        #: Recorded entries declared missing, still matched if they come after all.
        self.missed: list[int] = []
        #: The methods of requests by (sender, id as JSON), recorded and live.
        self.recorded_methods: dict[tuple[str, str], str] = {}
        self.live_methods: dict[tuple[str, str], str] = {}
        #: Recorded id of an agent request -> its live id.
        self.agent_ids: dict[str, Any] = {}
        self.position = -1
        self.ended = False

    async def play(self, transport: Transport) -> None:
        for index, entry in enumerate(self.entries):
            self.position = index
            if entry.is_request and entry.method is not None:
                self.recorded_methods[(entry.sender, _key(entry.message["id"]))] = entry.method
            if entry.sender == "agent":
                self.pending.append(index)
                self.match_surplus()
                continue
            await self.wait_for_pending(transport)
            self.send(transport, index, entry)
        self.position = len(self.entries)
        await self.wait_for_pending(transport)
        for live in self.surplus:
            self.report.departures.append(Departure("unexpected", None, live))

    def send(self, transport: Transport, index: int, entry: Entry) -> None:
        message = restore_paths(self.tolerance.to_live(entry.message), self.paths)
        if entry.is_response:
            recorded_id = _key(entry.message["id"])
            if recorded_id not in self.agent_ids:
                self.report.unsent.add(index)  # the request it answers is reported missing
                return
            message["id"] = self.agent_ids[recorded_id]
        if "id" in message and "method" in message:
            self.live_methods[("client", _key(message["id"]))] = str(message["method"])
        self.report.live.append(Entry("client", message))
        with contextlib.suppress(Exception):
            transport.send(orjson.dumps(message))

    async def wait_for_pending(self, transport: Transport) -> None:
        while self.pending and not self.ended:
            try:
                async with asyncio.timeout(
                    self.timeouts[1] if self.report.live_from_agent else self.timeouts[0]
                ):
                    frame = await transport.receive()
            except TimeoutError:
                break  # what did not come in time is missing; the agent may go on with the rest
            except Exception:  # the agent's transport failed: nothing more will come
                frame = None
            if frame is None:
                self.ended = True
                break
            if isinstance(frame, OversizedFrame):
                continue
            try:
                value = orjson.loads(frame)
            except orjson.JSONDecodeError:
                continue
            for message in value if isinstance(value, list) else [value]:
                if isinstance(message, dict):
                    self.on_live(message)
        for index in self.pending:
            self.miss(index)
        self.pending.clear()

    def miss(self, index: int) -> None:
        self.report.departures.append(Departure("missing", index, None))
        self.missed.append(index)

    def on_live(self, message: dict[str, Any]) -> None:
        live_index = len(self.report.live)
        self.report.live.append(Entry("agent", message))
        self.report.live_from_agent = True
        self.report.arrived_after[live_index] = self.position - 1  # waiting to send entry `position`
        if "id" in message and "method" in message:
            self.live_methods[("agent", _key(message["id"]))] = str(message["method"])
        self.surplus.append(live_index)
        self.match_surplus()
        if live_index in self.surplus:
            self.match_late(live_index)

    def match_surplus(self) -> None:
        for live_index in list(self.surplus):
            message = self.report.live[live_index].message
            kind = kind_of("agent", message, self.live_methods.get(("client", _key(message.get("id")))))
            for index in self.pending:
                recorded = self.entries[index].message
                answered = self.recorded_methods.get(("client", _key(recorded.get("id"))))
                if kind_of("agent", recorded, answered) != kind:
                    continue
                self.pair(index, live_index)
                if "id" in message and "method" not in message:  # an answer: what came before it is late
                    earlier = [i for i in self.pending if i < index]
                    for late in earlier:
                        self.miss(late)
                        self.pending.remove(late)
                break

    def match_late(self, live_index: int) -> None:
        """A message declared missing that comes after all (a slow agent): matched, out of its place."""
        message = self.report.live[live_index].message
        kind = kind_of("agent", message, self.live_methods.get(("client", _key(message.get("id")))))
        for index in self.missed:
            recorded = self.entries[index].message
            answered = self.recorded_methods.get(("client", _key(recorded.get("id"))))
            if kind_of("agent", recorded, answered) == kind:
                self.missed.remove(index)
                self.report.departures.remove(Departure("missing", index, None))
                self.pending.append(index)
                self.pair(index, live_index)
                return

    def pair(self, index: int, live_index: int) -> None:
        recorded = self.entries[index].message
        message = self.report.live[live_index].message
        self.pending.remove(index)
        self.surplus.remove(live_index)
        self.report.matched[index] = live_index
        if "id" in recorded and "method" in recorded:
            self.agent_ids[_key(recorded["id"])] = message.get("id")
        differences = self.tolerance.differences(restore_paths(recorded, self.paths), message)
        if differences:
            self.report.departures.append(Departure("differs", index, live_index, tuple(differences)))


def _key(value: Any) -> str:
    return orjson.dumps(value).decode()
