"""MCP servers offered in a session: the registry protocol a session builder takes, and a plain list."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, runtime_checkable

from acpio.jsonrpc import Connection, DynamicHandlerRegistration
from acpio.schema import NewSessionRequest


@runtime_checkable
class McpServerRegistry(Protocol):
    """MCP servers to offer the agent in one session: what :meth:`SessionBuilder.with_mcp_server` takes.

    ``attach`` declares the servers in ``request.mcp_servers`` (appending to the list) and starts
    serving them on ``cx`` (typically with :meth:`~acpio.jsonrpc.Connection.add_dynamic_handler`),
    returning the registrations that serve them. They are active while the session starts, removed
    when the session ends or its setup request fails, and kept for the connection's lifetime when
    the session is handed to proxy mode.

    ``request`` is the ``session/new`` request being prepared. For the other setup methods
    (``session/load``, ``/resume``, ``/fork``) the builder passes a ``session/new`` request with the
    same ``cwd`` and no servers, and copies what ``attach`` declared into the real request: a
    registry declares servers the same way whatever sets the session up.
    """

    def attach(self, request: NewSessionRequest, cx: Connection) -> Iterable[DynamicHandlerRegistration]:
        """Declare the servers in ``request`` and start serving them on ``cx``."""
        ...


class McpServerList:
    """A registry of plain MCP server declarations (stdio, http, sse) that acpio does not serve itself.

    ``McpServerList()`` is the empty registry; ``McpServerList([McpServerStdio(...)])`` appends
    those declarations to the setup request's ``mcpServers`` and registers no handler.
    """

    __slots__ = ("servers",)

    def __init__(self, servers: Iterable[Any] = ()) -> None:
        self.servers: list[Any] = list(servers)

    def __repr__(self) -> str:
        return f"McpServerList({self.servers!r})"

    def attach(self, request: NewSessionRequest, cx: Connection) -> Iterable[DynamicHandlerRegistration]:
        """Append the declarations to ``request.mcp_servers``; nothing to serve."""
        request.mcp_servers.extend(self.servers)
        return ()


# --- what a session reads -------------------------------------------------------------------------
