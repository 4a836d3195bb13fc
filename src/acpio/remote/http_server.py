"""The Streamable HTTP side of the server: POSTs in, event streams out.

``POST`` carries each client message (``initialize`` answers ``200`` with its response and the
``Acp-Connection-Id`` header; every other POST answers ``202``); ``GET`` with ``Accept:
text/event-stream`` opens the connection's event stream (no ``Acp-Session-Id``) or a session's
(with it); ``DELETE`` ends the connection. Messages of a session (updates, the agent's requests,
the answers to the session's requests) go to its stream, the rest to the connection's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from acpio.errors import ConnectionClosed
from acpio.jsonrpc.messages import head_request_id
from acpio.remote._frames import (
    CONNECTION_HEADER,
    SESSION_HEADER,
    SESSION_SCOPED_METHODS,
    head_of,
    id_key,
    parse,
    session_of,
    session_route,
    sse_event,
)
from acpio.remote.connections import Connection, Connections, Receive, Send
from acpio.transports.base import OversizedFrame

__all__ = ["serve_http"]

_log = logging.getLogger("acpio.remote")
_HEAD_SIZE = 200


async def serve_http(
    connections: Connections,
    method: str,
    headers: Mapping[str, str],
    receive: Receive,
    send: Send,
    refusal: tuple[int, str] | None,
) -> None:
    """Answer one HTTP request to the endpoint (``refusal``: the status and why, when it is refused)."""
    if refusal is not None:
        status, text = refusal
        await _text(send, status, text, extra=[(b"www-authenticate", b"Bearer")] if status == 401 else ())
        return
    if method == "POST":
        await _post(connections, headers, receive, send)
    elif method == "GET":
        await _get(connections, headers, receive, send)
    elif method == "DELETE":
        await _delete(connections, headers, send)
    else:
        await _text(send, 405, "Method not allowed: POST, GET (event stream or WebSocket) and DELETE")


async def _post(connections: Connections, headers: Mapping[str, str], receive: Receive, send: Send) -> None:
    content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if content_type != "application/json":
        await _text(send, 415, "Unsupported media type: POST a JSON-RPC message as application/json")
        return
    body, size = await _read_body(receive, connections.limits.max_message)
    if size > connections.limits.max_message:
        await _refuse_too_large(connections, headers, body, size, send)
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
        await _initialize(connections, body, message, send)
        return
    if connection_id is None:
        await _text(send, 400, "Missing Acp-Connection-Id: POST initialize first")
        return
    connection = connections.get(connection_id)
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


async def _refuse_too_large(
    connections: Connections, headers: Mapping[str, str], head: bytes, size: int, send: Send
) -> None:
    """Answer ``413`` (a JSON-RPC error naming the request, when its start shows its id).

    A message that is no request the client waits on also reaches the connection, as the
    :class:`~acpio.transports.OversizedFrame` any transport gives for a line over its limit.
    """
    request_id = head_request_id(head)
    _log.info("Refused a message of %d bytes (limit %d)", size, connections.limits.max_message)
    connection_id = headers.get(CONNECTION_HEADER)
    connection = connections.get(connection_id)
    if request_id is None and isinstance(connection, _HttpConnection) and not connection.closed:
        with contextlib.suppress(ConnectionClosed):
            connection.inbox.put_nowait(OversizedFrame(size, head))
    await _json(send, 413, _too_large_error(request_id, size, connections.limits.max_message))


async def _initialize(connections: Connections, body: bytes, message: dict[str, Any], send: Send) -> None:
    key = id_key(message.get("id"))
    if key is None:
        await _json(send, 400, _error(None, -32600, "Initialize needs a string or number id"))
        return
    refusal = connections.refusal()
    if refusal is not None:
        await _text(send, 503, refusal)
        return
    connection = _HttpConnection(connections, str(uuid.uuid4()), key)
    assert connection.initial is not None
    answer = connection.initial[1]
    connections.offer(connection)
    connection.inbox.put_nowait(body)
    try:
        response = await asyncio.wait_for(answer, connections.limits.stall_timeout)
    except (ConnectionClosed, TimeoutError):
        connection.expire("initialize was not answered")
        await _json(send, 500, _error(message["id"], -32603, "Initialize failed: the agent did not answer"))
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


async def _get(connections: Connections, headers: Mapping[str, str], receive: Receive, send: Send) -> None:
    if "text/event-stream" not in headers.get("accept", "").lower():
        await _text(send, 406, "Not acceptable: GET opens an event stream (Accept: text/event-stream)")
        return
    connection_id = headers.get(CONNECTION_HEADER)
    if connection_id is None:
        await _text(send, 400, "Missing Acp-Connection-Id")
        return
    connection = connections.get(connection_id)
    if not isinstance(connection, _HttpConnection):
        await _text(send, 404, "Unknown Acp-Connection-Id: the connection has ended")
        return
    await connection.stream(headers.get(SESSION_HEADER), receive, send)


async def _delete(connections: Connections, headers: Mapping[str, str], send: Send) -> None:
    connection_id = headers.get(CONNECTION_HEADER)
    connection = connections.get(connection_id)
    if connection is None:
        await _text(send, 404, "Unknown Acp-Connection-Id")
        return
    connection.expire("the client ended it", vanished=False)
    await send({"type": "http.response.start", "status": 202, "headers": []})
    await send({"type": "http.response.body", "body": b""})


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


class _HttpConnection(Connection):
    """One Streamable HTTP connection: POSTs in, event streams out."""

    def __init__(self, owner: Connections, connection_id: str, initialize_id: str) -> None:
        super().__init__(owner, connection_id)
        self._streams: dict[str | None, _Outbox] = {None: _Outbox()}
        #: Where the answer to each of the client's requests goes: its session's stream, or None.
        self._routes: dict[str, str | None] = {}
        self.initial: tuple[str, asyncio.Future[bytes]] | None = (
            initialize_id,
            asyncio.get_running_loop().create_future(),
        )
        self.detached_since = self.last_active

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
        route = session_route(message, self._routes)
        outbox = self._streams.get(route)
        if outbox is None:
            outbox = self._streams[route] = _Outbox()
        outbox.push(frame)
        if self.turns and message is not None and "method" not in message:
            self.answered(message.get("id"))

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
                if message["method"] == "session/prompt":
                    self.prompted(message["id"])
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


def _answers(message: dict[str, Any], key: str) -> bool:
    return "method" not in message and id_key(message.get("id")) == key


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


def _too_large_error(request_id: object, size: int, limit: int) -> bytes:
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
