"""A raw-wire peer, a frame recorder and a tiny in-process conductor for the role tests.

:class:`MiniConductor` is a one-proxy chain: the client connects to it; it owns a connection to the
proxy (as :class:`~acpio.roles.Conductor`) and one to the agent, and routes like the Rust
conductor: the client's messages go to the proxy as they are (``initialize`` becomes
``proxy/initialize``), the proxy's ``proxy/successor`` envelopes go to the agent unwrapped, its
other messages to the client, and the agent's messages go to the proxy wrapped. With
``legacy=True`` it plays an older conductor: ``_proxy/initialize`` and ``_proxy/successor``,
and only those. Every hop forwards
with ``send_proxied_message``, so answers are paired and cancellation is re-issued hop by hop. The
frames on the conductor<->proxy link are recorded in :attr:`MiniConductor.proxy_wire`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import orjson

from acpio import testing
from acpio.errors import InvalidRequest
from acpio.jsonrpc import (
    CANCEL_METHOD,
    Builder,
    Connection,
    Dispatch,
    NotificationDispatch,
    RequestDispatch,
    Unhandled,
    UntypedMessage,
    UntypedRole,
)
from acpio.roles import LEGACY_PROXY_METHODS, PROXY_METHODS, Conductor, SuccessorEnvelope
from acpio.transports.base import OversizedFrame, Transport
from acpio.transports.channel import Channel

TIMEOUT = 5


class WirePeer(testing.WirePeer):
    """A raw peer that sends notifications and requests without waiting for answers."""

    _next_id = 1000

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, request_id: Any = None) -> int:
        if request_id is None:
            self._next_id += 1
            request_id = self._next_id
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return request_id  # type: ignore[no-any-return]


def serving(builder: Builder) -> AbstractAsyncContextManager[WirePeer]:
    """Serve ``builder``; yield a raw peer on the other end; check a clean end."""
    return testing.serving(builder, WirePeer, timeout=TIMEOUT)


class Recorder:
    """A transport that records every frame it moves, decoded, as ``(direction, message)``."""

    def __init__(self, inner: Transport, log: list[tuple[str, Any]], incoming: str, outgoing: str) -> None:
        self.inner = inner
        self.log = log
        self.incoming = incoming
        self.outgoing = outgoing

    async def receive(self) -> bytes | OversizedFrame | None:
        frame = await self.inner.receive()
        if isinstance(frame, bytes):
            self.log.append((self.incoming, orjson.loads(frame)))
        return frame

    def send(self, frame: bytes) -> None:
        self.log.append((self.outgoing, orjson.loads(frame)))
        self.inner.send(frame)

    async def drain(self) -> None:
        await self.inner.drain()

    async def aclose(self) -> None:
        await self.inner.aclose()


def _retarget(message: Dispatch, method: str, params: Any) -> Dispatch:
    if isinstance(message, RequestDispatch):
        return RequestDispatch(method, params, message.id, message.responder)
    return NotificationDispatch(method, params)


class MiniConductor:
    """A component running ``proxy`` and ``agent`` as a one-proxy chain (see the module docstring)."""

    def __init__(self, proxy: Builder, agent: Builder, *, legacy: bool = False) -> None:
        self.proxy = proxy
        self.agent = agent
        #: The names this conductor sends and understands.
        self.names = LEGACY_PROXY_METHODS if legacy else PROXY_METHODS
        #: Frames on the conductor<->proxy link: ``("to proxy", msg)`` / ``("from proxy", msg)``.
        self.proxy_wire: list[tuple[str, Any]] = []
        #: Frames on the conductor<->agent link: ``("to agent", msg)`` / ``("from agent", msg)``.
        self.agent_wire: list[tuple[str, Any]] = []
        self._tasks: list[asyncio.Task[Any]] = []
        self.to_client: Connection | None = None
        self.to_proxy: Connection | None = None
        self.to_agent: Connection | None = None

    def wire(self, direction: str, method: str | None = None) -> list[Any]:
        """The recorded messages on the proxy link in ``direction``, with ``method`` if given."""
        return [
            m for d, m in self.proxy_wire if d == direction and (method is None or m.get("method") == method)
        ]

    async def _serve(self, builder: Builder, transport: Transport) -> Connection:
        ready: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()

        async def main(cx: Connection) -> None:
            ready.set_result(cx)
            await cx.wait_closed()

        self._tasks.append(asyncio.create_task(builder.connect_with(transport, main)))
        return await ready

    async def open(self) -> Transport:
        ours, theirs = Channel.duplex()
        self._tasks.append(asyncio.create_task(self.proxy.serve(theirs)))
        recorded = Recorder(ours, self.proxy_wire, "from proxy", "to proxy")
        self.to_proxy = await self._serve(self._proxy_side(), recorded)
        ours, theirs = Channel.duplex()
        self._tasks.append(asyncio.create_task(self.agent.serve(theirs)))
        recorded = Recorder(ours, self.agent_wire, "from agent", "to agent")
        self.to_agent = await self._serve(self._agent_side(), recorded)
        ours, theirs = Channel.duplex()
        self.to_client = await self._serve(self._client_side(), ours)
        return theirs

    async def wait_finished(self) -> None:
        """Wait until every connection of the chain ended (after the client closed its end)."""
        async with asyncio.timeout(TIMEOUT):
            await asyncio.gather(*self._tasks)

    # --- routing ------------------------------------------------------------------------------

    def _client_side(self) -> Builder:
        app = UntypedRole.builder(name="conductor-upstream")

        @app.on_dispatch
        async def from_client(message: Dispatch, cx: Connection) -> Unhandled | None:
            assert self.to_proxy is not None
            if message.method == CANCEL_METHOD:
                return None  # re-issued hop by hop by the forwarding below
            if isinstance(message, RequestDispatch) and message.method == "initialize":
                sent = self.to_proxy.send_request(UntypedMessage(self.names.initialize, message.params))
                sent.forward_response_to(message.responder)
                return None
            if isinstance(message, RequestDispatch | NotificationDispatch):
                self.to_proxy.send_proxied_message(message)
                return None
            return Unhandled(message)

        @app.on_close
        async def closed(cx: Connection) -> None:
            assert self.to_proxy is not None
            assert self.to_agent is not None
            self.to_proxy.close()
            self.to_agent.close()

        return app

    def _proxy_side(self) -> Builder:
        app = Conductor.builder(name="conductor-to-proxy")

        @app.on_dispatch
        async def from_proxy(message: Dispatch, cx: Connection) -> Unhandled | None:
            assert self.to_client is not None
            assert self.to_agent is not None
            if message.method == CANCEL_METHOD:
                return None
            if not isinstance(message, RequestDispatch | NotificationDispatch):
                return Unhandled(message)
            if message.method == self.names.successor:
                envelope = SuccessorEnvelope.from_params(message.params)
                if envelope is None:
                    raise InvalidRequest({"reason": f"malformed {self.names.successor} envelope"})
                if envelope.method == self.names.initialize:
                    raise InvalidRequest(
                        {"reason": "initialize/proxy requests are only sent by the conductor"}
                    )
                self.to_agent.send_proxied_message(_retarget(message, envelope.method, envelope.params))
                return None
            self.to_client.send_proxied_message(message)
            return None

        return app

    def _agent_side(self) -> Builder:
        app = UntypedRole.builder(name="conductor-to-agent")

        @app.on_dispatch
        async def from_agent(message: Dispatch, cx: Connection) -> Unhandled | None:
            assert self.to_proxy is not None
            if message.method == CANCEL_METHOD:
                return None
            if not isinstance(message, RequestDispatch | NotificationDispatch):
                return Unhandled(message)
            envelope = SuccessorEnvelope(message.method, message.params).to_params()
            self.to_proxy.send_proxied_message(_retarget(message, self.names.successor, envelope))
            return None

        return app


@asynccontextmanager
async def chain(
    proxy: Builder, agent: Builder, *, legacy: bool = False
) -> AsyncIterator[tuple[MiniConductor, Channel]]:
    """Run ``proxy`` and ``agent`` behind a :class:`MiniConductor`; yield it and the client's end."""
    conductor = MiniConductor(proxy, agent, legacy=legacy)
    end = await conductor.open()
    assert isinstance(end, Channel)
    try:
        yield conductor, end
    finally:
        await end.aclose()
        await conductor.wait_finished()
