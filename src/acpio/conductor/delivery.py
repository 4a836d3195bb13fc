"""Delivering a conductor run's messages into their lanes: over each hop's connection, or as bytes.

The run (:mod:`acpio.conductor.chain`) reads what each side sends and decides where it goes, by
routing index: :data:`CLIENT` (the conductor's predecessor), then the components ``0, 1, ...``;
in proxy mode index ``count`` is the conductor's own successor, reached through the upstream
connection. :class:`Delivery` sends it there: :meth:`Delivery.deliver` through the target's
connection (wrapped in ``proxy/successor`` for a proxy that hears from its successor,
``initialize`` renamed for a proxy, a request forwarded with the hop's own id and its answer sent
back), :meth:`Delivery.pass_on` as bytes spliced into the target's frame, past the connections
(:mod:`acpio.conductor.relay`). Both record the trace.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from acpio.errors import AcpError, InternalError, RequestError
from acpio.jsonrpc import CANCEL_METHOD, Connection, Dispatch, RequestDispatch, Role
from acpio.jsonrpc.tracing import installed_tracer
from acpio.roles import LEGACY_PROXY_METHODS, PROXY_METHODS, Agent, Client, ProxyMethods, proxy_methods_of
from acpio.roles import SuccessorEnvelope as Envelope

from .batches import Gathering
from .inflight import InFlight
from .legacy import retry_as_legacy
from .links import ComponentLinks
from .relay import RawNotification, plain_frame, wrapped_frame
from .run_state import RunState
from .tracing import ChainTrace

__all__ = ["CLIENT", "INITIALIZE", "INITIALIZE_METHODS", "UPSTREAM", "Delivery"]

_log = logging.getLogger("acpio.conductor")

INITIALIZE: Final = "initialize"
#: Every name a component can be initialized with: ``initialize`` and both names of ``proxy/initialize``.
INITIALIZE_METHODS: Final = frozenset(
    {INITIALIZE, *(m.initialize for m in (PROXY_METHODS, LEGACY_PROXY_METHODS))}
)
#: Methods the conductor acts on, never passed on as bytes (:meth:`Delivery.pass_on`).
_NOT_PASSED_ON: Final = frozenset(
    {CANCEL_METHOD, *INITIALIZE_METHODS, *(m.successor for m in (PROXY_METHODS, LEGACY_PROXY_METHODS))}
)
#: The index of the client (the conductor's predecessor) in routing; components are 0, 1, ...
CLIENT: Final = -1
#: The link key of the upstream connection (the client, and in proxy mode the successor too).
UPSTREAM: Final = -1

_CLIENT_PEER: Final = Client()
_AGENT_PEER: Final = Agent()


class Delivery:
    """Where each routing index of one run is reached, and the sending of messages there.

    The run sets the upstream connection (:attr:`up`, :attr:`up_out`) and, once the chain is up, the
    lanes (:attr:`count`, :attr:`lanes`). ``state`` is the run's :class:`RunState`, which the run
    alone writes: whether notifications may pass as bytes is read from it (:meth:`pass_on`), and
    its failure, if the run broke, is what a request that cannot be forwarded any more is answered with.
    """

    def __init__(
        self,
        agent_mode: bool,
        links: ComponentLinks,
        trace: ChainTrace | None,
        in_flight: InFlight,
        state: RunState,
    ) -> None:
        self.agent_mode = agent_mode
        self.links = links
        self.trace = trace
        self.in_flight = in_flight
        self._state = state
        self.up: Connection | None = None
        #: The upstream transport, for notifications passed on as bytes (:meth:`pass_on`).
        self.up_out: Gathering | None = None
        #: The number of proxies; index ``count`` is the agent (agent mode) or the successor.
        self.count = 0
        self.lanes: list[str] = []
        #: Whether the engine traces (``acpio.otel``): notifications then take each hop's connection,
        #: which records them and carries the trace context on, instead of the bytes path.
        self.traced = installed_tracer() is not None

    def lane(self, index: int) -> str:
        """The lane of routing index ``index``, as traces and errors name it."""
        if index == CLIENT:
            return "Client"
        return self.lanes[index]

    def _link_of(self, index: int) -> int:
        """The link a routing index is reached through (the client and the successor share upstream)."""
        if index == CLIENT or (index == self.count and not self.agent_mode):
            return UPSTREAM
        return index

    def pass_on(self, source: int, note: RawNotification) -> Gathering | None:
        """Route a notification from ``source`` as bytes, as :meth:`deliver` would send it; where it went.

        ``None`` leaves it to the connection (see :mod:`acpio.conductor.relay`): before the chain
        is up, once it broke or began to close (the connections stop reading), while
        :attr:`traced`, for the methods the conductor acts on, for an envelope from anyone but a
        proxy, and for what goes to the conductor's own successor (wrapped by the upstream role).
        """
        state = self._state
        if (
            not state.instantiated
            or state.closing
            or state.failure is not None
            or self.traced
            or note.method in _NOT_PASSED_ON
        ):
            return None
        if note.successor is None:
            target = 0 if source == CLIENT else source - 1
        elif 0 <= source < self.count:
            target = source + 1
        else:
            return None
        if target == CLIENT:
            cx, out, wrap = self.up, self.up_out, None
        elif target < self.count or self.agent_mode:
            link = self.links[target]
            cx, out = link.cx, link.out
            wrap = (
                (link.methods or PROXY_METHODS).successor if source > target and target < self.count else None
            )
        else:
            return None
        if cx is None or out is None or cx.closed:
            return None
        if note.successor is not None:
            self.links[source].methods = proxy_methods_of(note.successor)
        try:
            out.forward(plain_frame(note) if wrap is None else wrapped_frame(note, wrap))
        except AcpError as exc:  # closed meanwhile: dropped, as deliver drops it
            _log.debug("Dropping %r for %s: %s", note.method, self.lane(target), exc)
            return out
        trace = self.trace
        if trace is not None:
            lanes = self.lanes
            trace.notification(
                "Client" if source == CLIENT else lanes[source],
                "Client" if target == CLIENT else lanes[target],
                note.method,
                note.params,
                note.params_json,
            )
        return out

    def deliver(
        self, source: int, target: int, message: Dispatch, method: str, params: Any
    ) -> Connection | None:
        """Send ``method``/``params`` (the logical message) from ``source`` into ``target``.

        Returns the connection a notification was sent on, for the caller to drain; else ``None``.
        """
        peer: Role | None = None
        wrap: ProxyMethods | None = None
        fall_back = False
        if target == CLIENT:
            cx = self.up
            key = UPSTREAM
            if not self.agent_mode:
                peer = _CLIENT_PEER
        elif target < self.count or self.agent_mode:
            cx = self.links[target].cx
            key = target
            if target < self.count:
                known = self.links[target].methods
                if source > target:
                    wrap = known or PROXY_METHODS
                elif method == INITIALIZE:
                    method = (known or PROXY_METHODS).initialize
                    fall_back = known is None  # an older proxy may refuse it: see retry_as_legacy

        else:  # proxy mode: the conductor's own successor, wrapped by the upstream connection's role
            cx = self.up
            key = UPSTREAM
            peer = _AGENT_PEER
        assert cx is not None
        wire_method, wire_params = (
            (wrap.successor, Envelope(method, params).to_params()) if wrap is not None else (method, params)
        )
        trace = self.trace
        if type(message) is not RequestDispatch:
            try:
                cx.send_notification_to(peer, wire_method, wire_params)
            except AcpError as exc:
                _log.debug("Dropping %r for %s: %s", method, self.lane(target), exc)
                return None
            if trace is not None:
                trace.notification(self.lane(source), self.lane(target), method, params)
            return cx
        assert isinstance(message, RequestDispatch)
        try:
            sent = cx.send_request_to(peer, wire_method, wire_params)
        except AcpError as exc:
            message.responder.respond_with_error(self._unreachable(target, method, exc))
            return None
        if fall_back:
            retry_as_legacy(
                sent,
                message,
                self.links[target],
                lambda: self._state.failure is not None,
                lambda: self.deliver(source, target, message, INITIALIZE, params),
            )
        else:
            sent.forward_response_to(message.responder)
        self.in_flight.forwarded_as(self._link_of(source), message.id, sent)
        if trace is not None:
            trace.request(key, sent.id, self.lane(source), self.lane(target), method, params)
        return None

    def _unreachable(self, target: int, method: str, exc: AcpError) -> RequestError:
        failure = self._state.failure
        if failure is not None:
            return failure.to_request_error()
        name = "the client" if target == CLIENT else f"{self.lane(target)}"
        if 0 <= target < len(self.links):
            name = f"the {self.links[target].kind} {self.links[target].name!r} ({self.lane(target)})"
        return InternalError(
            {"lane": self.lane(target), "reason": str(exc)},
            message=f"Cannot forward {method!r} to {name}: {exc}",
        )
