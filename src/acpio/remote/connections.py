"""The server's ACP connections: the :class:`Limits` they keep, what both kinds share, their registry.

:class:`Connection` is what a Streamable HTTP and a WebSocket connection have in common (the
inbox, the time of the last message, the turns running on it, ``drain()`` and closing);
:class:`Connections` holds those open, hands each to the listener's ``accept()``, closes the idle
and the abandoned ones, and drains them when the server is about to stop.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

from acpio.errors import ConnectionClosed, TransportError
from acpio.remote._frames import DEFAULT_MAX_BUFFERED, DEFAULT_MAX_MESSAGE, Inbox, id_key
from acpio.transports.base import OversizedFrame, Transport
from acpio.transports.listener import AcceptQueue

__all__ = ["Connection", "Connections", "Limits", "Message", "Receive", "Scope", "Send"]

_log = logging.getLogger("acpio.remote")

_DRAINED = "the server is draining (shutting down): connect again to continue the session elsewhere"

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class Limits:
    """What one server lets its clients hold and how long it waits for them.

    * ``max_message``: bytes in one message; a larger POST is answered ``413``, a larger WebSocket
      frame with a JSON-RPC error (``-32600``), and the connection goes on.
    * ``max_buffered``: bytes one connection may hold unread, each way, before its sender waits.
    * ``max_connections``: ACP connections open at once; more are answered ``503``.
    * ``max_sessions_buffered``: session streams of one HTTP connection holding messages the
      client has not opened a stream for.
    * ``idle_timeout``: seconds without a message either way after which a connection is closed.
    * ``stall_timeout``: seconds a connection may hold ``max_buffered`` bytes its client does not
      read before it is closed.
    * ``detach_timeout``: seconds an HTTP connection may go without its event stream (before the
      client opens it, or after it dropped) before it is closed: its client is gone.
    * ``keepalive``: seconds between ``:`` comments on an idle event stream.
    """

    max_message: int = DEFAULT_MAX_MESSAGE
    max_buffered: int = DEFAULT_MAX_BUFFERED
    max_connections: int = 1000
    max_sessions_buffered: int = 1024
    idle_timeout: float = 900.0
    stall_timeout: float = 60.0
    detach_timeout: float = 30.0
    keepalive: float = 15.0


class Connection:
    """What both kinds of connection share: the inbox, activity time, the drainers."""

    def __init__(self, owner: Connections, connection_id: str) -> None:
        self.owner = owner
        self.connection_id = connection_id
        self.limits = owner.limits
        #: Larger messages are refused and reach the engine as an OversizedFrame.
        self.max_line = owner.limits.max_message
        self.inbox = Inbox(owner.limits.max_buffered)
        self.closed = False
        #: Whether the client went away (a timeout ended the connection): what was sent may be lost.
        self.vanished = False
        self.last_active = asyncio.get_running_loop().time()
        #: Since when the connection has had no event stream to write to (HTTP only).
        self.detached_since: float | None = None
        #: The ids (:func:`~acpio.remote._frames.id_key`) of the client's ``session/prompt``
        #: requests not answered yet: the turns a draining server lets finish.
        self.turns: set[str] = set()
        self._drainers: list[asyncio.Future[None]] = []

    def touch(self) -> None:
        """Note a message either way: the connection is not idle."""
        self.last_active = asyncio.get_running_loop().time()

    def prompted(self, request_id: object) -> None:
        """Note a ``session/prompt`` request of the client: a turn runs until it is answered."""
        key = id_key(request_id)
        if key is not None:
            self.turns.add(key)

    def answered(self, request_id: object) -> None:
        """Note an answer of the agent; the last turn's answer ends the connection of a draining server.

        Called once the answer is queued: the client gets it, then the end of the connection.
        """
        key = id_key(request_id)
        if key is None or key not in self.turns:
            return
        self.turns.discard(key)
        if not self.turns and self.owner.draining:
            self.expire(_DRAINED, vanished=False)

    async def receive(self) -> bytes | OversizedFrame | None:
        """The client's next message; ``None`` once the connection ended."""
        frame = await self.inbox.get()
        self.touch()
        return frame

    def backlog(self) -> int:
        """Bytes sent that the client has not taken yet (and should have: what ``drain()`` waits for)."""
        raise NotImplementedError

    def wake_drainers(self) -> None:
        """Let the ``drain()`` calls return once the backlog is gone or the connection ended."""
        if self.backlog() > 0 and not self.closed and not self.vanished:
            return
        drainers, self._drainers = self._drainers, []
        for waiter in drainers:
            if not waiter.done():
                waiter.set_result(None)

    async def drain(self) -> None:
        """Wait until the client has taken what was sent; close the connection if it stalls."""
        loop = asyncio.get_running_loop()
        while self.backlog() > 0 and not self.closed and not self.vanished:
            waiter = loop.create_future()
            self._drainers.append(waiter)
            try:
                await asyncio.wait_for(waiter, self.limits.stall_timeout)
            except TimeoutError:
                _log.warning(
                    "Closing ACP connection %s: its client read nothing for %.0f s",
                    self.connection_id,
                    self.limits.stall_timeout,
                )
                await self.aclose()
                raise TransportError(
                    f"The client read nothing for {self.limits.stall_timeout:.0f} s: connection closed"
                ) from None
        if self.vanished or (self.closed and self.backlog() > 0):
            raise ConnectionClosed("The connection closed before its client read everything sent")

    async def aclose(self) -> None:
        """End the connection from the engine's side."""
        raise NotImplementedError

    def expire(self, reason: str, *, vanished: bool = True) -> None:
        """End the connection for ``reason`` (a timeout): the engine sees the end of input."""
        _log.info("Closing ACP connection %s: %s", self.connection_id, reason)
        self.vanished = vanished
        self.inbox.end()
        self.close_output()

    def close_output(self) -> None:
        """Send nothing more: the client gets what is queued, then the end."""
        raise NotImplementedError


class Connections:
    """The connections open on one listener, by id: offered to ``accept()``, swept when idle or abandoned."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self._open: dict[str, Connection] = {}
        self._queue = AcceptQueue()
        self._sweeper: asyncio.Task[None] | None = None
        #: Set by :meth:`drain`: new connections are refused, the open ones end after their turns.
        self.draining = False
        self._emptied = asyncio.Event()
        self._emptied.set()

    def __len__(self) -> int:
        return len(self._open)

    def get(self, connection_id: str | None) -> Connection | None:
        """The open connection with this id (``None`` for none, or no id)."""
        return self._open.get(connection_id) if connection_id is not None else None

    async def accept(self) -> Transport | None:
        """The transport of the next connection; ``None`` once closed."""
        return await self._queue.accept()

    async def aclose(self) -> None:
        """Stop accepting: the connections not yet accepted are closed, new ones refused (:meth:`full`)."""
        if not await self._queue.aclose():
            return
        if self._sweeper is not None:
            self._sweeper.cancel()

    def expire_all(self, reason: str) -> None:
        """End every open connection."""
        for connection in list(self._open.values()):
            connection.expire(reason)

    def full(self) -> bool:
        """Whether a new connection is refused: the listener is closed, or ``max_connections`` are open."""
        return self._queue.closed or len(self._open) >= self.limits.max_connections

    def refusal(self) -> str | None:
        """Why a new connection is refused now (draining, closed or full); ``None`` when it is taken."""
        if self.draining:
            return "The server is draining (shutting down): connect again, to another server"
        if self.full():
            return "The server takes no more connections now"
        return None

    def drain(self) -> None:
        """Refuse new connections; end each open one as soon as no turn runs on it (:meth:`wait_empty`)."""
        self.draining = True
        for connection in list(self._open.values()):
            if not connection.turns and not connection.closed:
                connection.expire(_DRAINED, vanished=False)

    async def wait_empty(self) -> None:
        """Wait until no connection is open."""
        await self._emptied.wait()

    def offer(self, connection: Connection) -> None:
        """Register a new connection and hand it to ``accept()``."""
        self._open[connection.connection_id] = connection
        self._emptied.clear()
        self._queue.put(connection)  # type: ignore[arg-type]  # both kinds implement Transport
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.ensure_future(self._sweep())

    def forget(self, connection: Connection) -> None:
        """Drop a closed connection from the registry."""
        if self._open.get(connection.connection_id) is connection:
            del self._open[connection.connection_id]
            if not self._open:
                self._emptied.set()

    async def _sweep(self) -> None:
        limits = self.limits
        period = max(0.05, min(limits.idle_timeout, limits.detach_timeout) / 4)
        loop = asyncio.get_running_loop()
        while self._open:
            await asyncio.sleep(period)
            now = loop.time()
            for connection in list(self._open.values()):
                if connection.closed:
                    if now - connection.last_active > limits.detach_timeout:
                        self.forget(connection)  # its client never came back for what was left
                elif now - connection.last_active > limits.idle_timeout:
                    connection.expire(f"no message either way for {limits.idle_timeout:.0f} s")
                elif (
                    connection.detached_since is not None
                    and now - connection.detached_since > limits.detach_timeout
                ):
                    connection.expire(f"its event stream was closed for {limits.detach_timeout:.0f} s")
