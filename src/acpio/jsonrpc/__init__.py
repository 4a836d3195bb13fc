"""The JSON-RPC 2.0 engine under every acpio agent, client and proxy.

It knows nothing of ACP beyond "a message's params may carry a ``sessionId``". Its modules, each
importing only those above it in this list (``make lint`` checks it):

* :mod:`~acpio.jsonrpc.tracing`: the hook a tracer (:mod:`acpio.otel`) is told of every message through;
* :mod:`~acpio.jsonrpc.dispatch_lock`: the fair lock the chain runs under, taken by a plain call when free;
* :mod:`~acpio.jsonrpc.messages`: decode a frame's envelope, build outgoing frames (no I/O);
* :mod:`~acpio.jsonrpc.pending`: ids, requests in flight both ways, cancel flags (no I/O);
* :mod:`~acpio.jsonrpc.typed`: typed messages: method, params validation, result parsing, :data:`UNSET`;
* :mod:`~acpio.jsonrpc.dispatch`: incoming messages (:class:`Dispatch`), :class:`Handler`, :class:`Unhandled`;
* :mod:`~acpio.jsonrpc.parking`: messages waiting for a handler added later, within :class:`ParkingLimits`;
* :mod:`~acpio.jsonrpc.role`: :class:`Role`, who one side is;
* :mod:`~acpio.jsonrpc.responses`: :class:`Responder`, :class:`SentRequest`, :class:`ResponseRouter`,
  and the protocols they need from a connection;
* :mod:`~acpio.jsonrpc.parked_messages`: the messages parked for handlers to come, their limits and timers;
* :mod:`~acpio.jsonrpc.chain`: the handler chain, dynamic handlers, replaying parked messages, the fallback;
* :mod:`~acpio.jsonrpc.lifecycle`: the connection's :class:`Phase`, one transition function;
* :mod:`~acpio.jsonrpc.outbox`: writing frames, requests in flight, answers, backpressure;
* :mod:`~acpio.jsonrpc.incoming`: what each decoded message becomes: a dispatch, a settled request, an answer;
* :mod:`~acpio.jsonrpc.loop`: the dispatch loop that reads and dispatches;
* :mod:`~acpio.jsonrpc.tasks`: the tasks beside it, and whose failure is whose;
* :mod:`~acpio.jsonrpc.ending`: what each way a connection ends does, and its shutdown;
* :mod:`~acpio.jsonrpc.connection`: :class:`Connection`, the handle (``cx``) over all of them;
* :mod:`~acpio.jsonrpc.handlers`: typed request and notification handlers;
* :mod:`~acpio.jsonrpc.builder`: :class:`Builder` and :class:`UntypedRole`.
"""

from acpio.jsonrpc.builder import Builder, ServeTarget, Target, UntypedRole, open_transport
from acpio.jsonrpc.chain import DynamicHandlerRegistration
from acpio.jsonrpc.connection import Connection
from acpio.jsonrpc.dispatch import (
    Dispatch,
    DispatchFunction,
    DispatchHandler,
    Forward,
    Handler,
    NotificationDispatch,
    RequestDispatch,
    ResponseDispatch,
    Unhandled,
)
from acpio.jsonrpc.handlers import NotificationHandler, RequestHandler
from acpio.jsonrpc.lifecycle import Phase
from acpio.jsonrpc.messages import CANCEL_METHOD, JsonValue, RawJson, RequestId, UntypedMessage
from acpio.jsonrpc.parking import ParkingLimits
from acpio.jsonrpc.responses import Responder, ResponseRouter, SentRequest
from acpio.jsonrpc.role import PeerLike, Role
from acpio.jsonrpc.typed import UNSET, TypedRequest

__all__ = [
    "CANCEL_METHOD",
    "UNSET",
    "Builder",
    "Connection",
    "Dispatch",
    "DispatchFunction",
    "DispatchHandler",
    "DynamicHandlerRegistration",
    "Forward",
    "Handler",
    "JsonValue",
    "NotificationDispatch",
    "NotificationHandler",
    "ParkingLimits",
    "PeerLike",
    "Phase",
    "RawJson",
    "RequestDispatch",
    "RequestHandler",
    "RequestId",
    "Responder",
    "ResponseDispatch",
    "ResponseRouter",
    "Role",
    "SentRequest",
    "ServeTarget",
    "Target",
    "TypedRequest",
    "UntypedMessage",
    "UntypedRole",
    "Unhandled",
    "open_transport",
]
