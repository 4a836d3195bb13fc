"""The messages a connection's handlers declined with ``retry=True``, while they wait for a handler to come.

The handler chain (:mod:`~acpio.jsonrpc.chain`) parks such a message here and offers the parked
messages again to each dynamic handler added later. Meanwhile :class:`ParkedMessages` holds them
within the role's :class:`~acpio.jsonrpc.parking.ParkingLimits`: a message beyond them is refused (a
request answered with the role's error), a notification parked too long is dropped, and a request
is answered once its wait runs out, by a timer of its own. What is dropped or refused is logged
once per session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from acpio.jsonrpc.dispatch import Dispatch, RequestDispatch
from acpio.jsonrpc.parking import Parked, ParkingLot
from acpio.jsonrpc.role import Role

if TYPE_CHECKING:
    from acpio.jsonrpc.connection import Connection

__all__ = ["ParkedMessages"]

_log = logging.getLogger("acpio.jsonrpc")
#: Sessions whose dropped or refused parked messages are logged, one line each; then one summary.
_PARKING_WARNINGS = 100


class ParkedMessages:
    """One connection's parked messages, their limits and request timers (see the module docstring).

    The chain parks with :meth:`park`, offers them again to a new handler with :meth:`replay`,
    and hands those nobody claimed to the fallback with :meth:`release` once the input ended.
    ``cx`` names the connection in the warnings.
    """

    __slots__ = ("_cx", "_lot", "_released", "_role", "_warned")

    def __init__(self, role: Role, cx: Connection) -> None:
        self._role = role
        self._cx = cx
        self._lot = ParkingLot(role.parking_limits())
        self._warned: set[str | None] = set()
        #: Whether :meth:`release` was called: the input ended, no handler will come.
        self._released = False

    def __len__(self) -> int:
        return len(self._lot)

    def __bool__(self) -> bool:
        return bool(self._lot)

    def park(self, message: Dispatch) -> None:
        """Park ``message`` for a handler added later, within the role's limits (else refuse it)."""
        loop = asyncio.get_running_loop()
        now = loop.time()
        lot = self._lot
        for expired in lot.expire_notifications(now):
            self._warn(expired.message, "no handler claimed it in time; dropped")
        if not lot.has_room(message):
            self._warn(message, "too many messages are waiting for handlers; refused")
            self._refuse(message)
            return
        entry = lot.park(message, now)
        if entry.is_request:
            entry.timer = loop.call_later(lot.limits.request_wait, self._expire_request, entry.ticket)

    async def replay(
        self,
        offer: Callable[[Dispatch], Awaitable[Dispatch | None]],
        after_each: Callable[[], Awaitable[None]] | None,
        unclaimed: Callable[[Dispatch], None],
    ) -> None:
        """Offer every parked message again, oldest first, with ``offer``; ``after_each`` after each.

        ``offer`` returns ``None`` when a handler took the message (or failed on it), else the
        message to park again (as the handlers passed it on). Those stay parked ahead of any
        parked meanwhile; a request whose wait ran out while it was offered is answered now.
        When an exception escapes, the messages not yet taken are parked again. When
        :meth:`release` came meanwhile (the input ended), they go to ``unclaimed`` instead: no
        handler will come for them.
        """
        entries = self._lot.take_all()  # their timers keep running meanwhile
        kept: list[Parked] = []
        done = 0
        try:
            for entry in entries:
                message = await offer(entry.message)
                done += 1
                if message is None:
                    self._stop_timer(entry)
                else:
                    entry.message = message  # same ticket: its timer still finds it
                    kept.append(entry)
                if after_each is not None:
                    await after_each()
        finally:
            kept += entries[done:]
            if self._released:
                for entry in kept:
                    self._stop_timer(entry)
                    unclaimed(entry.message)
            else:
                self._put_back(kept)

    def release(self) -> list[Dispatch]:
        """Take every parked message out for good (no handler will come), oldest first; timers stop.

        A replay under way hands what it would park again to its ``unclaimed`` instead.
        """
        self._released = True
        entries = self._lot.take_all()
        for entry in entries:
            self._stop_timer(entry)
        return [entry.message for entry in entries]

    def _stop_timer(self, entry: Parked) -> None:
        """``entry`` left the lot for good: its request timer has nothing left to do."""
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None

    def _put_back(self, entries: list[Parked]) -> None:
        lot = self._lot
        lot.put_back(entries)
        deadline = asyncio.get_running_loop().time() - lot.limits.request_wait
        for entry in entries:
            if entry.is_request and entry.parked_at <= deadline:
                lot.remove(entry.ticket)
                self._stop_timer(entry)
                self._refuse(entry.message)

    def _expire_request(self, ticket: int) -> None:
        entry = self._lot.remove(ticket)
        if entry is not None:
            entry.timer = None
            self._refuse(entry.message)
        # else: claimed meanwhile, or out of the lot while a new handler is offered it (then
        # _put_back answers it once it is parked again)

    def _refuse(self, message: Dispatch) -> None:
        if type(message) is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            message.responder.respond_with_error(self._role.unclaimed_error(message))

    def _warn(self, message: Dispatch, what: str) -> None:
        key = message.session_id
        warned = self._warned
        if key in warned or len(warned) > _PARKING_WARNINGS:
            return
        warned.add(key)
        name = self._cx.name
        if len(warned) > _PARKING_WARNINGS:
            _log.warning(
                "Connection %r: messages for %d sessions waited for handlers and were dropped or "
                "refused; not logging further sessions",
                name,
                _PARKING_WARNINGS,
            )
            return
        _log.warning(
            "Connection %r: a %r message for session %r waited for a handler: %s (logged once per session)",
            name,
            message.method,
            key,
            what,
        )
