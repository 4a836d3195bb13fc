"""Where a server gets its connections: a :class:`Listener` accepts one transport per peer.

:meth:`acpio.jsonrpc.Builder.serve` serves every transport a listener accepts. Servers for a
network (HTTP, WebSocket) implement the protocol; :class:`ChannelListener` is the in-process one,
for tests and for components in the same process.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Protocol, runtime_checkable

from acpio.errors import ConnectionClosed
from acpio.transports.base import Transport
from acpio.transports.channel import Channel

__all__ = ["AcceptQueue", "ChannelListener", "Listener"]


@runtime_checkable
class Listener(Protocol):
    """A source of connections.

    * ``accept()`` waits for the next peer and returns the transport that talks to it, or ``None``
      once the listener is closed (and stays closed).
    * ``aclose()`` stops accepting; a pending ``accept()`` returns ``None``. Calling it twice is
      harmless. Connections already accepted are the server's to end.
    """

    async def accept(self) -> Transport | None:
        """The next peer's transport; ``None`` once closed."""
        ...

    async def aclose(self) -> None:
        """Stop accepting."""
        ...


class AcceptQueue:
    """The transports a listener has and has not handed out yet: :meth:`put` one, :meth:`accept` it.

    What a listener needs to implement :class:`Listener` over connections that arrive some other
    way (:class:`ChannelListener` here; the HTTP/WebSocket server of :mod:`acpio.remote`).
    """

    def __init__(self) -> None:
        self._pending: deque[Transport] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False

    def put(self, transport: Transport) -> None:
        """A new connection's transport, for the next :meth:`accept` (put none after :meth:`aclose`)."""
        self._pending.append(transport)
        self._wake()

    async def accept(self) -> Transport | None:
        """The next transport put; ``None`` once closed."""
        while not self._pending:
            if self.closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._pending.popleft()

    async def aclose(self) -> bool:
        """Stop accepting; transports not accepted yet are closed. ``False`` if already closed."""
        if self.closed:
            return False
        self.closed = True
        self._wake()
        while self._pending:
            await self._pending.popleft().aclose()
        return True

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class ChannelListener:
    """An in-process listener: :meth:`connect` gives the client end of a new :class:`Channel` pair.

    ::

        listener = ChannelListener()
        server = asyncio.create_task(agent_builder.serve(listener))
        transport = listener.connect()          # then Client.builder().connect_with(transport, main)
    """

    def __init__(self) -> None:
        self._queue = AcceptQueue()

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._queue.closed

    def connect(self) -> Channel:
        """A new connection: returns the client's end; the server's end goes to :meth:`accept`.

        Raises :class:`~acpio.ConnectionClosed` once the listener is closed.
        """
        if self._queue.closed:
            raise ConnectionClosed("The listener is closed: it accepts no new connections")
        client, server = Channel.duplex()
        self._queue.put(server)
        return client

    async def accept(self) -> Transport | None:
        """The server's end of the next :meth:`connect`; ``None`` once closed."""
        return await self._queue.accept()

    async def aclose(self) -> None:
        """Stop accepting; ends not yet accepted are closed (their clients see end of input)."""
        await self._queue.aclose()
