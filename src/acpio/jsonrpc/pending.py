"""Bookkeeping of requests in flight, both ways. No I/O, no asyncio.

* :class:`OutgoingRequests`: the ids this side allocated for its requests, and what waits for each
  answer. A response is matched by id with its exact JSON type (``1`` and ``"1"`` differ).
* :class:`IncomingRequests`: the requests the peer sent that are still being answered, so a
  ``$/cancel_request`` can find its target. A peer that reuses an id still in flight gets the
  newest request cancelled, and finishing the older one never removes the newer entry.
* :class:`CancelFlag`: the cancelled flag of one incoming request, with callbacks run once when
  it flips.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from acpio.jsonrpc.messages import RequestId

__all__ = ["CancelFlag", "IncomingRequests", "OutgoingRequests"]

_log = logging.getLogger("acpio.jsonrpc")

T = TypeVar("T")


class OutgoingRequests(Generic[T]):
    """The table of this side's requests still waiting for a response, keyed by id.

    Ids are allocated here: consecutive integers from 1, unique for the connection's lifetime.
    """

    __slots__ = ("_last_id", "_table")

    def __init__(self) -> None:
        self._last_id = 0
        self._table: dict[RequestId, T] = {}

    def allocate(self, entry: T) -> int:
        """Give ``entry`` a fresh id and record it as waiting; returns the id."""
        self._last_id += 1
        request_id = self._last_id
        self._table[request_id] = entry
        return request_id

    def pop(self, request_id: RequestId) -> T | None:
        """Remove and return the entry a response with ``request_id`` answers (``None`` if unknown)."""
        if type(request_id) is not int and type(request_id) is not str:
            return None
        return self._table.pop(request_id, None)

    def pop_if(self, request_id: RequestId, wanted: Callable[[T], bool]) -> T | None:
        """:meth:`pop` the entry ``request_id`` answers if ``wanted(entry)``; else leave it (``None``)."""
        if type(request_id) is not int and type(request_id) is not str:
            return None
        entry = self._table.get(request_id)
        if entry is None or not wanted(entry):
            return None
        del self._table[request_id]
        return entry

    def discard(self, request_id: RequestId, entry: T) -> None:
        """Forget ``request_id`` if it still maps to ``entry`` (a request that could not be sent)."""
        if self._table.get(request_id) is entry:
            del self._table[request_id]

    def drain(self) -> list[T]:
        """Remove and return every waiting entry, oldest first (the connection is closing)."""
        entries = list(self._table.values())
        self._table.clear()
        return entries

    def __len__(self) -> int:
        return len(self._table)

    def __iter__(self) -> Iterator[T]:
        return iter(list(self._table.values()))


class IncomingRequests(Generic[T]):
    """The peer's requests still being answered here, keyed by their id."""

    __slots__ = ("_table",)

    def __init__(self) -> None:
        self._table: dict[RequestId, T] = {}

    def add(self, request_id: RequestId, entry: T) -> None:
        """Record ``entry`` as in flight; a reused id now refers to the newest request."""
        self._table[request_id] = entry

    def remove(self, request_id: RequestId, entry: T) -> None:
        """Forget ``entry``, but only if ``request_id`` still refers to it (not to a newer request)."""
        if self._table.get(request_id) is entry:
            del self._table[request_id]

    def get(self, request_id: RequestId) -> T | None:
        """The request in flight with ``request_id``, or ``None``."""
        if type(request_id) is bool:
            return None
        return self._table.get(request_id)

    def __len__(self) -> int:
        return len(self._table)


class CancelFlag:
    """Whether one incoming request was cancelled; callbacks run once, when it is."""

    __slots__ = ("_callbacks", "cancelled")

    def __init__(self) -> None:
        self.cancelled = False
        self._callbacks: list[Callable[[], object]] | None = None

    def set(self) -> bool:
        """Mark cancelled and run the callbacks; returns ``False`` if it already was."""
        if self.cancelled:
            return False
        self.cancelled = True
        callbacks, self._callbacks = self._callbacks, None
        for callback in callbacks or ():
            try:
                callback()
            except Exception:
                _log.exception("A cancellation callback failed")
        return True

    def add_callback(self, callback: Callable[[], object]) -> None:
        """Run ``callback`` when the request is cancelled (at once if it already was)."""
        if self.cancelled:
            callback()
            return
        if self._callbacks is None:
            self._callbacks = []
        self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[], object]) -> None:
        """Stop watching with ``callback`` (no error if it was not registered)."""
        if self._callbacks and callback in self._callbacks:
            self._callbacks.remove(callback)
