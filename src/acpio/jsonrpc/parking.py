"""Where messages wait for a handler that does not exist yet, within bounds (sans-I/O).

A handler that returns ``Unhandled(message, retry=True)`` parks the message: it is offered again,
in order, to each dynamic handler added later (a client's session handler, added once the agent
has answered ``session/new``). A peer can name sessions that never come, so the lot is bounded:

* at most :attr:`ParkingLimits.per_key` messages per ``sessionId`` and :attr:`ParkingLimits.total`
  in all; a message beyond either is not parked;
* a notification parked longer than :attr:`ParkingLimits.max_age` seconds is dropped;
* a request is answered once it has waited :attr:`ParkingLimits.request_wait` seconds (the peer is
  waiting for that answer; the connection schedules it).

The connection logs what it drops (once per session) and answers what it refuses.
"""

from __future__ import annotations

from collections import Counter, deque
from dataclasses import dataclass

from acpio.jsonrpc.handlers import Dispatch, RequestDispatch

__all__ = ["ParkingLimits", "ParkingLot"]


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


class ParkingLot:
    """The parked messages of one connection, oldest first, with their parking times."""

    __slots__ = ("_counts", "_items", "limits")

    def __init__(self, limits: ParkingLimits) -> None:
        self.limits = limits
        self._items: deque[tuple[Dispatch, float]] = deque()
        self._counts: Counter[str | None] = Counter()

    def __len__(self) -> int:
        return len(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def has_room(self, message: Dispatch) -> bool:
        """Whether ``message`` may be parked now."""
        return len(self._items) < self.limits.total and self._counts[message.session_id] < self.limits.per_key

    def park(self, message: Dispatch, now: float) -> None:
        """Park ``message`` (check :meth:`has_room` first)."""
        self._items.append((message, now))
        self._counts[message.session_id] += 1

    def take_all(self) -> list[tuple[Dispatch, float]]:
        """Remove and return every parked message, oldest first."""
        items = list(self._items)
        self._items.clear()
        self._counts.clear()
        return items

    def put_back(self, items: list[tuple[Dispatch, float]]) -> None:
        """Park ``items`` again before the messages parked meanwhile (they are older)."""
        self._items.extendleft(reversed(items))
        for message, _ in items:
            self._counts[message.session_id] += 1

    def remove(self, message: Dispatch) -> bool:
        """Take ``message`` out of the lot; whether it was there."""
        for index, (parked, _) in enumerate(self._items):
            if parked is message:
                del self._items[index]
                self._counts[message.session_id] -= 1
                return True
        return False

    def expire_notifications(self, now: float) -> list[Dispatch]:
        """Remove and return the notifications parked for longer than ``max_age``."""
        deadline = now - self.limits.max_age
        expired: list[Dispatch] = []
        kept: list[tuple[Dispatch, float]] = []
        while self._items and self._items[0][1] < deadline:
            message, at = self._items.popleft()
            self._counts[message.session_id] -= 1
            if type(message) is RequestDispatch:
                kept.append((message, at))  # requests leave on their own timer
            else:
                expired.append(message)
        self.put_back(kept)
        return expired
