"""The JSON-RPC 2.0 engine under every acpio agent, client and proxy.

It knows nothing of ACP beyond "a message's params may carry a ``sessionId``". Layers, bottom up:

* :mod:`~acpio.jsonrpc.messages`: decode a frame's envelope, build outgoing frames (no I/O);
* :mod:`~acpio.jsonrpc.pending`: ids, requests in flight both ways, cancel flags (no I/O);
* :mod:`~acpio.jsonrpc.handlers`: the :class:`Handler` protocol, :class:`Unhandled`, typed handlers;
* :mod:`~acpio.jsonrpc.responses`: :class:`Responder`, :class:`ResponseRouter`, :class:`SentRequest`;
* :mod:`~acpio.jsonrpc.parking`: messages waiting for a handler added later, within
  :class:`ParkingLimits`;
* :mod:`~acpio.jsonrpc.connection`: the dispatch loop, sending, closing (:class:`Connection`);
* :mod:`~acpio.jsonrpc.builder`: :class:`Role`, :class:`UntypedRole` and :class:`Builder`.
"""

from acpio.jsonrpc.builder import Builder, Role, UntypedRole, open_transport
from acpio.jsonrpc.connection import Connection
from acpio.jsonrpc.handlers import (
    Dispatch,
    DispatchHandler,
    DynamicHandlerRegistration,
    Handler,
    NotificationDispatch,
    NotificationHandler,
    RequestDispatch,
    RequestHandler,
    ResponseDispatch,
    Unhandled,
)
from acpio.jsonrpc.messages import CANCEL_METHOD, JsonValue, RequestId, UntypedMessage
from acpio.jsonrpc.parking import ParkingLimits
from acpio.jsonrpc.responses import Responder, ResponseRouter, SentRequest

__all__ = [
    "CANCEL_METHOD",
    "Builder",
    "Connection",
    "Dispatch",
    "DispatchHandler",
    "DynamicHandlerRegistration",
    "Handler",
    "JsonValue",
    "NotificationDispatch",
    "NotificationHandler",
    "ParkingLimits",
    "RequestDispatch",
    "RequestHandler",
    "RequestId",
    "Responder",
    "ResponseDispatch",
    "ResponseRouter",
    "Role",
    "SentRequest",
    "UntypedMessage",
    "UntypedRole",
    "Unhandled",
    "open_transport",
]
