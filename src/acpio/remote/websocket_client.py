"""Connecting over WebSocket: :class:`WebSocketTransport` (``ws://``, ``wss://``, on ``websockets``)."""

from __future__ import annotations

from collections.abc import Mapping

import httpx
import websockets
from websockets.asyncio.client import ClientConnection

from acpio.errors import TransportError
from acpio.remote._frames import DEFAULT_MAX_MESSAGE, auth_headers, head_of
from acpio.remote.sending import QueuedSender, SendQueue
from acpio.transports.base import OversizedFrame

__all__ = ["WebSocketTransport"]


class WebSocketTransport(QueuedSender):
    """A WebSocket to an ACP server: each text frame is one message, both ways.

    Make one with :meth:`connect`. A frame over ``max_line`` bytes arrives as an
    :class:`~acpio.transports.OversizedFrame`. The socket sends pings (every 20 s) so that a peer
    gone silent is noticed.
    """

    def __init__(self, socket: ClientConnection, *, max_line: int = DEFAULT_MAX_MESSAGE) -> None:
        self.max_line = max_line
        self._socket = socket
        self._sending = SendQueue(self._write, "The WebSocket is closed")
        super().__init__(self._sending)

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        token: str | None = None,
        cookies: httpx.Cookies | None = None,
        max_message: int = DEFAULT_MAX_MESSAGE,
        open_timeout: float = 10.0,
    ) -> WebSocketTransport:
        """Open a WebSocket to ``url``; raises :class:`~acpio.TransportError` when it cannot."""
        sent = auth_headers(token, headers)
        handshake = httpx.Request("GET", "http" + url[2:])
        if cookies is not None:
            cookies.set_cookie_header(handshake)
            if "cookie" in handshake.headers:
                sent["Cookie"] = handshake.headers["cookie"]
        try:
            socket = await websockets.connect(
                url,
                additional_headers=sent,
                max_size=4 * max_message,
                max_queue=64,
                open_timeout=open_timeout,
                compression=None,
                close_timeout=2.0,
                user_agent_header="acpio",
            )
        except websockets.InvalidStatus as exc:
            status = exc.response.status_code
            why = exc.response.body.decode(errors="replace").strip() if exc.response.body else ""
            answer = f"{status}: {why}" if why else str(status)
            raise TransportError(f"Cannot open a WebSocket to {url}: the server answered {answer}") from exc
        except (OSError, TimeoutError, websockets.InvalidHandshake, websockets.InvalidURI) as exc:
            raise TransportError(f"Cannot open a WebSocket to {url}: {exc}") from exc
        response = socket.response
        if cookies is not None and response is not None:
            cookies.extract_cookies(
                httpx.Response(101, headers=list(response.headers.raw_items()), request=handshake)
            )
        return cls(socket, max_line=max_message)

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next message; ``None`` once the socket closed cleanly."""
        try:
            data = await self._socket.recv(decode=False)
        except websockets.ConnectionClosedOK:
            return None
        except websockets.ConnectionClosedError as exc:
            raise TransportError(f"The WebSocket broke: {exc}") from exc
        if len(data) > self.max_line:
            return OversizedFrame(len(data), head_of(data))
        return data

    async def _write(self, frame: bytes) -> None:
        try:
            await self._socket.send(frame.decode("utf-8", "replace"))
        except (websockets.ConnectionClosed, websockets.InvalidState) as exc:
            self._sending.fail(TransportError(f"The WebSocket closed while sending: {exc}"))

    async def aclose(self) -> None:
        """Send what is queued, then close the socket."""
        if self._sending.closed:
            return
        await self._sending.close()
        await self._socket.close()

    def abort(self) -> None:
        """Drop the TCP connection without a closing handshake (tests: a client that vanishes)."""
        transport = self._socket.transport
        transport.abort()
