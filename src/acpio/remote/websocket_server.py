"""The WebSocket side of the server: each text frame is one JSON-RPC message, both ways."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque

from acpio.errors import ConnectionClosed
from acpio.remote._frames import head_of, parse
from acpio.remote.connections import Connection, Connections, Receive, Scope, Send
from acpio.transports.base import OversizedFrame

__all__ = ["serve_websocket"]

_log = logging.getLogger("acpio.remote")


async def serve_websocket(
    connections: Connections, scope: Scope, receive: Receive, send: Send, refusal: tuple[int, str] | None
) -> None:
    """Serve one WebSocket until either side ends it (``refusal``: the status and why, when it is refused)."""
    event = await receive()
    if event["type"] != "websocket.connect":
        return
    busy = connections.refusal()
    if refusal is None and busy is not None:
        refusal = (503, busy)
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
        else:  # 1013: try again later; 1008: refused by policy
            await send({"type": "websocket.close", "code": 1013 if refusal[0] == 503 else 1008})
        return
    connection_id = str(uuid.uuid4())
    await send({"type": "websocket.accept", "headers": [(b"acp-connection-id", connection_id.encode())]})
    connection = _WebSocketConnection(connections, connection_id, send)
    connections.offer(connection)
    await connection.run(receive)


class _WebSocketConnection(Connection):
    """One WebSocket connection: a text frame per message, both ways."""

    def __init__(self, owner: Connections, connection_id: str, asgi_send: Send) -> None:
        super().__init__(owner, connection_id)
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
        if self.turns and b'"method"' not in frame:  # an answer, maybe to a prompt (updates are skipped)
            message = parse(frame)
            if message is not None and "method" not in message:
                self.answered(message.get("id"))

    def _note_prompt(self, data: bytes) -> None:
        message = parse(data)
        if message is not None and message.get("method") == "session/prompt" and "id" in message:
            self.prompted(message["id"])

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
                    if b"session/prompt" in data:
                        self._note_prompt(data)
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
