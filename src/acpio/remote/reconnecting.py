"""A remote connection that survives its server: :class:`ReconnectingTransport`."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from acpio.errors import ConnectionClosed, TransportError
from acpio.remote._frames import id_key, parse
from acpio.remote.http_client import HttpTransport
from acpio.transports.base import OversizedFrame, Transport

__all__ = ["ReconnectingTransport"]

_log = logging.getLogger("acpio.remote")


class ReconnectingTransport:
    """A remote connection that survives its server: reconnects, then resumes the sessions it had.

    ``connect()`` opens a new underlying transport (what :meth:`RemoteAgent.open` returns when
    ``reconnect=True``). When the connection breaks, the requests in flight are answered with an
    error (``-32603``: ACP v1 does not replay messages in flight, so their answers are lost), and it
    reconnects with jittered exponential backoff (``base_delay`` doubling up to ``max_delay``, for
    ``give_up_after`` seconds). On the new connection it sends the same ``initialize``, then
    continues each session opened before: ``session/resume`` when the agent advertises it, else
    ``session/load`` (its replayed history is not passed on: the client has seen it). Messages sent
    meanwhile wait and go out after that, and so do the requests the server refused unseen because
    their connection had already ended there (:attr:`HttpTransport.undelivered`: a request posted
    just as a draining server closed its connection). The client code sees none of it but the
    failed requests.
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
            with contextlib.suppress(ConnectionClosed, TransportError, OSError):
                await self._inner.aclose()
            # What the server refused unseen (its connection had ended) goes again on the next one.
            resend = self._inner.undelivered if isinstance(self._inner, HttpTransport) else []
            again = {key for frame in resend if (key := _request_key(frame)) is not None}
            for key, request_id in self._pending.items():
                if key in again:
                    continue
                error = {
                    "code": -32603,
                    "message": f"The connection to the agent broke ({reason}): request lost",
                }
                self._local.append(orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}))
            self._pending = {key: value for key, value in self._pending.items() if key in again}
            self._held.extendleft(reversed(resend))
            self._opening.clear()
            self._agent_requests.clear()
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


def _request_key(frame: bytes) -> str | None:
    message = parse(frame)
    return None if message is None else id_key(message.get("id"))


class _Refused(Exception):
    """The new server refused part of the reconnection."""
