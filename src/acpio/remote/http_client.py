"""Connecting over Streamable HTTP: :class:`HttpTransport` (``http://``, ``https://``, on ``httpx``).

Each message is a POST (the first must be ``initialize``); the agent's messages arrive on event
streams: the connection's, opened after ``initialize``, and one per session, opened before the
first POST that names the session and whenever an answer names a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

import httpx
import orjson

from acpio.errors import ConnectionClosed, TransportError
from acpio.remote._frames import (
    CONNECTION_HEADER,
    DEFAULT_MAX_BUFFERED,
    DEFAULT_MAX_MESSAGE,
    SESSION_HEADER,
    Inbox,
    auth_headers,
    head_of,
    id_key,
    parse,
    session_route,
)
from acpio.remote.sending import QueuedSender, SendQueue
from acpio.transports.base import OversizedFrame

__all__ = ["HttpTransport"]

_log = logging.getLogger("acpio.remote")

#: POST answers after which the connection is gone (the TypeScript SDK's list).
_FATAL_STATUSES = frozenset({401, 403, 404, 410})
#: Seconds the session streams may take to end after the connection's stream ended.
_SESSIONS_END_WITHIN = 5.0


class HttpTransport(QueuedSender):
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
            headers=auth_headers(token, headers),
            # The jar itself, not a copy: cookies set on this connection (a load balancer's affinity
            # cookie) are sent by the next one made with the same jar.
            cookies=cookies.jar if cookies is not None else None,
            timeout=httpx.Timeout(open_timeout, read=None),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
        )
        if client is not None and cookies is not None:
            client.cookies = cookies.jar
        self.connection_id: str | None = None
        #: Requests the server refused because the connection had ended there (``404``, ``410``):
        #: it never handled them, so a new connection may send them again (a reconnecting client does).
        self.undelivered: list[bytes] = []
        self._inbox = Inbox(DEFAULT_MAX_BUFFERED)
        self._streams: dict[str | None, asyncio.Task[None]] = {}
        self._ready: dict[str, asyncio.Future[None]] = {}
        #: The session stream each of the agent's requests came on: its answer names that session.
        self._answer_sessions: dict[str, str | None] = {}
        #: Requests posted for a session, not answered yet: failed if the session's stream ends.
        self._pending: dict[str, tuple[str, object]] = {}
        self._sending = SendQueue(self._write, "The HTTP connection is closed")
        super().__init__(self._sending)

    # -- Transport -----------------------------------------------------------------------------------

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next message from the agent; ``None`` once the connection ended."""
        return await self._inbox.get()

    async def aclose(self) -> None:
        """Post what is queued, end the connection (``DELETE``), close the event streams."""
        if self._sending.closed:
            return
        await self._sending.close()
        if self.connection_id is not None and self._sending.failure is None:
            with contextlib.suppress(httpx.HTTPError):
                await self._client.delete(self.url, headers={CONNECTION_HEADER: self.connection_id})
        for task in self._streams.values():
            task.cancel()
        await asyncio.gather(*self._streams.values(), return_exceptions=True)
        self._inbox.end()
        if self._owns_client:
            await self._client.aclose()

    async def abort(self) -> None:
        """Drop every HTTP connection without ending the ACP connection (tests: a client that vanishes)."""
        stopped = self._sending.cancel()
        for task in self._streams.values():
            task.cancel()
        await asyncio.gather(*self._streams.values(), stopped, return_exceptions=True)
        self._inbox.end()
        await self._client.aclose()

    # -- posting -------------------------------------------------------------------------------------

    def _fail(self, failure: TransportError) -> None:
        self._sending.fail(failure)
        self._inbox.end(failure)

    async def _write(self, frame: bytes) -> None:
        try:
            await self._post(frame)
        except httpx.HTTPError as exc:
            self._fail(TransportError(f"Cannot reach the ACP server at {self.url}: {exc}"))

    async def _post(self, frame: bytes) -> None:
        message = parse(frame)
        if self.connection_id is None:
            await self._initialize(frame, message)
            return
        session = session_route(message, self._answer_sessions)
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
        await self._refused(response, frame, message)

    async def _refused(self, response: httpx.Response, frame: bytes, message: dict[str, Any] | None) -> None:
        status = response.status_code
        what = f"The ACP server answered {status}: {response.text[:500]}"
        if status in _FATAL_STATUSES:
            if status in (404, 410) and message is not None and "method" in message and "id" in message:
                self._pending.pop(id_key(message["id"]) or "", None)
                self.undelivered.append(frame)
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
                # The server ends the session streams too, once they carried what was queued (the
                # answer of the turn a draining server let finish): take that before the end.
                sessions = [task for key, task in self._streams.items() if key is not None]
                if sessions:
                    await asyncio.wait(sessions, timeout=_SESSIONS_END_WITHIN)
                self._inbox.end()
            else:
                ended = TransportError(f"The event stream of session {session} ended")
        except httpx.HTTPError as exc:
            ended = TransportError(f"An event stream from the ACP server broke: {exc}")
            # A session's stream that breaks (not one that ends) breaks the connection: its server
            # is gone, and a reconnecting client must learn it now, not after posting more to it.
            if not self._sending.closed:
                self._fail(ended)
        except ConnectionClosed:
            pass  # this end closed
        finally:
            if ready is not None and not ready.done():
                ready.set_exception(ended or TransportError("The session's event stream did not open"))
                ready.exception()  # retrieved here; the poster awaits it too
            if session is not None and not self._sending.closed:
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
                # an inbox already ended (the connection's stream ended first) takes no answer: the
                # end of the connection fails the request
                with contextlib.suppress(ConnectionClosed):
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
                if isinstance(named, str) and named not in self._ready and not self._sending.closed:
                    ready = self._ready[named] = asyncio.get_running_loop().create_future()
                    self._streams[named] = asyncio.ensure_future(self._listen(named, ready))
        await self._inbox.put(frame)
