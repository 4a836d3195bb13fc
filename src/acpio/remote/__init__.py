"""ACP over the network: agents served over HTTP and WebSocket, and clients that connect to them.

Needs the ``remote`` extra (``pip install 'acpio[remote]'``: uvicorn, httpx, websockets).

Serving (see ``docs/remote.md``):

* :class:`RemoteServer` serves an acpio builder or agent app with uvicorn, in this process;
* :class:`RemoteListener` is the ASGI application behind it, for any ASGI server, and the
  :class:`~acpio.transports.Listener` of its connections (``builder.serve(listener)``);
* :class:`Limits` bounds what clients may hold and how long the server waits for them;
* :class:`ReadinessCheck` is something ``GET /readyz`` checks for a load balancer (the session
  store answers, say); ``GET /healthz`` tells that the process is alive;
* :class:`Gateway` serves any stdio agent: one agent process per remote connection.

Connecting: :class:`RemoteAgent` (a component, like :class:`~acpio.transports.AcpAgent`) picks
:class:`WebSocketTransport` for ``ws://`` and ``wss://`` URLs, :class:`HttpTransport` for
``http://`` and ``https://``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if TYPE_CHECKING:
    from acpio.remote.client import RemoteAgent, is_remote_url
    from acpio.remote.connections import Limits
    from acpio.remote.gateway import Gateway
    from acpio.remote.health import ReadinessCheck
    from acpio.remote.http_client import HttpTransport
    from acpio.remote.reconnecting import ReconnectingTransport
    from acpio.remote.routing import RemoteListener
    from acpio.remote.server import RemoteServer, is_loopback, serve_remote
    from acpio.remote.websocket_client import WebSocketTransport

__all__ = [
    "Gateway",
    "HttpTransport",
    "Limits",
    "ReadinessCheck",
    "ReconnectingTransport",
    "RemoteAgent",
    "RemoteListener",
    "RemoteServer",
    "WebSocketTransport",
    "is_loopback",
    "is_remote_url",
    "serve_remote",
]

if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
