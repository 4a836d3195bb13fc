"""The provider side: an MCP server of the official ``mcp`` package, served to the agent over ACP.

:class:`McpServer` is what :meth:`acpio.session.SessionBuilder.with_mcp_server` takes. Each session
it is attached to gets a fresh ``serverId`` (declared as ``{"type": "acp", ...}`` in the setup
request) and one handler that serves that id's ``mcp/message`` requests; the handler is removed,
and the calls in flight cancelled, when the session ends.

The older wire (``mcp/connect``, ``mcp/message`` with a ``connectionId``, ``mcp/disconnect``) is
served too, to peers that send it (:mod:`acpio.mcp.legacy`).

Each inner request goes through the ``mcp`` package's own stateless (2026-07-28) pipeline, as its
Streamable HTTP entry does: the envelope in ``params._meta`` is classified, a per-request MCP
connection is made from it, and ``serve_one`` runs the server's handlers and middleware.
"""

from __future__ import annotations

import asyncio
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server import Server
from mcp.server.connection import Connection as McpConnection
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import modern_error_data, serve_one
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import InboundLadderRejection, classify_inbound_request
from mcp.shared.jsonrpc_dispatcher import progress_token_from_params
from mcp.shared.message import MessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import ProgressToken

from acpio.errors import RequestCancelled, RequestError
from acpio.jsonrpc.chain import unowned_context
from acpio.jsonrpc.dispatch import Dispatch, RequestDispatch, Unhandled
from acpio.jsonrpc.messages import UntypedMessage
from acpio.mcp.legacy import CONNECT, DISCONNECT, LegacyConnection
from acpio.mcp.wire import (
    BACKEND_FAILED,
    INVALID_PARAMS,
    MCP_MESSAGE,
    RESOURCE_LIMIT,
    SERVER_UNAVAILABLE,
    Envelope,
    parse_envelope,
)
from acpio.roles import Client, Conductor
from acpio.schema import McpServerAcp, NewSessionRequest

if TYPE_CHECKING:
    from acpio.jsonrpc import Builder, Connection, DynamicHandlerRegistration, PeerLike, Responder

__all__ = ["DEFAULT_MAX_ACTIVE_REQUESTS", "McpServer"]

#: Requests one served server answers at a time unless told otherwise (as the TypeScript SDK).
DEFAULT_MAX_ACTIVE_REQUESTS = 64

#: The session setup requests a proxy adds its servers to (:meth:`McpServer.attach_to_proxy`).
_SETUP_METHODS = frozenset({"session/new", "session/load", "session/resume", "session/fork"})

#: What a served request's MCP handlers see as their transport.
_TRANSPORT = TransportContext(kind="acp", can_send_request=False)


class McpServer:
    """An MCP server written with the official ``mcp`` package, offered to the agent over ACP.

    ``server`` is a high-level ``mcp.server.mcpserver.MCPServer`` (formerly FastMCP) or a low-level
    ``mcp.server.Server``. Give it to :meth:`~acpio.session.SessionBuilder.with_mcp_server`; it
    works alike for ``session/new``, ``/load``, ``/resume`` and ``/fork``, and on a client or a
    proxy connection. The same object may be attached to any number of sessions: each attachment is
    a server of its own on the wire, with a new ``serverId``.

    ``name`` is the declared name (default: the MCP server's own). ``max_active_requests`` bounds
    the requests one attachment serves at a time; one more is refused with ``-33000``.
    """

    __slots__ = ("max_active_requests", "name", "server")

    def __init__(
        self,
        server: Server[Any] | MCPServer[Any],
        *,
        name: str | None = None,
        max_active_requests: int = DEFAULT_MAX_ACTIVE_REQUESTS,
    ) -> None:
        if isinstance(server, MCPServer):
            # MCPServer keeps its low-level Server private; the mcp package's own Client unwraps it
            # the same way to serve it in-process.
            server = server._lowlevel_server  # private-ok: the mcp package has no public accessor
        if not isinstance(server, Server):
            raise TypeError(
                "McpServer() takes an MCP server of the official `mcp` package "
                f"(mcp.server.mcpserver.MCPServer or mcp.server.Server); got {server!r}"
            )
        if max_active_requests < 1:
            raise ValueError(f"max_active_requests must be at least 1; got {max_active_requests}")
        self.server: Server[Any] = server
        self.name = name if name is not None else server.name
        self.max_active_requests = max_active_requests

    def __repr__(self) -> str:
        return f"McpServer({self.name!r})"

    def attach(self, request: NewSessionRequest, cx: Connection) -> list[DynamicHandlerRegistration]:
        """Declare a new ``acp`` server in ``request.mcp_servers`` and serve it on ``cx``."""
        served = _Served(self, f"{self.name}:{uuid.uuid4()}", _servers_of(cx))
        request.mcp_servers.append(McpServerAcp(name=self.name, server_id=served.server_id))
        return [cx.add_dynamic_handler(served)]

    def attach_to_proxy(self, app: Builder[Connection]) -> None:
        """Declare this server in every session set up through the proxy ``app``.

        Each connection of ``app`` serves one instance of the server, for the connection's
        lifetime, under one ``serverId`` declared in each ``session/new``, ``/load``, ``/resume``
        and ``/fork`` the client sends through it (the other handlers of ``app`` then see the
        request with the declaration added).
        """
        declared: weakref.WeakKeyDictionary[Connection, dict[str, Any]] = weakref.WeakKeyDictionary()

        async def declare(message: Dispatch, cx: Connection) -> Unhandled:
            params = message.params
            if (
                message.method not in _SETUP_METHODS
                or not message.is_from(Client)
                or type(params) is not dict
            ):
                return Unhandled(message)
            declaration = declared.get(cx)
            if declaration is None:
                holder = NewSessionRequest(cwd="/", mcp_servers=[])
                for registration in self.attach(holder, cx):
                    registration.run_indefinitely()
                declaration = declared[cx] = holder.mcp_servers[0].to_wire()
            servers = params.get("mcpServers")
            servers = [*servers, declaration] if isinstance(servers, list) else [declaration]
            return Unhandled(UntypedMessage(message.method, {**params, "mcpServers": servers}))

        app.on_dispatch(declare)


# --- per connection -------------------------------------------------------------------------------


class _ConnectionServers:
    """The servers one connection serves, and the ids it served before (answered ``-33001``)."""

    __slots__ = ("live", "retired", "unavailable")

    def __init__(self) -> None:
        self.live: dict[str, _Served] = {}
        self.retired: set[str] = set()
        self.unavailable: DynamicHandlerRegistration | None = None


_by_connection: weakref.WeakKeyDictionary[Connection, _ConnectionServers] = weakref.WeakKeyDictionary()


def _servers_of(cx: Connection) -> _ConnectionServers:
    servers = _by_connection.get(cx)
    if servers is None:
        servers = _by_connection[cx] = _ConnectionServers()
        # A proxy passes requests for servers it never had on to the client, who may serve them.
        passes_on = isinstance(cx.counterpart, Conductor)
        handler = _Unavailable(servers, passes_on)
        servers.unavailable = cx.add_dynamic_handler(handler)
        servers.unavailable.run_indefinitely()
        # The registration refers to the connection: the entry goes when the connection does.
        asyncio.get_running_loop().create_task(_forget(cx), context=unowned_context())
    return servers


async def _forget(cx: Connection) -> None:
    await cx.wait_closed()
    _by_connection.pop(cx, None)


def _server_id_of(message: Dispatch) -> Any:
    params = message.params
    return params.get("serverId") if type(params) is dict else None


def _connection_id_of(message: Dispatch) -> Any:
    params = message.params
    return params.get("connectionId") if type(params) is dict else None


async def _close_then_answer(connection: LegacyConnection, responder: Responder[Any]) -> None:
    await connection.close()
    responder.respond({})


class _Unavailable:
    """Answers ``-33001`` to requests for a server this connection does not serve (any more).

    On the older wire, a request for an MCP connection that is not open is answered ``-32602``.
    """

    __slots__ = ("passes_on", "servers")

    def __init__(self, servers: _ConnectionServers, passes_on: bool) -> None:
        self.servers = servers
        self.passes_on = passes_on

    def accepts(self, message: Dispatch) -> bool:
        if message.method not in (MCP_MESSAGE, CONNECT) or type(message) is not RequestDispatch:
            return False
        connection_id = _connection_id_of(message)
        if connection_id is not None:
            live = any(connection_id in served.connections for served in self.servers.live.values())
            return not live and not self.passes_on
        server_id = _server_id_of(message)
        if server_id in self.servers.live:
            return False
        return server_id in self.servers.retired or not self.passes_on

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        assert isinstance(message, RequestDispatch)
        connection_id = _connection_id_of(message)
        if connection_id is not None:
            message.responder.respond_with_error(
                RequestError(
                    INVALID_PARAMS,
                    f"No MCP connection {connection_id!r} is open on this connection: it was disconnected, "
                    "or its session ended. Open one with mcp/connect.",
                    {"connectionId": connection_id},
                )
            )
            return None
        server_id = _server_id_of(message)
        message.responder.respond_with_error(
            RequestError(
                SERVER_UNAVAILABLE,
                f"MCP server {server_id!r} is not served on this connection: its session ended, or it "
                "was never declared here. Use a serverId from the session's mcpServers.",
                {"serverId": server_id},
            )
        )
        return None


# --- one served server ----------------------------------------------------------------------------


class _Served:
    """The handler of one attachment: one ``serverId``, its requests in flight, its lifespan."""

    __slots__ = ("active", "closed", "connections", "lifespan", "owner", "server_id", "servers", "stopped")

    def __init__(self, owner: McpServer, server_id: str, servers: _ConnectionServers) -> None:
        self.owner = owner
        self.server_id = server_id
        self.servers = servers
        self.active: dict[str, _Call] = {}
        #: The connections peers opened with ``mcp/connect`` (the older wire).
        self.connections: dict[str, LegacyConnection] = {}
        self.closed = False
        self.lifespan: asyncio.Future[Any] | None = None
        self.stopped = asyncio.Event()
        servers.live[server_id] = self

    def __repr__(self) -> str:
        return f"<McpServer {self.server_id!r}>"

    def accepts(self, message: Dispatch) -> bool:
        method = message.method
        if method == MCP_MESSAGE:
            params = message.params
            if type(params) is dict and "connectionId" in params:
                return params["connectionId"] in self.connections
            return bool(_server_id_of(message) == self.server_id)
        if method == CONNECT:
            return bool(_server_id_of(message) == self.server_id)
        return method == DISCONNECT and _connection_id_of(message) in self.connections

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        if message.method != MCP_MESSAGE or _connection_id_of(message) is not None:
            return await self._handle_older_wire(message, cx)
        if type(message) is not RequestDispatch:
            return Unhandled(message)  # notifications go from provider to consumer, never here
        assert isinstance(message, RequestDispatch)
        responder = message.responder
        envelope = parse_envelope(message.params)
        if isinstance(envelope, str):
            responder.respond_with_error(RequestError(INVALID_PARAMS, envelope))
            return None
        if envelope.request_id in self.active:
            responder.respond_with_error(
                RequestError(
                    INVALID_PARAMS,
                    f"MCP request {envelope.request_id!r} is already active on server {self.server_id!r}: "
                    "give each request in flight its own requestId",
                    {"serverId": self.server_id, "requestId": envelope.request_id},
                )
            )
            return None
        limit = self.owner.max_active_requests
        if len(self.active) >= limit:
            responder.respond_with_error(
                RequestError(
                    RESOURCE_LIMIT,
                    f"MCP server {self.server_id!r} already serves {limit} requests; "
                    "retry when one completes",
                    {"serverId": self.server_id, "maxActiveRequests": limit},
                )
            )
            return None
        call = _Call(envelope, responder, message.peer, cx)
        self.active[envelope.request_id] = call
        cx.spawn(self._serve, call)
        return None

    async def _handle_older_wire(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """``mcp/connect``, ``mcp/message`` with a ``connectionId``, ``mcp/disconnect``."""
        responder = message.responder if isinstance(message, RequestDispatch) else None
        if message.method == CONNECT:
            if responder is not None:
                connection = LegacyConnection(self.owner.server, cx, message.peer)
                self.connections[connection.connection_id] = connection
                responder.respond({"connectionId": connection.connection_id})
            return None
        connection = self.connections[_connection_id_of(message)]
        if message.method == DISCONNECT:
            del self.connections[connection.connection_id]
            if responder is not None:
                cx.spawn(_close_then_answer, connection, responder)
            return None
        params = message.params
        assert isinstance(params, dict)  # accepts() saw a connectionId in it
        method, inner = params.get("method"), params.get("params")
        if type(method) is not str or (inner is not None and type(inner) is not dict):
            if responder is not None:
                responder.respond_with_error(
                    RequestError(INVALID_PARAMS, "mcp/message needs a string method and object params")
                )
            return None
        if responder is None:
            connection.notify(method, inner)
        else:
            connection.request(method, inner, responder)
        return None

    def removed(self) -> None:
        """The session ended: refuse new requests, cancel those in flight, end the lifespan."""
        self.closed = True
        self.servers.live.pop(self.server_id, None)
        self.servers.retired.add(self.server_id)
        self.stopped.set()
        for call in list(self.active.values()):
            call.responder.mark_cancelled()
        for connection in self.connections.values():
            asyncio.get_running_loop().create_task(connection.close(), context=unowned_context())
        self.connections.clear()

    async def _serve(self, call: _Call) -> None:
        envelope = call.envelope
        try:
            try:
                state = await self._lifespan_state(call.cx)
            except Exception as exc:
                raise RequestError(
                    BACKEND_FAILED,
                    f"MCP server {self.server_id!r} failed to start (its lifespan raised): {exc}",
                    {"serverId": self.server_id, "details": str(exc), "type": type(exc).__name__},
                ) from exc
            # handlers that watch the mcp package's cancel event see the cancel too
            call.responder.cancel_flag.add_callback(call.context.cancel_requested.set)
            outcome = await call.responder.run_until_cancelled(self._outcome(call, state))
        except RequestCancelled:
            if self.closed:
                raise RequestCancelled(
                    {"serverId": self.server_id, "requestId": envelope.request_id},
                    message="Request cancelled: the session of its MCP server ended",
                ) from None
            raise
        finally:
            call.context.done = True
            del self.active[envelope.request_id]
        call.responder.respond(outcome)

    async def _outcome(self, call: _Call, lifespan_state: Any) -> dict[str, Any]:
        envelope = call.envelope
        route = classify_inbound_request({"method": envelope.method, "params": envelope.params})
        if isinstance(route, InboundLadderRejection):
            error: dict[str, Any] = {"code": route.code, "message": route.message}
            if route.data is not None:
                error["data"] = route.data
            return {"error": error}
        connection = McpConnection.from_envelope(
            route.protocol_version, route.client_info, route.client_capabilities
        )
        call.context.progress_token = progress_token_from_params(envelope.params)
        try:
            result = await serve_one(
                self.owner.server,
                call.context,
                envelope.method,
                envelope.params,
                connection=connection,
                lifespan_state=lifespan_state,
            )
        except Exception as exc:
            data = modern_error_data(exc)
            return {"error": data.model_dump(mode="json", by_alias=True, exclude_none=True)}
        return {"result": result}

    async def _lifespan_state(self, cx: Connection) -> Any:
        if self.lifespan is None:
            self.lifespan = asyncio.get_running_loop().create_future()
            # The lifespan outlives the request that started it: it belongs to no request.
            asyncio.get_running_loop().create_task(self._hold_lifespan(cx), context=unowned_context())
        return await asyncio.shield(self.lifespan)

    async def _hold_lifespan(self, cx: Connection) -> None:
        assert self.lifespan is not None
        server = self.owner.server
        try:
            async with server.lifespan(server) as state:
                self.lifespan.set_result(state)
                ends = [asyncio.ensure_future(self.stopped.wait()), asyncio.ensure_future(cx.wait_closed())]
                try:
                    await asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    for end in ends:
                        end.cancel()
        except Exception as exc:
            if not self.lifespan.done():
                self.lifespan.set_exception(exc)
            else:
                raise


class _Call:
    """One inner request in flight."""

    __slots__ = ("context", "cx", "envelope", "responder")

    def __init__(
        self, envelope: Envelope, responder: Responder[Any], peer: PeerLike | None, cx: Connection
    ) -> None:
        self.envelope = envelope
        self.responder = responder
        self.cx = cx
        self.context = _RequestContext(
            request_id=envelope.request_id, server_id=envelope.server_id, cx=cx, peer=peer
        )


@dataclass
class _RequestContext:
    """The ``mcp`` package's ``DispatchContext`` for one inner request served over ACP.

    Notifications the handlers send for the request (progress, log messages) go back to the
    consumer as ``mcp/message`` notifications carrying the request's ``serverId`` and
    ``requestId``, until the request is answered. Server-to-client requests do not exist at the
    2026-07-28 revision, so the back channel refuses them.
    """

    request_id: str
    server_id: str
    cx: Connection
    peer: PeerLike | None
    progress_token: ProgressToken | None = None
    done: bool = False
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    transport: TransportContext = _TRANSPORT
    message_metadata: MessageMetadata = None
    can_send_request: bool = False

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        if self.done:
            return
        message: dict[str, Any] = {"serverId": self.server_id, "requestId": self.request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        self.cx.send_notification_to(self.peer, MCP_MESSAGE, message)

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        if self.progress_token is None:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify("notifications/progress", params)
