"""How a session's messages are delivered to its reader here, and how that delivery ends.

:class:`ActiveSession` reads the turns; :class:`SessionDelivery` is what it reads from: the
session's handler and inbox (:class:`~acpio.session.routing.Routing`), the MCP servers that live
with it, the wait for the next queued item (woken when the connection ends), and the two ends of
delivery here: detached (:meth:`SessionDelivery.close`) or switched to forwarding every message to
the client (:meth:`SessionDelivery.hand_off`, a proxy stepping aside).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable

from acpio.errors import ConnectionClosed
from acpio.jsonrpc import Connection, DynamicHandlerRegistration, RequestDispatch
from acpio.session.messages import QueueItem, SessionMessage
from acpio.session.peers import client_peer
from acpio.session.routing import RouterMode, Routing, refuse_queued

_log = logging.getLogger("acpio.session")


class SessionDelivery:
    """The session's messages delivered to its inbox here, until it is closed or handed off.

    ``scoped``: the session was made by ``run_until()``; it ends with the callback and cannot be
    handed off.
    """

    __slots__ = (
        "_connection_ended",
        "_cx",
        "_inbox",
        "_mcp",
        "_registration",
        "_router",
        "_scoped",
        "_watcher",
    )

    def __init__(
        self,
        cx: Connection,
        routing: Routing,
        mcp_registrations: Iterable[DynamicHandlerRegistration],
        *,
        scoped: bool,
    ) -> None:
        assert routing.inbox is not None, "a session read here has an inbox"
        self._cx = cx
        self._inbox = routing.inbox
        self._router = routing.router
        self._registration = routing.registration
        self._mcp = list(mcp_registrations)
        self._scoped = scoped
        self._watcher: asyncio.Task[None] | None = None
        self._connection_ended = False

    @property
    def items(self) -> deque[QueueItem]:
        """The queued items, oldest first: the reader takes them from the left."""
        return self._inbox.items

    @property
    def mode(self) -> RouterMode:
        """``queue`` (read here), ``forward`` (handed off) or ``detached`` (closed)."""
        return self._router.mode

    def take_history(self) -> list[SessionMessage]:
        """What ``session/load`` replayed before its answer; from now on everything is queued."""
        history = self._router.history or []
        self._router.history = None
        return history

    def check_active(self, what: str) -> None:
        """Raise ``RuntimeError`` naming ``what`` if the session is no longer read here."""
        mode = self._router.mode
        if mode == "forward":
            raise RuntimeError(
                f"{what}(): session {self._router.session_id!r} was handed to proxy mode; its messages "
                "now go to the client. Start another session to read one here."
            )
        if mode == "detached":
            raise RuntimeError(
                f"{what}(): session {self._router.session_id!r} was closed (its async with block ended). "
                "Call it inside the block, or attach again with attach_session()."
            )

    def deliver(self, item: QueueItem) -> None:
        """Queue ``item`` (a prompt's answer) for the reader, unless the session is no longer read here."""
        if self._router.mode == "queue":
            self._inbox.put(item)

    def drop_answered_requests(self) -> None:
        """Take the agent's requests already answered (by a cancel) out of the queue."""
        items = self._inbox.items
        if any(_answered_request(item) for item in items):
            kept = [item for item in items if not _answered_request(item)]
            items.clear()
            items.extend(kept)

    async def next_item(self) -> QueueItem:
        """The next queued item, waiting for it; a :class:`~acpio.ConnectionClosed` once the connection ended.

        Raises ``RuntimeError`` if the session was closed or handed off meanwhile, or if another
        task is already waiting.
        """
        inbox = self._inbox
        while not inbox.items:
            self.check_active("read_update")  # closed or handed off by another task meanwhile
            if self._watcher is None:
                self._watch_connection()
            if self._connection_ended:
                return ConnectionClosed(
                    f"Connection {self._cx.name!r} closed while reading session {self._router.session_id!r}"
                )
            if inbox.waiter is not None:
                raise RuntimeError(
                    f"Another task is already reading session {self._router.session_id!r}; read a "
                    "session from one task at a time."
                )
            waiter = inbox.waiter = asyncio.get_running_loop().create_future()
            try:
                await waiter
            finally:
                inbox.waiter = None
        return inbox.items.popleft()

    def hand_off(self) -> None:
        """Stop queueing, forward what is queued to the client, then forward everything that comes.

        Without yielding to the event loop (see :meth:`ActiveSession.proxy_remaining_messages`).
        """
        if self._scoped:
            raise RuntimeError(
                "proxy_remaining_messages() cannot be used on a session from run_until(): it ends "
                "with its callback. Use start_session() for a session that outlives the call."
            )
        self.check_active("proxy_remaining_messages")
        client = client_peer(self._cx)
        router = self._router
        inbox = self._inbox
        router.mode = "detached"  # 1. nothing more is queued
        forwarded = 0
        while inbox.items:  # 2. forward what is queued, in order
            item = inbox.items.popleft()
            if isinstance(item, SessionMessage):
                self._cx.send_proxied_message_to(client, item.dispatch)
                forwarded += 1
        router.client = client  # 3. forward whatever comes next
        router.mode = "forward"
        router.inbox = None
        self._registration.run_indefinitely()
        for registration in self._mcp:
            registration.run_indefinitely()
        self._stop_watching()
        inbox.closed = True
        inbox.wake()
        _log.debug(
            "Session %r handed off to proxy mode (%d queued messages forwarded)", router.session_id, forwarded
        )

    def close(self, why: str) -> None:
        """Stop delivering here: remove the handlers, answer the unread requests with ``why``; once."""
        router = self._router
        if router.mode != "queue":
            return
        router.mode = "detached"
        self._registration.remove()
        for registration in self._mcp:
            registration.remove()
        self._stop_watching()
        refuse_queued(self._inbox, why)

    def _watch_connection(self) -> None:
        """Wake the reader once the connection ends (a task, started on the first wait)."""
        try:
            self._watcher = self._cx.spawn(self._cx.wait_closed)
        except ConnectionClosed:
            self._on_watcher_done()
            return
        self._watcher.add_done_callback(self._on_watcher_done)

    def _on_watcher_done(self, _: object = None) -> None:
        self._connection_ended = True
        self._inbox.wake()

    def _stop_watching(self) -> None:
        watcher = self._watcher
        self._watcher = None
        if watcher is not None and not watcher.done():
            watcher.remove_done_callback(self._on_watcher_done)
            watcher.cancel()


def _answered_request(item: QueueItem) -> bool:
    """Whether ``item`` is a request from the agent that is already answered."""
    if not isinstance(item, SessionMessage):
        return False
    dispatch = item.dispatch
    return isinstance(dispatch, RequestDispatch) and dispatch.responder.done
