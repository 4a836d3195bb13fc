"""Tools for testing ACP programs: a typed test client, cassettes, and raw JSON to a connection under test.

* :func:`connect_client` connects a :class:`TestClient` to an agent (in-process or spawned); its
  :class:`Conversation` checks print the conversation when they fail;
* cassettes (:mod:`acpio.trace.cassette`) replay as the agent (:class:`ReplayAgent`, with
  :class:`Faults`) or as the client (:func:`replay_client`, whose :class:`ReplayReport` shows where
  the agent departed from the recording);
* the pytest plugin (:mod:`acpio.testing.plugin`, ``pip install 'acpio[testing]'``) has fixtures for
  all of them (``docs/testing-agents.md``, ``docs/testing-clients.md``);
* :func:`serving` and :class:`WirePeer`, for what only raw JSON can test (malformed input, ids).

Raw JSON::

    async with serving(my_agent_builder) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        answer = await peer.recv()
        assert answer["result"]["protocolVersion"] == 1

Every wait is bounded by the peer's ``timeout``, so a test that expects a frame that never comes
fails instead of hanging.

:func:`check_transport` checks a transport implementation against the
:class:`~acpio.transports.Transport` protocol (order, batching, end of input, a dead peer, oversized
lines, ``drain()`` and backpressure); see "How to add a transport" in ``docs/architecture.md``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, TypeVar, overload

import orjson

from acpio._exports import lazy_exports
from acpio.errors import ConnectionClosed
from acpio.transports.base import OversizedFrame, Transport
from acpio.transports.channel import Channel

if TYPE_CHECKING:  # loaded on first use (acpio replay needs only the replayed agent)
    from acpio.jsonrpc import Builder
    from acpio.testing._transport_check import (
        TRANSPORT_PROPERTIES,
        PairFactory,
        TransportPair,
        TransportReport,
        check_transport,
    )
    from acpio.testing.agent_replay import Faults, ReplayAgent
    from acpio.testing.client import AgentUnderTest, TestClient, TurnResult, connect_client
    from acpio.testing.client_replay import CassetteMismatch, Departure, ReplayReport, replay_client
    from acpio.testing.conversation import Conversation, ConversationError, conversation_lines
    from acpio.testing.matching import Tolerance

__all__ = [
    "TRANSPORT_PROPERTIES",
    "AgentUnderTest",
    "CassetteMismatch",
    "Conversation",
    "ConversationError",
    "Departure",
    "Faults",
    "PairFactory",
    "ReplayAgent",
    "ReplayReport",
    "TestClient",
    "Tolerance",
    "TurnResult",
    "connect_client",
    "conversation_lines",
    "replay_client",
    "TransportPair",
    "TransportReport",
    "WirePeer",
    "check_transport",
    "serving",
]

P = TypeVar("P", bound="WirePeer")


class WirePeer:
    """The far end of a transport, speaking raw JSON frames to the connection under test.

    ``send`` writes a message exactly as given (a dict is encoded, bytes go out untouched, so
    malformed input can be tested); ``recv`` returns the next decoded frame.
    """

    def __init__(self, end: Transport, *, timeout: float = 5.0) -> None:
        self.end = end
        self.timeout = timeout
        self._last_id = 0

    def send(self, message: Any) -> None:
        """Send one frame: bytes as they are, anything else encoded as JSON."""
        self.end.send(message if isinstance(message, bytes) else orjson.dumps(message))

    def request(self, method: str, params: Any = None, request_id: Any = None) -> Any:
        """Send a request (``params`` left out when ``None``); returns its id (1, 2... unless given)."""
        if request_id is None:
            self._last_id += 1
            request_id = self._last_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return request_id

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification (``params`` left out when ``None``)."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)

    def respond(self, request: Any, result: Any) -> None:
        """Answer ``request`` (a received request, or its id) with ``result``."""
        request_id = request["id"] if isinstance(request, dict) else request
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    async def until(self, match: Callable[[Any], bool], seen: list[Any] | None = None) -> Any:
        """The next decoded frame ``match`` accepts; the frames skipped on the way go to ``seen``."""
        while True:
            frame = await self.recv()
            if match(frame):
                return frame
            if seen is not None:
                seen.append(frame)

    async def response_to(self, request_id: Any, seen: list[Any] | None = None) -> Any:
        """The response to our request ``request_id`` (frames before it go to ``seen``)."""
        return await self.until(lambda f: "method" not in f and f.get("id") == request_id, seen)

    async def message_for(self, method: str, seen: list[Any] | None = None) -> Any:
        """The next request or notification for ``method`` (frames before it go to ``seen``)."""
        return await self.until(lambda f: f.get("method") == method, seen)

    async def expect(self, method: str) -> Any:
        """The next frame: a request or notification for ``method``, else ``AssertionError``."""
        frame = await self.recv()
        if not isinstance(frame, dict) or frame.get("method") != method:
            raise AssertionError(f"expected {method!r}, received {frame!r}")
        return frame

    async def recv_raw(self) -> bytes | None:
        """The next frame as bytes; ``None`` once the connection closed its output."""
        async with asyncio.timeout(self.timeout):
            frame = await self.end.receive()
        if isinstance(frame, OversizedFrame):
            raise AssertionError(f"received an oversized frame of {frame.size} bytes")
        return frame

    async def recv(self) -> Any:
        """The next frame, decoded. Raises :class:`ConnectionClosed` if the output ended instead."""
        frame = await self.recv_raw()
        if frame is None:
            raise ConnectionClosed("The connection under test closed its output")
        return orjson.loads(frame)

    async def close(self) -> None:
        """End input for the connection under test."""
        await self.end.aclose()


@overload
def serving(builder: Builder, *, timeout: float = 5.0) -> AbstractAsyncContextManager[WirePeer]: ...
@overload
def serving(
    builder: Builder, peer_class: type[P], *, timeout: float = 5.0
) -> AbstractAsyncContextManager[P]: ...
def serving(
    builder: Builder, peer_class: type[WirePeer] = WirePeer, *, timeout: float = 5.0
) -> AbstractAsyncContextManager[WirePeer]:
    """Serve ``builder`` on one end of an in-process channel; yield a ``peer_class`` on the other.

    On exit the peer closes its end and the served connection must finish within ``timeout``.
    """
    return _serving(builder, peer_class, timeout)


@asynccontextmanager
async def _serving(builder: Builder, peer_class: type[WirePeer], limit: float) -> AsyncIterator[WirePeer]:
    ours, theirs = Channel.duplex()
    task = asyncio.create_task(builder.serve(ours))
    peer = peer_class(theirs, timeout=limit)
    try:
        yield peer
    finally:
        await peer.close()
        async with asyncio.timeout(limit):
            await task


if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
