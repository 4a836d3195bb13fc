"""Connecting to an agent served over HTTP or WebSocket: :class:`RemoteAgent` and its two transports.

* :class:`WebSocketTransport` (``ws://``, ``wss://``, on ``websockets``): one socket, a text frame
  per message.
* :class:`HttpTransport` (``http://``, ``https://``, on ``httpx``): Streamable HTTP. Each message
  is a POST (the first must be ``initialize``); the agent's messages arrive on event streams: the
  connection's, opened after ``initialize``, and one per session, opened before the first POST
  that names the session and whenever an answer names a new one.

Both keep cookies (a load balancer's affinity cookie holds), send ``Authorization: Bearer`` when
given a token, and pass :func:`acpio.testing.check_transport`.
"""

from __future__ import annotations

from collections.abc import Mapping

import httpx

from acpio.remote._frames import DEFAULT_MAX_MESSAGE, auth_headers
from acpio.remote.http_client import HttpTransport
from acpio.remote.reconnecting import ReconnectingTransport
from acpio.remote.websocket_client import WebSocketTransport
from acpio.transports.base import Transport

__all__ = ["HttpTransport", "ReconnectingTransport", "RemoteAgent", "WebSocketTransport", "is_remote_url"]


def is_remote_url(text: str) -> bool:
    """Whether ``text`` names a remote agent (``http(s)://`` or ``ws(s)://``) rather than a command."""
    return text.split("://", 1)[0].lower() in {"http", "https", "ws", "wss"} and "://" in text


class RemoteAgent:
    """An agent served over the network: a :class:`~acpio.transports.Component`.

    ``url`` picks the transport: ``ws://`` or ``wss://`` for WebSocket, ``http://`` or ``https://``
    for Streamable HTTP. ``token`` is sent as ``Authorization: Bearer``; ``headers`` are added to
    every request. ``cookies`` is the jar (kept across :meth:`open` calls, so a load balancer's
    affinity holds when reconnecting). ``max_message`` bounds one incoming message: a larger one
    arrives as an :class:`~acpio.transports.OversizedFrame`, answered by the connection.
    ``reconnect=True``: a broken connection is reopened and its sessions continued
    (:class:`ReconnectingTransport`).

    ::

        async with Client.builder().connect(RemoteAgent("ws://127.0.0.1:8000")) as agent: ...
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        headers: Mapping[str, str] | None = None,
        cookies: httpx.Cookies | None = None,
        max_message: int = DEFAULT_MAX_MESSAGE,
        open_timeout: float = 10.0,
        reconnect: bool = False,
    ) -> None:
        if not is_remote_url(url):
            raise ValueError(f"{url!r} is not an http://, https://, ws:// or wss:// URL")
        self.url = url
        self.cookies = cookies if cookies is not None else httpx.Cookies()
        self._headers = auth_headers(token, headers)
        self._max_message = max_message
        self._open_timeout = open_timeout
        self._reconnect = reconnect

    def __repr__(self) -> str:
        return f"RemoteAgent({self.url!r})"

    async def open(self) -> Transport:
        """Connect; the returned transport talks to the agent (a :class:`ReconnectingTransport` if asked)."""
        if self._reconnect:
            return ReconnectingTransport(self._open_once, await self._open_once())
        return await self._open_once()

    async def _open_once(self) -> Transport:
        if self.url.lower().startswith(("ws://", "wss://")):
            return await WebSocketTransport.connect(
                self.url,
                headers=self._headers,
                cookies=self.cookies,
                max_message=self._max_message,
                open_timeout=self._open_timeout,
            )
        return HttpTransport(
            self.url,
            headers=self._headers,
            cookies=self.cookies,
            max_message=self._max_message,
            open_timeout=self._open_timeout,
        )
