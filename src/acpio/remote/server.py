"""ACP over HTTP and WebSocket in this process: :class:`RemoteServer` serves an agent with uvicorn.

The endpoint it serves is a :class:`~acpio.remote.RemoteListener` (:mod:`acpio.remote.routing`),
which any other ASGI server can serve too.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Awaitable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from acpio.remote.connections import Limits
from acpio.remote.health import ReadinessCheck
from acpio.remote.routing import RemoteListener

if TYPE_CHECKING:
    from acpio.transports.listener import Listener

__all__ = ["Limits", "ReadinessCheck", "RemoteListener", "RemoteServer", "is_loopback", "serve_remote"]


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine (``localhost``, ``127.0.0.1``, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Servable(Protocol):
    """What :class:`RemoteServer` serves: a builder or an agent app (anything with ``serve(listener)``)."""

    def serve(self, target: Listener) -> Awaitable[None]:
        """Serve every connection the listener accepts."""
        ...


class RemoteServer:
    """An agent served over HTTP and WebSocket by uvicorn, in this process: an async context manager.

    ::

        async with RemoteServer(agent, port=8000) as server:
            print(server.url)            # http://127.0.0.1:8000 (ws:// the same)
            await server.wait_closed()

    ``host`` defaults to loopback. Binding another address needs a ``token`` (clients send it as a
    bearer token) or ``insecure=True``, which says that the network is trusted. ``port=0`` picks a
    free port (see :attr:`port`). ``uvicorn`` passes options to ``uvicorn.Config``, such as
    ``ssl_certfile`` and ``ssl_keyfile`` for TLS. ``ready_checks`` are what ``GET /readyz``
    checks (:class:`RemoteListener`); ``close(drain_timeout=...)`` stops without cutting turns.
    """

    def __init__(
        self,
        agent: Servable,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        token: str | None = None,
        insecure: bool = False,
        allowed_origins: Iterable[str] = (),
        limits: Limits | None = None,
        ready_checks: Iterable[ReadinessCheck] = (),
        uvicorn: Mapping[str, Any] | None = None,
    ) -> None:
        if not is_loopback(host) and token is None and not insecure:
            raise ValueError(
                f"Binding {host} exposes the agent to the network: give a token (clients send it as "
                "Authorization: Bearer <token>), or insecure=True if the network is trusted"
            )
        self.listener = RemoteListener(
            token=token, allowed_origins=allowed_origins, limits=limits, ready_checks=ready_checks
        )
        self._agent = agent
        self._host = host
        self._port = port
        self._options = dict(uvicorn or {})
        self._server: Any = None
        self._tasks: list[asyncio.Task[None]] = []
        self._done = asyncio.Event()

    @property
    def port(self) -> int:
        """The port the server listens on (the one picked for ``port=0``)."""
        return self._port

    @property
    def url(self) -> str:
        """``http://host:port``, what clients connect to (``ws://`` for WebSocket)."""
        host = f"[{self._host}]" if ":" in self._host else self._host
        scheme = "https" if self._options.get("ssl_certfile") else "http"
        return f"{scheme}://{host}:{self._port}"

    async def __aenter__(self) -> RemoteServer:
        import uvicorn

        options: dict[str, Any] = {
            "log_level": "warning",
            "lifespan": "off",
            "ws_max_size": 4 * self.listener.limits.max_message,
            "ws_per_message_deflate": False,
            **self._options,
        }
        config = uvicorn.Config(self.listener, host=self._host, port=self._port, **options)
        server = self._server = uvicorn.Server(config)
        # Server.serve() without its signal handlers: stopping is the caller's (close(), cancellation).
        config.load()
        uvicorn_log = logging.getLogger("uvicorn.error")
        if not any(isinstance(f, _RefusalIsNoError) for f in uvicorn_log.filters):
            uvicorn_log.addFilter(_RefusalIsNoError())
        server.lifespan = config.lifespan_class(config)
        try:
            await server.startup()
        except SystemExit:  # uvicorn's answer to a failed bind, after logging the OSError
            server.should_exit = True
        if server.should_exit:
            self._server = None
            raise OSError(f"Cannot serve on {self._host}:{self._port}: the address is in use or not allowed")
        self._port = server.servers[0].sockets[0].getsockname()[1]
        self._tasks = [
            asyncio.ensure_future(server.main_loop()),
            asyncio.ensure_future(self._agent.serve(self.listener)),
        ]
        for task in self._tasks:
            task.add_done_callback(lambda _: self._done.set())
        return self

    async def wait_closed(self) -> None:
        """Wait until the server stops (its agent's serving ended, or :meth:`close` was called)."""
        await self._done.wait()

    async def close(self, *, drain_timeout: float = 0.0) -> bool:
        """Stop: end every connection, stop accepting, shut uvicorn down.

        With ``drain_timeout``, drain first (:meth:`RemoteListener.drain`): no new connection, and
        each open one ends once its running turns are answered, for up to ``drain_timeout`` seconds;
        the connections still open then are ended. Returns whether none was left to end so.
        """
        drained = True
        if drain_timeout > 0:
            self.listener.drain()
            try:
                await asyncio.wait_for(self.listener.wait_drained(), drain_timeout)
            except TimeoutError:
                drained = False
        await self.listener.close_connections()
        await self.listener.aclose()
        server = self._server
        if server is not None:
            server.should_exit = True
        pending = [task for task in self._tasks if not task.done()]
        if pending:
            await asyncio.wait(pending, timeout=5.0)
        for task in pending:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if server is not None:
            await server.shutdown()
            self._server = None
        return drained

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def serve_remote(agent: Servable, **options: Any) -> None:
    """Serve ``agent`` over HTTP and WebSocket until cancelled; ``options`` as :class:`RemoteServer`'s."""
    async with RemoteServer(agent, **options) as server:
        await server.wait_closed()


class _RefusalIsNoError(logging.Filter):
    """Drops uvicorn's error for a WebSocket handshake refused with an HTTP answer.

    uvicorn's websockets (sans-I/O) protocol logs "returned without completing handshake" after a
    ``websocket.http.response`` denial, although the answer was sent: the refusal is logged by acpio.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."
