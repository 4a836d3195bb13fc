"""ACP over HTTP and WebSocket, served by any ASGI server: :class:`RemoteListener` and :class:`RemoteServer`.

One endpoint speaks both transports of the Streamable HTTP & WebSocket RFD:

* **WebSocket**: a ``GET`` with an upgrade; each text frame is one JSON-RPC message, both ways.
* **Streamable HTTP**: ``POST`` carries each client message (``initialize`` answers ``200`` with
  its response and the ``Acp-Connection-Id`` header; every other POST answers ``202``); ``GET``
  with ``Accept: text/event-stream`` opens the connection's event stream (no ``Acp-Session-Id``)
  or a session's (with it); ``DELETE`` ends the connection. Messages of a session (updates, the
  agent's requests, the answers to the session's requests) go to its stream, the rest to the
  connection's.

Each ACP connection becomes one :class:`~acpio.transports.Transport` that :meth:`RemoteListener.accept`
returns, so ``builder.serve(listener)`` or ``app.serve(listener)`` serves them all.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import ipaddress
import logging
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from acpio.errors import ConnectionClosed, TransportError
from acpio.jsonrpc.messages import head_request_id
from acpio.remote._frames import (
    CONNECTION_HEADER,
    DEFAULT_MAX_BUFFERED,
    DEFAULT_MAX_MESSAGE,
    SESSION_HEADER,
    SESSION_SCOPED_METHODS,
    Inbox,
    head_of,
    id_key,
    parse,
    session_of,
    sse_event,
)
from acpio.transports.base import OversizedFrame, Transport
from acpio.transports.listener import AcceptQueue

__all__ = ["Limits", "RemoteListener", "RemoteServer", "is_loopback", "serve_remote"]

_log = logging.getLogger("acpio.remote")
_HEAD_SIZE = 200

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


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the server on this machine (``localhost``, ``127.0.0.1``, ``::1``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _Outbox:
    """The messages waiting for one event stream (the connection's or a session's)."""

    __slots__ = ("frames", "queued", "receiver", "waiter")

    def __init__(self) -> None:
        self.frames: deque[bytes] = deque()
        self.queued = 0
        self.receiver = False
        self.waiter: asyncio.Future[None] | None = None

    def push(self, frame: bytes) -> None:
        self.frames.append(frame)
        self.queued += len(frame)
        self.wake()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)


class _Connection:
    """What both kinds of connection share: the inbox, activity time, the drainers."""

    def __init__(self, owner: RemoteListener, connection_id: str) -> None:
        self.owner = owner
        self.connection_id = connection_id
        self.limits = owner.limits
        self.inbox = Inbox(owner.limits.max_buffered)
        self.closed = False
        #: Whether the client went away (a timeout ended the connection): what was sent may be lost.
        self.vanished = False
        self.last_active = asyncio.get_running_loop().time()
        self._drainers: list[asyncio.Future[None]] = []

    def touch(self) -> None:
        self.last_active = asyncio.get_running_loop().time()

    async def receive(self) -> bytes | OversizedFrame | None:
        frame = await self.inbox.get()
        self.touch()
        return frame

    def backlog(self) -> int:
        raise NotImplementedError

    def wake_drainers(self) -> None:
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
        raise NotImplementedError

    def expire(self, reason: str, *, vanished: bool = True) -> None:
        """End the connection for ``reason`` (a timeout): the engine sees the end of input."""
        _log.info("Closing ACP connection %s: %s", self.connection_id, reason)
        self.vanished = vanished
        self.inbox.end()
        self.close_output()

    def close_output(self) -> None:
        raise NotImplementedError


class _HttpConnection(_Connection):
    """One Streamable HTTP connection: POSTs in, event streams out."""

    def __init__(self, owner: RemoteListener, connection_id: str, initialize_id: str) -> None:
        super().__init__(owner, connection_id)
        #: Larger POSTs are answered 413 and reach the engine as an OversizedFrame.
        self.max_line = owner.limits.max_message
        self._streams: dict[str | None, _Outbox] = {None: _Outbox()}
        #: Where the answer to each of the client's requests goes: its session's stream, or None.
        self._routes: dict[str, str | None] = {}
        self.initial: tuple[str, asyncio.Future[bytes]] | None = (
            initialize_id,
            asyncio.get_running_loop().create_future(),
        )
        self.detached_since: float | None = self.last_active

    # -- the engine's side --------------------------------------------------------------------------

    def send(self, frame: bytes) -> None:
        """Queue a message for the stream it belongs to."""
        if self.closed:
            raise ConnectionClosed("The HTTP connection is closed: the client ended it or went away")
        self.touch()
        message = parse(frame)
        initial = self.initial
        if initial is not None and message is not None and _answers(message, initial[0]):
            self.initial = None
            if not initial[1].done():
                initial[1].set_result(frame)
            return
        route: str | None = None
        if message is not None:
            if "method" in message:
                route = session_of(message)
            else:
                key = id_key(message.get("id"))
                route = self._routes.pop(key, None) if key is not None else None
        outbox = self._streams.get(route)
        if outbox is None:
            outbox = self._streams[route] = _Outbox()
        outbox.push(frame)

    def backlog(self) -> int:
        unread = 0
        waiting = 0  # held for session streams the client has not opened: allowed up to max_buffered
        for route, outbox in self._streams.items():
            if outbox.receiver or route is None:
                unread += outbox.queued
            else:
                waiting += outbox.queued
        return unread + max(0, waiting - self.limits.max_buffered)

    async def aclose(self) -> None:
        """End the connection: its event streams end after what is queued, its POSTs are refused."""
        if self.closed:
            return
        self.inbox.end()
        self.close_output()

    def close_output(self) -> None:
        if self.closed:
            return
        self.closed = True
        if not any(outbox.frames for outbox in self._streams.values()) or self.vanished:
            self.owner.forget(self)
        # else: kept until the client's event streams take what is queued (or detach_timeout passes)
        if self.initial is not None and not self.initial[1].done():
            self.initial[1].set_exception(
                ConnectionClosed("The agent closed the connection during initialize")
            )
        for outbox in self._streams.values():
            outbox.wake()
        self.wake_drainers()

    # -- the client's side --------------------------------------------------------------------------

    def session_stream_count(self) -> int:
        return sum(1 for route, outbox in self._streams.items() if route is not None and not outbox.receiver)

    async def post(self, body: bytes, message: dict[str, Any], session: str | None) -> None:
        """Hand a client message to the engine, recording where its answer goes."""
        self.touch()
        if "method" in message and "id" in message:
            key = id_key(message["id"])
            if key is not None:
                # session/load's replayed history and answer go to the connection stream: the
                # client opens the session's stream only once it knows the session is there.
                self._routes[key] = None if message["method"] == "session/load" else session
        await self.inbox.put(body)

    async def stream(self, session: str | None, receive: Receive, send: Send) -> None:
        """Serve one event stream until the client leaves or the connection ends."""
        outbox = self._streams.get(session)
        if outbox is None:
            if self.closed:
                await _text(send, 404, "Unknown Acp-Connection-Id: the connection has ended")
                return
            if self.session_stream_count() >= self.limits.max_sessions_buffered:
                await _text(send, 429, "Too many session streams on this connection")
                return
            outbox = self._streams[session] = _Outbox()
        if outbox.receiver:
            await _text(send, 409, "This event stream already has a receiver")
            return
        outbox.receiver = True
        if session is None:
            self.detached_since = None
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                    (b"x-accel-buffering", b"no"),
                ],
            }
        )
        left = asyncio.ensure_future(_disconnected(receive))
        loop = asyncio.get_running_loop()
        try:
            while True:
                if outbox.frames:
                    frames = list(outbox.frames)
                    outbox.frames.clear()
                    outbox.queued = 0
                    await send(
                        {
                            "type": "http.response.body",
                            "body": b"".join(map(sse_event, frames)),
                            "more_body": True,
                        }
                    )
                    # A write to a client that left returns as if it went through; the watcher
                    # sees the disconnect within the loop's next turn.
                    await asyncio.sleep(0)
                    if left.done() and session is None:
                        self.vanished = True
                    self.wake_drainers()
                    continue
                if self.closed or left.done():
                    break
                outbox.waiter = waiter = loop.create_future()
                done, _ = await asyncio.wait(
                    (waiter, left), timeout=self.limits.keepalive, return_when=asyncio.FIRST_COMPLETED
                )
                outbox.waiter = None
                if not done:
                    await send({"type": "http.response.body", "body": b": keepalive\n\n", "more_body": True})
            if not left.done():
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:
            pass  # the client went away mid-write
        finally:
            left.cancel()
            outbox.receiver = False
            if session is None:
                self.detached_since = loop.time()
            elif not outbox.frames and self._streams.get(session) is outbox:
                del self._streams[session]
            if self.closed and not any(outbox.frames for outbox in self._streams.values()):
                self.owner.forget(self)
            self.wake_drainers()


class _WebSocketConnection(_Connection):
    """One WebSocket connection: a text frame per message, both ways."""

    def __init__(self, owner: RemoteListener, connection_id: str, asgi_send: Send) -> None:
        super().__init__(owner, connection_id)
        self.max_line = owner.limits.max_message
        self._send = asgi_send
        self._outgoing: deque[bytes] = deque()
        self._queued = 0
        self._writing = 0
        self._writer_wake: asyncio.Future[None] | None = None
        self._close_code = 1000
        self._close_reason = ""
        self._peer_gone = False
        #: Bytes that could not be written (the peer went away): drain() fails after that.
        self._dropped = 0

    def send(self, frame: bytes) -> None:
        """Queue a message for the socket."""
        if self.closed:
            raise ConnectionClosed("The WebSocket connection is closed")
        self.touch()
        self._outgoing.append(frame)
        self._queued += len(frame)
        self._wake_writer()

    def _wake_writer(self) -> None:
        waiter = self._writer_wake
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def backlog(self) -> int:
        return self._queued + self._writing + self._dropped

    async def aclose(self) -> None:
        """Send what is queued, then close the socket (code 1000)."""
        self.inbox.end()
        self.close_output()

    def close_output(self, code: int = 1000, reason: str = "") -> None:
        if self.closed:
            return
        self.closed = True
        self._close_code, self._close_reason = code, reason
        self.owner.forget(self)
        self._wake_writer()
        self.wake_drainers()

    def expire(self, reason: str, *, vanished: bool = True) -> None:
        _log.info("Closing ACP connection %s: %s", self.connection_id, reason)
        self.vanished = vanished
        self.inbox.end()
        self.close_output(1001, reason[:120])

    async def run(self, receive: Receive) -> None:
        """Read the socket and write the queue until either side ends."""
        writer = asyncio.ensure_future(self._write())
        try:
            while True:
                event = await receive()
                kind = event["type"]
                if kind == "websocket.disconnect":
                    self._peer_gone = True
                    break
                if kind != "websocket.receive":
                    continue
                data = event.get("bytes")
                if data is None:
                    data = (event.get("text") or "").encode()
                self.touch()
                if len(data) > self.max_line:
                    self.inbox.put_nowait(OversizedFrame(len(data), head_of(data)))
                else:
                    await self.inbox.put(data)
        except ConnectionClosed:
            pass  # the engine closed the connection: stop reading
        finally:
            self.inbox.end()
            self.close_output()
            await writer

    async def _write(self) -> None:
        loop = asyncio.get_running_loop()
        send = self._send
        try:
            while True:
                if self._outgoing:
                    frames = list(self._outgoing)
                    self._outgoing.clear()
                    self._writing, self._queued = self._queued, 0
                    for frame in frames:
                        await send({"type": "websocket.send", "text": frame.decode("utf-8", "replace")})
                    self._writing = 0
                    self.wake_drainers()
                    continue
                if self.closed or self._peer_gone:
                    break
                self._writer_wake = loop.create_future()
                await self._writer_wake
                self._writer_wake = None
            if not self._peer_gone:
                await send(
                    {"type": "websocket.close", "code": self._close_code, "reason": self._close_reason}
                )
        except (OSError, RuntimeError):
            self._peer_gone = True  # the socket is gone: what is queued cannot be written
        finally:
            self._dropped = self._queued + self._writing
            self._outgoing.clear()
            self._writing = self._queued = 0
            self.closed = True
            self.wake_drainers()


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
    """

    def __init__(
        self,
        *,
        token: str | None = None,
        allowed_origins: Iterable[str] = (),
        limits: Limits | None = None,
    ) -> None:
        self.limits = limits if limits is not None else Limits()
        self._token = token.encode() if token is not None else None
        self._origins = frozenset(origin.rstrip("/").lower() for origin in allowed_origins)
        self._connections: dict[str, _Connection] = {}
        self._queue = AcceptQueue()
        self._sweeper: asyncio.Task[None] | None = None

    @property
    def connection_count(self) -> int:
        """ACP connections open now."""
        return len(self._connections)

    # -- Listener ------------------------------------------------------------------------------------

    async def accept(self) -> Transport | None:
        """The transport of the next ACP connection; ``None`` once closed."""
        return await self._queue.accept()

    async def aclose(self) -> None:
        """Stop accepting: new connections are answered ``503``; those not yet accepted are closed."""
        if not await self._queue.aclose():
            return
        if self._sweeper is not None:
            self._sweeper.cancel()

    async def close_connections(self) -> None:
        """End every open connection (a server shutting down)."""
        for connection in list(self._connections.values()):
            connection.expire("the server is shutting down")

    def _offer(self, connection: _Connection) -> None:
        self._connections[connection.connection_id] = connection
        self._queue.put(connection)  # type: ignore[arg-type]  # both kinds implement Transport
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.ensure_future(self._sweep())

    def forget(self, connection: _Connection) -> None:
        """Drop a closed connection from the registry."""
        if self._connections.get(connection.connection_id) is connection:
            del self._connections[connection.connection_id]

    async def _sweep(self) -> None:
        limits = self.limits
        period = max(0.05, min(limits.idle_timeout, limits.detach_timeout) / 4)
        loop = asyncio.get_running_loop()
        while self._connections:
            await asyncio.sleep(period)
            now = loop.time()
            for connection in list(self._connections.values()):
                if connection.closed:
                    if now - connection.last_active > limits.detach_timeout:
                        self.forget(connection)  # its client never came back for what was left
                elif now - connection.last_active > limits.idle_timeout:
                    connection.expire(f"no message either way for {limits.idle_timeout:.0f} s")
                elif (
                    isinstance(connection, _HttpConnection)
                    and connection.detached_since is not None
                    and now - connection.detached_since > limits.detach_timeout
                ):
                    connection.expire(f"its event stream was closed for {limits.detach_timeout:.0f} s")

    # -- ASGI ----------------------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The ASGI entry point."""
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        headers = _headers(scope)
        refusal = self._refusal(headers) or _unknown_path(scope)
        if kind == "websocket":
            await self._websocket(scope, receive, send, refusal)
            return
        if kind != "http":
            return
        if refusal is not None:
            status, text = refusal
            await _text(send, status, text, extra=[(b"www-authenticate", b"Bearer")] if status == 401 else ())
            return
        method = scope["method"]
        if method == "POST":
            await self._post(headers, receive, send)
        elif method == "GET":
            await self._get(headers, receive, send)
        elif method == "DELETE":
            await self._delete(headers, send)
        else:
            await _text(send, 405, "Method not allowed: POST, GET (event stream or WebSocket) and DELETE")

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

    def _full(self) -> bool:
        return self._queue.closed or len(self._connections) >= self.limits.max_connections

    async def _websocket(
        self, scope: Scope, receive: Receive, send: Send, refusal: tuple[int, str] | None
    ) -> None:
        event = await receive()
        if event["type"] != "websocket.connect":
            return
        if refusal is not None:
            _log.info("Refused a WebSocket connection: %s", refusal[1])
            if "websocket.http.response" in scope.get("extensions", {}):
                # The handshake answered as over HTTP (401 and why, not the server's bare 403), so
                # the client can tell its user what to send.
                status, text = refusal
                headers = [(b"content-type", b"text/plain; charset=utf-8")]
                if status == 401:
                    headers.append((b"www-authenticate", b"Bearer"))
                await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
                await send({"type": "websocket.http.response.body", "body": text.encode()})
            else:
                await send({"type": "websocket.close", "code": 1008})
            return
        if self._full():
            await send({"type": "websocket.close", "code": 1013})
            return
        connection_id = str(uuid.uuid4())
        await send({"type": "websocket.accept", "headers": [(b"acp-connection-id", connection_id.encode())]})
        connection = _WebSocketConnection(self, connection_id, send)
        self._offer(connection)
        await connection.run(receive)

    async def _post(self, headers: Mapping[str, str], receive: Receive, send: Send) -> None:
        content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if content_type != "application/json":
            await _text(send, 415, "Unsupported media type: POST a JSON-RPC message as application/json")
            return
        body, size = await _read_body(receive, self.limits.max_message)
        if size > self.limits.max_message:
            await self._too_large(headers, body, size, send)
            return
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            await _json(send, 400, _error(None, -32700, "Parse error: the body is not JSON"))
            return
        if isinstance(message, list):
            await _json(send, 400, _error(None, -32600, "JSON-RPC batches are not supported by ACP"))
            return
        if not isinstance(message, dict):
            await _json(send, 400, _error(None, -32600, "Invalid request: the body is not a JSON object"))
            return
        connection_id = headers.get(CONNECTION_HEADER)
        if message.get("method") == "initialize" and "id" in message:
            if connection_id is not None:
                await _text(send, 400, "Initialize is not allowed on an existing connection")
                return
            await self._initialize(body, message, send)
            return
        if connection_id is None:
            await _text(send, 400, "Missing Acp-Connection-Id: POST initialize first")
            return
        connection = self._connections.get(connection_id)
        if not isinstance(connection, _HttpConnection) or connection.closed:
            await _text(send, 404, "Unknown Acp-Connection-Id: the connection has ended")
            return
        session = headers.get(SESSION_HEADER)
        named = session_of(message)
        if session is None and (named is not None or message.get("method") in SESSION_SCOPED_METHODS):
            await _text(send, 400, "Missing Acp-Session-Id: session messages name their session in it")
            return
        if session is not None and named is not None and session != named:
            await _text(send, 400, f"Mismatched Acp-Session-Id: {session} in the header, {named} in params")
            return
        try:
            await connection.post(body, message, session)
        except ConnectionClosed:
            await _text(send, 404, "Unknown Acp-Connection-Id: the connection has ended")
            return
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def _too_large(self, headers: Mapping[str, str], head: bytes, size: int, send: Send) -> None:
        """Answer ``413`` (a JSON-RPC error naming the request, when its start shows its id).

        A message that is no request the client waits on also reaches the connection, as the
        :class:`~acpio.transports.OversizedFrame` any transport gives for a line over its limit.
        """
        request_id = head_request_id(head)
        _log.info("Refused a message of %d bytes (limit %d)", size, self.limits.max_message)
        connection_id = headers.get(CONNECTION_HEADER)
        connection = self._connections.get(connection_id) if connection_id is not None else None
        if request_id is None and isinstance(connection, _HttpConnection) and not connection.closed:
            with contextlib.suppress(ConnectionClosed):
                connection.inbox.put_nowait(OversizedFrame(size, head))
        await _json(send, 413, _too_large(request_id, size, self.limits.max_message))

    async def _initialize(self, body: bytes, message: dict[str, Any], send: Send) -> None:
        key = id_key(message.get("id"))
        if key is None:
            await _json(send, 400, _error(None, -32600, "Initialize needs a string or number id"))
            return
        if self._full():
            await _text(send, 503, "The server takes no more connections now")
            return
        connection = _HttpConnection(self, str(uuid.uuid4()), key)
        assert connection.initial is not None
        answer = connection.initial[1]
        self._offer(connection)
        connection.inbox.put_nowait(body)
        try:
            response = await asyncio.wait_for(answer, self.limits.stall_timeout)
        except (ConnectionClosed, TimeoutError):
            connection.expire("initialize was not answered")
            await _json(
                send, 500, _error(message["id"], -32603, "Initialize failed: the agent did not answer")
            )
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"acp-connection-id", connection.connection_id.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": response})

    async def _get(self, headers: Mapping[str, str], receive: Receive, send: Send) -> None:
        if "text/event-stream" not in headers.get("accept", "").lower():
            await _text(send, 406, "Not acceptable: GET opens an event stream (Accept: text/event-stream)")
            return
        connection_id = headers.get(CONNECTION_HEADER)
        if connection_id is None:
            await _text(send, 400, "Missing Acp-Connection-Id")
            return
        connection = self._connections.get(connection_id)
        if not isinstance(connection, _HttpConnection):
            await _text(send, 404, "Unknown Acp-Connection-Id: the connection has ended")
            return
        await connection.stream(headers.get(SESSION_HEADER), receive, send)

    async def _delete(self, headers: Mapping[str, str], send: Send) -> None:
        connection_id = headers.get(CONNECTION_HEADER)
        connection = self._connections.get(connection_id) if connection_id is not None else None
        if connection is None:
            await _text(send, 404, "Unknown Acp-Connection-Id")
            return
        connection.expire("the client ended it", vanished=False)
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})


class Servable(Protocol):
    """What :class:`RemoteServer` serves: a builder or an agent app (anything with ``serve(listener)``)."""

    def serve(self, target: Any) -> Awaitable[None]:
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
    ``ssl_certfile`` and ``ssl_keyfile`` for TLS.
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
        uvicorn: Mapping[str, Any] | None = None,
    ) -> None:
        if not is_loopback(host) and token is None and not insecure:
            raise ValueError(
                f"Binding {host} exposes the agent to the network: give a token (clients send it as "
                "Authorization: Bearer <token>), or insecure=True if the network is trusted"
            )
        self.listener = RemoteListener(token=token, allowed_origins=allowed_origins, limits=limits)
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

    async def close(self) -> None:
        """Stop: end every connection, stop accepting, shut uvicorn down."""
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

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


async def serve_remote(agent: Servable, **options: Any) -> None:
    """Serve ``agent`` over HTTP and WebSocket until cancelled; ``options`` as :class:`RemoteServer`'s."""
    async with RemoteServer(agent, **options) as server:
        await server.wait_closed()


# -- HTTP helpers ------------------------------------------------------------------------------------


def _answers(message: dict[str, Any], key: str) -> bool:
    return "method" not in message and id_key(message.get("id")) == key


class _RefusalIsNoError(logging.Filter):
    """Drops uvicorn's error for a WebSocket handshake refused with an HTTP answer.

    uvicorn's websockets (sans-I/O) protocol logs "returned without completing handshake" after a
    ``websocket.http.response`` denial, although the answer was sent: the refusal is logged by acpio.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "ASGI callable returned without completing handshake."


def _unknown_path(scope: Scope) -> tuple[int, str] | None:
    """``404`` for any path but the endpoint, ``/`` under the root path the listener is mounted at."""
    path, root = scope["path"], scope.get("root_path", "")
    if root and path.startswith(root):  # uvicorn and Starlette's Mount keep the root in the path
        path = path[len(root) :]
    if path in ("", "/"):
        return None
    return 404, f"Not found: {scope['path']}. The ACP endpoint is {root}/ (Streamable HTTP and WebSocket)"


def _headers(scope: Scope) -> dict[str, str]:
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]}


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _read_body(receive: Receive, limit: int) -> tuple[bytes, int]:
    """The request body, or ``(start, size)`` when it is over ``limit``: its first bytes only."""
    chunks: list[bytes] = []
    size = 0
    while True:
        event = await receive()
        if event["type"] == "http.disconnect":
            return b"".join(chunks), size
        chunk = event.get("body", b"")
        size += len(chunk)
        if size <= limit:
            chunks.append(chunk)
        elif len(chunks) != 1 or len(chunks[0]) > _HEAD_SIZE:
            chunks = [head_of(b"".join(chunks) + chunk)]  # over the limit: counted, only its start kept
        if not event.get("more_body", False):
            return b"".join(chunks), size


def _error(request_id: object, code: int, message: str, data: object = None) -> bytes:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error})


def _too_large(request_id: object, size: int, limit: int) -> bytes:
    return _error(
        request_id,
        -32600,
        "Message too large",
        {"reason": "message too large", "size": size, "limit": limit},
    )


async def _json(send: Send, status: int, body: bytes) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": body})


async def _text(send: Send, status: int, text: str, extra: Iterable[tuple[bytes, bytes]] = ()) -> None:
    headers = [(b"content-type", b"text/plain; charset=utf-8"), *extra]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": text.encode()})
