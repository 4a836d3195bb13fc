"""Where messages wait for a handler that does not exist yet, within bounds (sans-I/O).

A handler that returns ``Unhandled(message, retry=True)`` parks the message: it is offered again,
in order, to each dynamic handler added later (a client's session handler, added once the agent
has answered ``session/new``). A peer can name sessions that never come, so the lot is bounded:

* at most :attr:`ParkingLimits.per_key` messages per ``sessionId`` and :attr:`ParkingLimits.total`
  in all; a message beyond either is not parked;
* a notification parked longer than :attr:`ParkingLimits.max_age` seconds is dropped;
* a request is answered once it has waited :attr:`ParkingLimits.request_wait` seconds (the peer is
  waiting for that answer; the connection keeps a timer per parked request).

Each parked message has a ticket (a sequence number): removing one by its ticket, as a request's
timer does, costs the same however many messages are parked.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass

from acpio.jsonrpc.dispatch import Dispatch, RequestDispatch

__all__ = ["ParkingLimits", "ParkingLot", "Parked"]


@dataclass(frozen=True, slots=True)
class ParkingLimits:
    """How much a connection parks while it waits for handlers (see the module docstring)."""

    #: Messages parked for one ``sessionId`` (or for messages without one).
    per_key: int = 10_000
    #: Messages parked in all.
    total: int = 50_000
    #: Seconds after which a parked notification is dropped.
    max_age: float = 120.0
    #: Seconds after which a parked request is answered with the role's error.
    request_wait: float = 10.0


@dataclass(slots=True)
class Parked:
    """One parked message: its ticket, when it was parked, and its request's timer (if any)."""

    ticket: int
    message: Dispatch
    parked_at: float
    timer: asyncio.TimerHandle | None = None

    @property
    def is_request(self) -> bool:
        """Whether the message is a request (it is answered when its wait runs out)."""
        return type(self.message) is RequestDispatch


class ParkingLot:
    """The parked messages of one connection, oldest first."""

    __slots__ = ("_counts", "_items", "_next", "limits")

    def __init__(self, limits: ParkingLimits) -> None:
        self.limits = limits
        self._items: dict[int, Parked] = {}  # by ticket, in parking order
        self._counts: Counter[str | None] = Counter()
        self._next = 0

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def has_room(self, message: Dispatch) -> bool:
        """Whether ``message`` may be parked now."""
        return len(self._items) < self.limits.total and self._counts[message.session_id] < self.limits.per_key

    def park(self, message: Dispatch, now: float) -> Parked:
        """Park ``message`` (check :meth:`has_room` first); the caller may set the entry's timer."""
        self._next += 1
        entry = Parked(self._next, message, now)
        self._items[entry.ticket] = entry
        self._counts[message.session_id] += 1
        return entry

    def take_all(self) -> list[Parked]:
        """Remove and return every parked entry, oldest first (timers keep running)."""
        entries = list(self._items.values())
        self._items.clear()
        self._counts.clear()
        return entries

    def put_back(self, entries: list[Parked]) -> None:
        """Park ``entries`` again, ahead of anything parked meanwhile (they are older)."""
        later = list(self._items.values())
        self._items.clear()
        for entry in (*entries, *later):
            self._items[entry.ticket] = entry
        self._counts.clear()
        for entry in self._items.values():
            self._counts[entry.message.session_id] += 1

    def remove(self, ticket: int) -> Parked | None:
        """Take the entry with ``ticket`` out of the lot, if it is there."""
        entry = self._items.pop(ticket, None)
        if entry is not None:
            self._uncount(entry)
        return entry

    def expire_notifications(self, now: float) -> list[Parked]:
        """Remove and return the notifications parked for longer than ``max_age``."""
        deadline = now - self.limits.max_age
        expired = []
        for entry in self._items.values():
            if entry.parked_at >= deadline:
                break  # parking order is time order: the rest are younger
            if not entry.is_request:  # requests leave on their own (shorter) timer
                expired.append(entry)
        for entry in expired:
            del self._items[entry.ticket]
            self._uncount(entry)
        return expired

    def _uncount(self, entry: Parked) -> None:
        key = entry.message.session_id
        left = self._counts[key] - 1
        if left:
            self._counts[key] = left
        else:
            del self._counts[key]
