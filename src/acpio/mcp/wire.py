"""The MCP-over-ACP wire: the ``mcp/message`` method, its binding error codes and its envelope.

What the schema (``MessageMcpRequest``, ``MessageMcpResponse``, ``MessageMcpNotification``,
``McpError``) and the official TypeScript SDK agree on:

* a request ``{"serverId", "requestId", "method", "params"?}`` carries one inner MCP request of the
  stateless revision 2026-07-28 (every inner ``params._meta`` names the protocol version and the
  caller's client capabilities; there is no ``initialize``);
* its successful outer response carries exactly one inner outcome, ``{"result": ...}`` or
  ``{"error": {"code", "message", "data"?}}``;
* a notification with the same routing fields carries an inner notification of an active request
  (progress, subscription updates) from the provider to the consumer;
* outer errors are the binding's own (:data:`BINDING_ERRORS`), never an inner MCP error.

This module needs nothing of the ``mcp`` package.
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "BACKEND_FAILED",
    "BINDING_ERRORS",
    "CLIENT_CAPABILITIES_META",
    "CLIENT_INFO_META",
    "INVALID_PARAMS",
    "MCP_MESSAGE",
    "MCP_PROTOCOL_VERSION",
    "PROTOCOL_VERSION_META",
    "REQUEST_CANCELLED",
    "RESOURCE_LIMIT",
    "SERVER_UNAVAILABLE",
    "Envelope",
    "parse_envelope",
]

#: The ACP method that carries MCP requests (consumer to provider) and their notifications (back).
MCP_MESSAGE: Final = "mcp/message"
#: The inner MCP revision of the binding: stateless, no ``initialize`` handshake.
MCP_PROTOCOL_VERSION: Final = "2026-07-28"
#: Inner ``params._meta`` key naming the request's MCP protocol version.
PROTOCOL_VERSION_META: Final = "io.modelcontextprotocol/protocolVersion"
#: Inner ``params._meta`` key carrying the caller's MCP client capabilities.
CLIENT_CAPABILITIES_META: Final = "io.modelcontextprotocol/clientCapabilities"
#: Inner ``params._meta`` key carrying the caller's MCP client info (optional).
CLIENT_INFO_META: Final = "io.modelcontextprotocol/clientInfo"

#: Outer: a malformed envelope, or a ``(serverId, requestId)`` pair that is already active.
INVALID_PARAMS: Final = -32602
#: Outer: the caller cancelled the request (``$/cancel_request``), or its server went away.
REQUEST_CANCELLED: Final = -32800
#: Outer: the server already serves as many requests as its limit allows.
RESOURCE_LIMIT: Final = -33000
#: Outer: no server with that ``serverId`` is served on this connection (any more).
SERVER_UNAVAILABLE: Final = -33001
#: Outer: the server failed without producing an MCP outcome (its lifespan failed to start...).
BACKEND_FAILED: Final = -33002

#: The outer error codes the binding reserves, with what each means.
BINDING_ERRORS: Final = {
    INVALID_PARAMS: "bad envelope or duplicate active (serverId, requestId)",
    REQUEST_CANCELLED: "cancelled",
    RESOURCE_LIMIT: "resource limit exceeded",
    SERVER_UNAVAILABLE: "server unavailable",
    BACKEND_FAILED: "backend failure",
}


class Envelope:
    """The routing fields of one ``mcp/message`` request or notification, checked."""

    __slots__ = ("method", "params", "request_id", "server_id")

    def __init__(self, server_id: str, request_id: str, method: str, params: dict[str, Any] | None) -> None:
        self.server_id = server_id
        self.request_id = request_id
        self.method = method
        self.params = params

    def __repr__(self) -> str:
        return f"Envelope({self.server_id!r}, {self.request_id!r}, {self.method!r})"


def parse_envelope(params: object) -> Envelope | str:
    """The envelope in ``params``, or what is wrong with it (the ``-32602`` message)."""
    if type(params) is not dict:
        return "mcp/message params must be an object with serverId, requestId and method"
    server_id = params.get("serverId")
    request_id = params.get("requestId")
    method = params.get("method")
    inner = params.get("params")
    if type(server_id) is not str:
        return f"mcp/message needs a string serverId; got {server_id!r}"
    if type(request_id) is not str:
        return f"mcp/message needs a string requestId; got {request_id!r}"
    if type(method) is not str:
        return f"mcp/message needs a string method (the inner MCP method); got {method!r}"
    if inner is not None and type(inner) is not dict:
        return f"mcp/message params.params must be an object or null; got {type(inner).__name__}"
    return Envelope(server_id, request_id, method, inner)
