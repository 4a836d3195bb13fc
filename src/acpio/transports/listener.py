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

__all__ = ["ChannelListener", "Listener"]


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


class ChannelListener:
    """An in-process listener: :meth:`connect` gives the client end of a new :class:`Channel` pair.

    ::

        listener = ChannelListener()
        server = asyncio.create_task(agent_builder.serve(listener))
        transport = listener.connect()          # then Client.builder().connect_with(transport, main)
    """

    def __init__(self) -> None:
        self._pending: deque[Channel] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether :meth:`aclose` was called."""
        return self._closed

    def connect(self) -> Channel:
        """A new connection: returns the client's end; the server's end goes to :meth:`accept`.

        Raises :class:`~acpio.ConnectionClosed` once the listener is closed.
        """
        if self._closed:
            raise ConnectionClosed("The listener is closed: it accepts no new connections")
        client, server = Channel.duplex()
        self._pending.append(server)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        return client

    async def accept(self) -> Transport | None:
        """The server's end of the next :meth:`connect`; ``None`` once closed."""
        while not self._pending:
            if self._closed:
                return None
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        return self._pending.popleft()

    async def aclose(self) -> None:
        """Stop accepting; ends not yet accepted are closed (their clients see end of input)."""
        if self._closed:
            return
        self._closed = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        while self._pending:
            await self._pending.popleft().aclose()
