"""The ACP endpoint as an ASGI application: :class:`RemoteListener`.

One endpoint speaks both transports of the Streamable HTTP & WebSocket RFD:

* **WebSocket**: a ``GET`` with an upgrade; each text frame is one JSON-RPC message, both ways
  (:mod:`acpio.remote.websocket_server`).
* **Streamable HTTP**: ``POST`` carries each client message, ``GET`` opens an event stream,
  ``DELETE`` ends the connection (:mod:`acpio.remote.http_server`).

Here every request is checked (its origin, its bearer token, its path) and handed to its side;
``/healthz`` and ``/readyz``, for load balancers, are answered by :mod:`acpio.remote.health`.
Each ACP connection becomes one :class:`~acpio.transports.Transport` that :meth:`RemoteListener.accept`
returns, so ``builder.serve(listener)`` or ``app.serve(listener)`` serves them all.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping

from acpio.remote.connections import Connections, Limits, Receive, Scope, Send
from acpio.remote.health import HEALTH_PATHS, Readiness, ReadinessCheck, serve_health
from acpio.remote.http_server import serve_http
from acpio.remote.websocket_server import serve_websocket
from acpio.transports.base import Transport

__all__ = ["RemoteListener"]


class RemoteListener:
    """An ASGI application serving ACP over HTTP and WebSocket, and the :class:`Listener` of its connections.

    Mount it in any ASGI server (``uvicorn``, ``hypercorn``) or framework (a Starlette ``Mount``);
    serve what it accepts with ``builder.serve(listener)`` or ``app.serve(listener)``.
    :class:`RemoteServer` does both.

    * ``token``: when given, every request needs ``Authorization: Bearer <token>`` (``401``
      otherwise).
    * ``allowed_origins``: browser origins (``https://app.example``) that may connect. A request
      with any other ``Origin`` header is refused (``403``): a web page must not drive an agent
      through its user's browser. Programs send no ``Origin`` and are not affected.
    * ``limits``: sizes and timeouts (:class:`Limits`).
    * ``ready_checks``: what ``GET /readyz`` checks besides draining and ``max_connections``
      (:class:`ReadinessCheck`: the session store answers, say). ``GET /healthz`` answers ``200``
      while the server runs. Both are for load balancers: they need no token.

    :meth:`drain` prepares a stop that cuts no turn.
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        allowed_origins: Iterable[str] = (),
        limits: Limits | None = None,
        ready_checks: Iterable[ReadinessCheck] = (),
    ) -> None:
        self.limits = limits if limits is not None else Limits()
        self._token = token.encode() if token is not None else None
        self._origins = frozenset(origin.rstrip("/").lower() for origin in allowed_origins)
        self._connections = Connections(self.limits)
        self._readiness = Readiness(tuple(ready_checks))

    @property
    def connection_count(self) -> int:
        """ACP connections open now."""
        return len(self._connections)

    # -- Listener ------------------------------------------------------------------------------------

    async def accept(self) -> Transport | None:
        """The transport of the next ACP connection; ``None`` once closed."""
        return await self._connections.accept()

    async def aclose(self) -> None:
        """Stop accepting: new connections are answered ``503``; those not yet accepted are closed."""
        await self._connections.aclose()

    async def close_connections(self) -> None:
        """End every open connection (a server shutting down)."""
        self._connections.expire_all("the server is shutting down")

    @property
    def draining(self) -> bool:
        """Whether :meth:`drain` was called."""
        return self._connections.draining

    def drain(self) -> None:
        """Prepare to stop without cutting a turn: no new connection, the open ones end after their turns.

        ``/readyz`` answers ``503`` from now on (a load balancer sends new clients elsewhere), a
        new connection is refused with ``503``, an open connection without a ``session/prompt``
        in flight ends now and one with turns running ends once the last is answered (the client
        gets the answer, then the end of the connection: a reconnecting client continues its
        sessions on another server). :meth:`wait_drained` waits for the last.
        """
        self._connections.drain()

    async def wait_drained(self) -> None:
        """Wait until no connection is open (after :meth:`drain`: until every running turn ended)."""
        await self._connections.wait_empty()

    # -- ASGI ----------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        path = _relative_path(scope)
        if kind == "http" and path in HEALTH_PATHS:
            await serve_health(path, scope["method"], self._connections, self._readiness, send)
            return
        headers = _headers(scope)
        refusal = self._refusal(headers) or _unknown_path(scope, path)
        if kind == "websocket":
            await serve_websocket(self._connections, scope, receive, send, refusal)
        elif kind == "http":
            await serve_http(self._connections, scope["method"], headers, receive, send, refusal)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        while True:
            event = await receive()
            if event["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif event["type"] == "lifespan.shutdown":
                await self.close_connections()
                await send({"type": "lifespan.shutdown.complete"})
                return

    def _refusal(self, headers: Mapping[str, str]) -> tuple[int, str] | None:
        origin = headers.get("origin")
        if origin is not None and origin.rstrip("/").lower() not in self._origins:
            return 403, f"Origin {origin} is not allowed: list it in the server's allowed origins"
        if self._token is not None:
            given = headers.get("authorization", "")
            scheme, _, credential = given.partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(
                credential.strip().encode(), self._token
            ):
                return 401, "Missing or wrong bearer token: send Authorization: Bearer <token>"
        return None


def _relative_path(scope: Scope) -> str:
    """The request's path under the root path the listener is mounted at."""
    path: str = scope["path"]
    root = scope.get("root_path", "")
    if root and path.startswith(root):  # uvicorn and Starlette's Mount keep the root in the path
        path = path[len(root) :]
    return path


def _unknown_path(scope: Scope, path: str) -> tuple[int, str] | None:
    """``404`` for any path but the endpoint, ``/`` under the root path the listener is mounted at."""
    if path in ("", "/"):
        return None
    root = scope.get("root_path", "")
    return 404, f"Not found: {scope['path']}. The ACP endpoint is {root}/ (Streamable HTTP and WebSocket)"


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}
