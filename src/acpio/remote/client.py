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

import asyncio
import contextlib
import logging
import random
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx
import orjson
import websockets
from websockets.asyncio.client import ClientConnection

from acpio.errors import ConnectionClosed, TransportError
from acpio.remote._frames import (
    CONNECTION_HEADER,
    DEFAULT_MAX_BUFFERED,
    DEFAULT_MAX_MESSAGE,
    SESSION_HEADER,
    Inbox,
    head_of,
    id_key,
    parse,
    session_of,
)
from acpio.transports.base import OversizedFrame, Transport

__all__ = ["HttpTransport", "ReconnectingTransport", "RemoteAgent", "WebSocketTransport", "is_remote_url"]

_log = logging.getLogger("acpio.remote")

#: POST answers after which the connection is gone (the TypeScript SDK's list).
_FATAL_STATUSES = frozenset({401, 403, 404, 410})
_CLOSE_TIMEOUT = 5.0


def is_remote_url(text: str) -> bool:
    """Whether ``text`` names a remote agent (``http(s)://`` or ``ws(s)://``) rather than a command."""
    return text.split("://", 1)[0].lower() in {"http", "https", "ws", "wss"} and "://" in text


def _auth_headers(token: str | None, headers: Mapping[str, str] | None) -> dict[str, str]:
    merged = dict(headers or {})
    if token is not None:
        merged["Authorization"] = f"Bearer {token}"
    return merged


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
        self._headers = _auth_headers(token, headers)
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


class WebSocketTransport:
    """A WebSocket to an ACP server: each text frame is one message, both ways.

    Make one with :meth:`connect`. A frame over ``max_line`` bytes arrives as an
    :class:`~acpio.transports.OversizedFrame`. The socket sends pings (every 20 s) so that a peer
    gone silent is noticed.
    """

    def __init__(self, socket: ClientConnection, *, max_line: int = DEFAULT_MAX_MESSAGE) -> None:
        self.max_line = max_line
        self._socket = socket
        self._outgoing: deque[bytes] = deque()
        self._queued = 0
        self._closed = False
        self._failure: TransportError | None = None
        self._idle = asyncio.Event()
        self._idle.set()
        self._wake: asyncio.Future[None] | None = None
        self._writer = asyncio.ensure_future(self._write())

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
        sent = _auth_headers(token, headers)
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

    def send(self, frame: bytes) -> None:
        """Queue a message."""
        if self._closed or self._failure is not None:
            raise ConnectionClosed("The WebSocket is closed")
        self._outgoing.append(frame)
        self._queued += len(frame)
        self._idle.clear()
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    def statistics(self) -> dict[str, int]:
        """``queued``: bytes sent and not yet handed to the socket."""
        return {"queued": self._queued}

    async def drain(self) -> None:
        """Wait until what was sent is written; raises ``TransportError`` if the socket broke."""
        await self._idle.wait()
        if self._failure is not None:
            raise self._failure

    async def _write(self) -> None:
        loop = asyncio.get_running_loop()
        socket = self._socket
        try:
            while True:
                while self._outgoing:
                    frame = self._outgoing.popleft()
                    await socket.send(frame.decode("utf-8", "replace"))
                    self._queued -= len(frame)
                self._idle.set()
                if self._closed:
                    return
                self._wake = loop.create_future()
                await self._wake
                self._wake = None
        except (websockets.ConnectionClosed, websockets.InvalidState) as exc:
            self._failure = TransportError(f"The WebSocket closed while sending: {exc}")
        finally:
            self._outgoing.clear()
            self._queued = 0
            self._idle.set()

    async def aclose(self) -> None:
        """Send what is queued, then close the socket."""
        if self._closed:
            return
        self._closed = True
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._writer), _CLOSE_TIMEOUT)
        self._writer.cancel()
        await self._socket.close()

    def abort(self) -> None:
        """Drop the TCP connection without a closing handshake (tests: a client that vanishes)."""
        transport = self._socket.transport
        transport.abort()


class HttpTransport:
    """Streamable HTTP to an ACP server: a POST per message, event streams for the agent's.

    The first message sent must be ``initialize``. A POST the server refuses fails only its own
    request (which gets an error answer), except ``401``, ``403``, ``404`` and ``410``, which end
    the transport. An event of more than ``max_line`` bytes arrives as an
    :class:`~acpio.transports.OversizedFrame`.
    """

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        token: str | None = None,
        cookies: httpx.Cookies | None = None,
        max_message: int = DEFAULT_MAX_MESSAGE,
        open_timeout: float = 10.0,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self.url = url
        self.max_line = max_message
        self._owns_client = client is None
        self._client = client or httpx.AsyncClient(
            headers=_auth_headers(token, headers),
            # The jar itself, not a copy: cookies set on this connection (a load balancer's affinity
            # cookie) are sent by the next one made with the same jar.
            cookies=cookies.jar if cookies is not None else None,
            timeout=httpx.Timeout(open_timeout, read=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
        )
        if client is not None and cookies is not None:
            client.cookies = cookies.jar
        self.connection_id: str | None = None
        self._inbox = Inbox(DEFAULT_MAX_BUFFERED)
        self._outgoing: deque[bytes] = deque()
        self._queued = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._wake: asyncio.Future[None] | None = None
        self._closed = False
        self._failure: TransportError | None = None
        self._streams: dict[str | None, asyncio.Task[None]] = {}
        self._ready: dict[str, asyncio.Future[None]] = {}
        #: The session stream each of the agent's requests came on: its answer names that session.
        self._answer_sessions: dict[str, str] = {}
        #: Requests posted for a session, not answered yet: failed if the session's stream ends.
        self._pending: dict[str, tuple[str, object]] = {}
        self._writer = asyncio.ensure_future(self._write())

    # -- Transport -----------------------------------------------------------------------------------

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next message from the agent; ``None`` once the connection ended."""
        return await self._inbox.get()

    def send(self, frame: bytes) -> None:
        """Queue a message; they are posted one after the other, in order."""
        if self._closed or self._failure is not None:
            raise ConnectionClosed("The HTTP connection is closed")
        self._outgoing.append(frame)
        self._queued += len(frame)
        self._idle.clear()
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)

    def statistics(self) -> dict[str, int]:
        """``queued``: bytes sent and not yet posted."""
        return {"queued": self._queued}

    async def drain(self) -> None:
        """Wait until every message sent was posted; raises ``TransportError`` once the connection broke."""
        await self._idle.wait()
        if self._failure is not None:
            raise self._failure

    async def aclose(self) -> None:
        """Post what is queued, end the connection (``DELETE``), close the event streams."""
        if self._closed:
            return
        self._closed = True
        wake = self._wake
        if wake is not None and not wake.done():
            wake.set_result(None)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(self._writer), _CLOSE_TIMEOUT)
        self._writer.cancel()
        if self.connection_id is not None and self._failure is None:
            with contextlib.suppress(httpx.HTTPError):
                await self._client.delete(self.url, headers={CONNECTION_HEADER: self.connection_id})
        for task in self._streams.values():
            task.cancel()
        await asyncio.gather(*self._streams.values(), self._writer, return_exceptions=True)
        self._inbox.end()
        if self._owns_client:
            await self._client.aclose()

    async def abort(self) -> None:
        """Drop every HTTP connection without ending the ACP connection (tests: a client that vanishes)."""
        self._closed = True
        self._writer.cancel()
        for task in self._streams.values():
            task.cancel()
        await asyncio.gather(*self._streams.values(), self._writer, return_exceptions=True)
        self._inbox.end()
        await self._client.aclose()

    # -- posting -------------------------------------------------------------------------------------

    def _fail(self, failure: TransportError) -> None:
        if self._failure is None:
            self._failure = failure
        self._inbox.end(failure)

    async def _write(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                while self._outgoing and self._failure is None:
                    frame = self._outgoing[0]
                    await self._post(frame)
                    self._outgoing.popleft()
                    self._queued -= len(frame)
                self._outgoing.clear()
                self._queued = 0
                self._idle.set()
                if self._closed or self._failure is not None:
                    return
                self._wake = loop.create_future()
                await self._wake
                self._wake = None
        except httpx.HTTPError as exc:
            self._fail(TransportError(f"Cannot reach the ACP server at {self.url}: {exc}"))
        finally:
            self._outgoing.clear()
            self._queued = 0
            self._idle.set()

    async def _post(self, frame: bytes) -> None:
        message = parse(frame)
        if self.connection_id is None:
            await self._initialize(frame, message)
            return
        session: str | None = None
        if message is not None:
            if "method" in message:
                session = session_of(message)
            else:
                key = id_key(message.get("id"))
                session = self._answer_sessions.pop(key, None) if key is not None else None
        headers = {"Content-Type": "application/json", CONNECTION_HEADER: self.connection_id}
        if session is not None:
            headers[SESSION_HEADER] = session
            await self._open_session(session)
            if message is not None and "method" in message and "id" in message:
                key = id_key(message["id"])
                if key is not None:
                    self._pending[key] = (session, message["id"])
        response = await self._client.post(self.url, content=frame, headers=headers)
        if response.status_code < 300:
            return
        await self._refused(response, message)

    async def _refused(self, response: httpx.Response, message: dict[str, Any] | None) -> None:
        status = response.status_code
        what = f"The ACP server answered {status}: {response.text[:500]}"
        if status in _FATAL_STATUSES:
            self._fail(TransportError(what))
            return
        if message is None or "method" not in message or "id" not in message:
            _log.warning("A message was refused: %s", what)
            return
        key = id_key(message["id"])
        if key is not None:
            self._pending.pop(key, None)
        body = (
            parse(response.content)
            if response.headers.get("content-type", "").startswith("application/")
            else None
        )
        if body is not None and isinstance(body.get("error"), dict):
            error = body["error"]
        else:
            error = {
                "code": -32603,
                "message": what,
                "data": {"status": status, "body": response.text[:2000]},
            }
        self._inbox.put_nowait(orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}))

    async def _initialize(self, frame: bytes, message: dict[str, Any] | None) -> None:
        if message is None or message.get("method") != "initialize" or "id" not in message:
            self._fail(TransportError("The first message over HTTP must be the initialize request"))
            return
        response = await self._client.post(
            self.url, content=frame, headers={"Content-Type": "application/json"}
        )
        connection_id = response.headers.get(CONNECTION_HEADER)
        if response.status_code != 200 or connection_id is None:
            body = parse(response.content)
            if body is not None and "error" in body and body.get("id") == message["id"]:
                self._inbox.put_nowait(response.content)
            self._fail(
                TransportError(f"initialize was refused ({response.status_code}): {response.text[:500]}")
            )
            return
        self.connection_id = connection_id
        self._streams[None] = asyncio.ensure_future(self._listen(None, None))
        self._inbox.put_nowait(response.content)

    async def _open_session(self, session: str) -> None:
        ready = self._ready.get(session)
        if ready is None:
            ready = self._ready[session] = asyncio.get_running_loop().create_future()
            self._streams[session] = asyncio.ensure_future(self._listen(session, ready))
        with contextlib.suppress(TransportError):
            await ready  # a session stream that cannot open fails that session's requests, not the rest

    # -- event streams -------------------------------------------------------------------------------

    async def _listen(self, session: str | None, ready: asyncio.Future[None] | None) -> None:
        assert self.connection_id is not None
        headers = {"Accept": "text/event-stream", CONNECTION_HEADER: self.connection_id}
        if session is not None:
            headers[SESSION_HEADER] = session
        ended: TransportError | None = None
        try:
            async with self._client.stream("GET", self.url, headers=headers) as response:
                if response.status_code != 200:
                    text = (await response.aread())[:500].decode("utf-8", "replace")
                    ended = TransportError(
                        f"The ACP server refused an event stream ({response.status_code}): {text}"
                    )
                    if session is None or response.status_code in _FATAL_STATUSES:
                        self._fail(ended)
                    return
                if ready is not None and not ready.done():
                    ready.set_result(None)
                await self._read_events(response, session)
            if session is None:
                self._inbox.end()
            else:
                ended = TransportError(f"The event stream of session {session} ended")
        except httpx.HTTPError as exc:
            ended = TransportError(f"An event stream from the ACP server broke: {exc}")
            if session is None and not self._closed:
                self._fail(ended)
        except ConnectionClosed:
            pass  # this end closed
        finally:
            if ready is not None and not ready.done():
                ready.set_exception(ended or TransportError("The session's event stream did not open"))
                ready.exception()  # retrieved here; the poster awaits it too
            if session is not None and not self._closed:
                if self._streams.get(session) is asyncio.current_task():
                    del self._streams[session]
                    self._ready.pop(session, None)
                self._fail_session(session, ended)

    def _fail_session(self, session: str, ended: TransportError | None) -> None:
        """Answer the session's requests in flight with an error: their answers can no longer come."""
        reason = str(ended) if ended is not None else f"The event stream of session {session} ended"
        for key, (owner, request_id) in list(self._pending.items()):
            if owner == session:
                del self._pending[key]
                error = {"code": -32603, "message": reason}
                self._inbox.put_nowait(orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}))

    async def _read_events(self, response: httpx.Response, session: str | None) -> None:
        buffer = bytearray()
        data: list[bytes] = []
        async for chunk in response.aiter_raw():
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", start)) >= 0:
                line = bytes(buffer[start:end])
                start = end + 1
                if line.endswith(b"\r"):
                    line = line[:-1]
                if not line:
                    if data:
                        await self._event(b"\n".join(data), session)
                        data = []
                elif line.startswith(b"data:"):
                    value = line[5:]
                    data.append(value[1:] if value.startswith(b" ") else value)
            del buffer[:start]

    async def _event(self, frame: bytes, session: str | None) -> None:
        if len(frame) > self.max_line:
            await self._inbox.put(OversizedFrame(len(frame), head_of(frame)))
            return
        message = parse(frame)
        if message is not None:
            if "method" in message:
                if session is not None and "id" in message:
                    key = id_key(message["id"])
                    if key is not None:
                        self._answer_sessions[key] = session
            else:
                key = id_key(message.get("id"))
                if key is not None:
                    self._pending.pop(key, None)
                result = message.get("result")
                named = result.get("sessionId") if isinstance(result, dict) else None
                if isinstance(named, str) and named not in self._ready and not self._closed:
                    ready = self._ready[named] = asyncio.get_running_loop().create_future()
                    self._streams[named] = asyncio.ensure_future(self._listen(named, ready))
        await self._inbox.put(frame)


class ReconnectingTransport:
    """A remote connection that survives its server: reconnects, then resumes the sessions it had.

    ``connect()`` opens a new underlying transport (what :meth:`RemoteAgent.open` returns when
    ``reconnect=True``). When the connection breaks, the requests in flight are answered with an
    error (``-32603``: ACP v1 does not replay messages in flight, so their answers are lost), and it
    reconnects with jittered exponential backoff (``base_delay`` doubling up to ``max_delay``, for
    ``give_up_after`` seconds). On the new connection it sends the same ``initialize``, then
    continues each session opened before: ``session/resume`` when the agent advertises it, else
    ``session/load`` (its replayed history is not passed on: the client has seen it). Messages sent
    meanwhile wait and go out after that. The client code sees none of it but the failed requests.
    """

    def __init__(
        self,
        connect: Callable[[], Awaitable[Transport]],
        first: Transport,
        *,
        base_delay: float = 0.2,
        max_delay: float = 5.0,
        give_up_after: float = 60.0,
    ) -> None:
        self._connect = connect
        self._inner = first
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._give_up_after = give_up_after
        self._closed = False
        self._reconnecting = False
        self._held: deque[bytes] = deque()
        self._local: deque[bytes] = deque()
        #: Requests sent and not answered: their ids, to fail them when the connection breaks.
        self._pending: dict[str, object] = {}
        self._initialize: bytes | None = None
        self._capabilities: dict[str, Any] = {}
        #: What each session was opened with (``cwd``, ``mcpServers``...), by session id.
        self._sessions: dict[str, dict[str, Any]] = {}
        #: session/new requests in flight: their params, by request id, until the answer names the session.
        self._opening: dict[str, dict[str, Any]] = {}
        self._initialize_key: str | None = None
        #: The agent's requests on the current connection not answered yet: an answer to one made
        #: on a connection that broke has nowhere to go.
        self._agent_requests: set[str] = set()
        self.reconnects = 0

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next message; after a break, the errors of the requests lost, then the new connection's."""
        while True:
            if self._local:
                return self._local.popleft()
            try:
                frame = await self._inner.receive()
            except TransportError as exc:
                frame = None
                reason = str(exc)
            else:
                reason = "the server closed the connection"
            if frame is None:
                if self._closed:
                    return None
                await self._recover(reason)
                continue
            if isinstance(frame, bytes):
                self._observe_incoming(frame)
            return frame

    def send(self, frame: bytes) -> None:
        """Send a message (held while reconnecting)."""
        if self._closed:
            raise ConnectionClosed("The remote connection is closed")
        if not self._observe_outgoing(frame):
            _log.debug("Dropped an answer to a request of a connection that broke")
            return
        if self._reconnecting:
            self._held.append(frame)
            return
        try:
            self._inner.send(frame)
        except (ConnectionClosed, TransportError):
            self._held.append(frame)  # the break is noticed by receive(), which reconnects

    async def drain(self) -> None:
        """Wait until what was sent is written (returns at once while reconnecting)."""
        if self._reconnecting:
            return
        with contextlib.suppress(ConnectionClosed, TransportError):
            await self._inner.drain()

    async def aclose(self) -> None:
        """Close for good."""
        self._closed = True
        await self._inner.aclose()

    # -- what crosses ------------------------------------------------------------------------------------

    def _observe_outgoing(self, frame: bytes) -> bool:
        """Note what a message starts; ``False`` for an answer to a request of a broken connection."""
        message = parse(frame)
        if message is None or "id" not in message:
            return True
        key = id_key(message["id"])
        if "method" not in message:
            if key is None or key not in self._agent_requests:
                return key is None
            self._agent_requests.discard(key)
            return True
        if key is None:
            return True
        self._pending[key] = message["id"]
        method, params = message["method"], message.get("params")
        if method == "initialize":
            self._initialize, self._initialize_key = frame, key
        elif method == "session/new" and isinstance(params, dict):
            self._opening[key] = params
        elif method in ("session/load", "session/resume") and isinstance(params, dict):
            session = params.get("sessionId")
            if isinstance(session, str):
                self._sessions[session] = {k: v for k, v in params.items() if k != "sessionId"}
        return True

    def _observe_incoming(self, frame: bytes) -> None:
        message = parse(frame)
        if message is None:
            return
        key = id_key(message.get("id"))
        if key is None:
            return
        if "method" in message:
            self._agent_requests.add(key)
            return
        self._pending.pop(key, None)
        result = message.get("result")
        if key == self._initialize_key and isinstance(result, dict):
            capabilities = result.get("agentCapabilities")
            self._capabilities = capabilities if isinstance(capabilities, dict) else {}
        opened = self._opening.pop(key, None)
        if opened is not None and isinstance(result, dict) and isinstance(result.get("sessionId"), str):
            self._sessions[result["sessionId"]] = opened

    # -- recovering ----------------------------------------------------------------------------------------

    async def _recover(self, reason: str) -> None:
        self._reconnecting = True
        try:
            for request_id in self._pending.values():
                error = {
                    "code": -32603,
                    "message": f"The connection to the agent broke ({reason}): request lost",
                }
                self._local.append(orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}))
            self._pending.clear()
            self._opening.clear()
            self._agent_requests.clear()
            with contextlib.suppress(ConnectionClosed, TransportError, OSError):
                await self._inner.aclose()
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self._give_up_after
            delay = self._base_delay
            while True:
                try:
                    self._inner = await self._connect()
                    await self._handshake()
                    break
                except (TransportError, ConnectionClosed, OSError, _Refused) as exc:
                    if loop.time() + delay > deadline:
                        self._closed = True
                        raise TransportError(
                            f"The connection to the agent broke ({reason}) and reconnecting failed for "
                            f"{self._give_up_after:.0f} s: {exc}"
                        ) from exc
                    _log.info("Reconnecting in %.1f s: %s", delay, exc)
                    await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                    delay = min(delay * 2, self._max_delay)
            self.reconnects += 1
            while self._held:
                self._inner.send(self._held.popleft())
        finally:
            self._reconnecting = False

    async def _handshake(self) -> None:
        if self._initialize is None:
            return  # broke before initialize: nothing to restore
        await self._call(b"initialize", orjson.loads(self._initialize)["params"])
        session_caps = self._capabilities.get("sessionCapabilities")
        resume = isinstance(session_caps, dict) and session_caps.get("resume") is not None
        if not resume and not self._capabilities.get("loadSession"):
            self._sessions.clear()  # nothing to continue them with: their next requests fail
            return
        for session, params in list(self._sessions.items()):
            method = b"session/resume" if resume else b"session/load"
            await self._call(method, {**params, "sessionId": session})

    async def _call(self, method: bytes, params: dict[str, Any]) -> None:
        """Send a request of the reconnection and wait for its answer, passing on nothing meanwhile."""
        request_id = f"acpio-reconnect-{self.reconnects}-{method.decode()}"
        self._inner.send(
            orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method.decode(), "params": params})
        )
        await self._inner.drain()
        while True:
            frame = await self._inner.receive()
            if frame is None:
                raise TransportError(f"The agent closed the connection during {method.decode()}")
            if not isinstance(frame, bytes):
                continue
            message = parse(frame)
            if message is not None and "method" not in message and message.get("id") == request_id:
                if "error" in message:
                    raise _Refused(f"{method.decode()} was refused: {message['error']}")
                return
            # anything else meanwhile (the replayed history of session/load) the client has already seen


class _Refused(Exception):
    """The new server refused part of the reconnection."""
