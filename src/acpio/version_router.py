"""One endpoint, several ACP protocol versions: :class:`VersionRouter`.

The router reads a connection's first frames until a valid ``initialize`` arrives, picks the
protocol version by :func:`acpio.versions.select_version`, and hands the connection over to the
component serving that version, which reads the ``initialize`` and everything after it in order.
Before that it answers on its own, and never closes the connection for a bad first message:

* a notification or a response: ignored;
* another request: ``-32600`` "The first ACP request must be initialize";
* a JSON array (a batch): one ``-32600`` with ``id: null``;
* text that is not JSON, or not JSON-RPC: ``-32700`` or ``-32600`` with ``id: null``;
* ``initialize`` with a missing or bad ``protocolVersion``, or params the chosen version cannot
  read: ``-32602``;
* ``initialize`` for a version no component fits: ``-32022``, data ``{"requested", "supported"}``.

The router validates the ``initialize`` it routes against the chosen version's model, so that a
malformed one (a v2 request without ``info``...) is answered ``-32602`` by the router too. A
failed ``initialize`` leaves the connection unrouted: the client may send another. Once one
succeeds, the connection belongs to its component for good; a repeated ``initialize`` is that
component's to answer (as in the TypeScript SDK's ``AgentProtocolRouter``).

A v2-shaped ``initialize`` (:func:`acpio.versions.is_v2_shaped`: ``info`` and ``capabilities``
rather than v1's ``clientInfo`` and ``clientCapabilities``) routed to a v1 component is converted
to v1's shape: ``info`` becomes ``clientInfo``, and ``capabilities`` the v1 ``clientCapabilities``
of a v2 client (no ``fs`` nor ``terminal``, which v2 does not have; ``auth.terminal`` and
``elicitation`` carried over; boolean config options, baseline in v2, on).
The component always sees the version it serves in ``protocolVersion``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from acpio.errors import InvalidRequest, RequestError
from acpio.jsonrpc.builder import ServeTarget, open_transport, serve_listener
from acpio.jsonrpc.messages import (
    Batch,
    Invalid,
    JsonValue,
    OversizedBatch,
    Request,
    decode,
    encode_error,
    encode_request,
    head_request_id,
)
from acpio.jsonrpc.typed import parse_params
from acpio.transports.base import FrameSink, OversizedFrame, Transport, sink_of
from acpio.transports.channel import Channel, ServedChannel
from acpio.transports.listener import Listener
from acpio.versions import (
    MAX_PROTOCOL_VERSION,
    is_implementation,
    is_v2_shaped,
    requested_version,
    select_version,
    v1_initialize_params,
)

__all__ = ["VersionComponent", "VersionRouter"]

_log = logging.getLogger("acpio.router")


class VersionComponent(Protocol):
    """What serves one protocol version behind a :class:`VersionRouter`: anything with ``serve(transport)``.

    ``Agent.builder()`` builders, :class:`~acpio.AgentApp` and another router qualify. The
    transport it is given starts with the (converted) ``initialize`` request.
    """

    def serve(self, target: Transport) -> Awaitable[None]:
        """Serve the connection on ``target`` until it ends."""
        ...


class VersionRouter:
    """Serves each client with the component of the protocol version it negotiates.

    ::

        router = VersionRouter({1: v1_agent, 2: v2_agent})
        acpio.run(router.serve(Stdio()))   # or RemoteServer(router), Chain.agent(name, [..., router])

    ``components`` maps each version served (1, 2) to what serves it: a builder, an
    :class:`~acpio.AgentApp`, anything with ``serve(transport)``. The router is served like a
    builder: :meth:`serve` takes one transport (or component), or a listener whose every
    connection it routes; :meth:`open` serves it in-process (a conductor's agent, a client in
    tests). See the module docstring for what it answers before ``initialize``.
    """

    def __init__(self, components: Mapping[int, VersionComponent], *, name: str = "router") -> None:
        if not components:
            raise ValueError("VersionRouter needs at least one component: {1: v1_agent, 2: v2_agent}")
        for version, component in components.items():
            if type(version) is not int or not 0 <= version <= MAX_PROTOCOL_VERSION:
                raise ValueError(f"VersionRouter: {version!r} is not an ACP protocol version (1, 2...)")
            if not callable(getattr(component, "serve", None)):
                raise TypeError(
                    f"VersionRouter: the component for version {version} ({component!r}) has no "
                    "serve(transport): give a builder (Agent.builder()), an AgentApp or another router"
                )
        self._components = dict(components)
        #: The versions served, oldest first.
        self.supported: tuple[int, ...] = tuple(sorted(components))
        #: Names the connections' tasks and log lines.
        self.name = name
        self._opened: set[asyncio.Task[None]] = set()

    def __repr__(self) -> str:
        return f"<VersionRouter {self.name!r} versions={list(self.supported)}>"

    async def serve(
        self, target: ServeTarget, *, on_error: Callable[[BaseException], object] | None = None
    ) -> None:
        """Route one connection (a transport or component), or every connection of a listener.

        One connection: returns when its component's serving ends (or the input ends before
        ``initialize``). A listener: as :meth:`acpio.Builder.serve` does, each connection side by
        side until the listener closes; ``on_error`` reports one that fails.
        """
        if isinstance(target, Listener):
            await serve_listener(target, self.route, name=self.name, on_error=on_error)
            return
        if on_error is not None:
            raise TypeError("on_error= is for serving a listener; one connection raises its failure")
        await self.route(await open_transport(target))

    async def open(self) -> Transport:
        """Serve the router in-process and return the transport that talks to it (Component protocol)."""
        ours, theirs = Channel.duplex()
        task = asyncio.get_running_loop().create_task(self.route(ours), name=f"acpio {self.name}")
        self._opened.add(task)
        task.add_done_callback(self._opened.discard)
        return ServedChannel(theirs, task)

    async def route(self, transport: Transport) -> None:
        """Answer ``transport``'s frames until a valid ``initialize``, then hand it to its component.

        The transport is closed when its input ends, reading it fails or this call is cancelled
        before the hand-off; after it, closing it is the component's part.
        """
        try:
            version, first = await self._read_initialize(transport)
        except BaseException:
            with contextlib.suppress(Exception):
                await transport.aclose()
            raise
        if version is None:
            await transport.aclose()
            return
        _log.debug("%s: a client routed to ACP v%d", self.name, version)
        await self._components[version].serve(_Handoff(first, transport))

    async def _read_initialize(self, transport: Transport) -> tuple[int | None, bytes]:
        """The version and the ``initialize`` to hand over; ``(None, b"")`` when the input ended first."""
        while True:
            frame = await transport.receive()
            if frame is None:
                return None, b""
            routed = self._first_frame(frame, transport)
            if routed is not None:
                return routed

    def _first_frame(self, frame: bytes | OversizedFrame, transport: Transport) -> tuple[int, bytes] | None:
        """The version and the frame to hand over, or ``None`` after answering (or ignoring) ``frame``."""
        if isinstance(frame, OversizedFrame):
            error = InvalidRequest(
                {"reason": "message too large", "size": frame.size}, message="Message too large"
            )
            transport.send(encode_error(head_request_id(frame.head), error))
            return None
        message = decode(frame)
        if isinstance(message, Batch | OversizedBatch):
            transport.send(encode_error(None, InvalidRequest(message="JSON-RPC batches are not supported")))
            return None
        if isinstance(message, Invalid):
            if message.answer:
                transport.send(encode_error(None, message.error))
            return None
        if not isinstance(message, Request):
            return None  # a notification, a response, a blank line: nothing waits for an answer yet
        try:
            return self._initialize(message, frame)
        except RequestError as error:
            transport.send(encode_error(message.id, error))
            return None

    def _initialize(self, request: Request, frame: bytes) -> tuple[int, bytes]:
        """Select the version for ``request`` (an ``initialize``); raise the error to answer otherwise."""
        if request.method != "initialize":
            raise InvalidRequest(
                {"method": request.method}, message="The first ACP request must be initialize"
            )
        requested = requested_version(request.params)
        version = select_version(requested, self.supported)
        if version >= 2 and request.id is None:
            raise InvalidRequest(message="ACP v2 request ids must be strings or integers, not null")
        params = request.params
        assert isinstance(params, dict)  # requested_version read it
        if version == requested:
            _check_params(version, params)  # a malformed one leaves the connection unrouted
            return version, frame  # as it came: nothing to convert
        if version == 1:
            params = (
                v1_initialize_params(params) if is_v2_shaped(params) else {**params, "protocolVersion": 1}
            )
        else:  # a newer version than any served: the newest served reads what it knows
            params = {**params, "protocolVersion": version}
            if not is_implementation(params.get("info")):
                params["info"] = _UNKNOWN_INFO
        _check_params(version, params)
        return version, encode_request(request.id, "initialize", params)


def _check_params(version: int, params: dict[str, JsonValue]) -> None:
    """Raise ``-32602`` when ``params`` are no ``initialize`` of ``version`` (1 or 2; others unchecked).

    What :func:`requested_version` checked is all v1's model can refuse (its other fields drop a
    malformed value for their default), and v2's adds only ``info``, a ``name`` and a ``version``
    of strings: params that hold those are taken without the models (no pydantic for a client's
    first message); any others are checked against them, for the model's own error.
    ``tests/router/test_initialize_params.py`` holds the two to the same verdicts.
    """
    if version != 2 or is_implementation(params.get("info")):
        return
    from acpio.schema.v2 import InitializeRequest

    parse_params(InitializeRequest, "initialize", params)


#: The ``info`` of a v2 ``initialize`` whose ``info`` is missing or malformed.
_UNKNOWN_INFO: dict[str, JsonValue] = {"name": "unknown", "version": "unknown"}


class _Handoff:
    """The routed connection's transport: the ``initialize`` the router read, then the rest of the input."""

    __slots__ = ("_first", "_transport")

    def __init__(self, first: bytes, transport: Transport) -> None:
        self._first: bytes | None = first
        self._transport = transport

    async def receive(self) -> bytes | OversizedFrame | None:
        """The ``initialize`` first, then each frame of the connection in order."""
        first = self._first
        if first is not None:
            self._first = None
            return first
        return await self._transport.receive()

    def send(self, frame: bytes) -> None:
        """Queue ``frame`` on the connection."""
        self._transport.send(frame)

    @property
    def frame_sink(self) -> FrameSink:
        """What :meth:`send` hands frames to, in the end: the routed connection sends there directly."""
        return sink_of(self._transport)

    async def drain(self) -> None:
        """Wait until the connection wrote what was queued."""
        await self._transport.drain()

    async def aclose(self) -> None:
        """Close the connection."""
        await self._transport.aclose()

    def statistics(self) -> dict[str, int]:
        """The connection's transport statistics, when it keeps any."""
        statistics: Callable[[], dict[str, int]] | None = getattr(self._transport, "statistics", None)
        return statistics() if statistics is not None else {}
