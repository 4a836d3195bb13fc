"""The polyfill: a proxy that gives ``acp`` MCP servers to an agent that only speaks HTTP MCP.

Placed immediately before such an agent (``acpio conductor agent ... "python -m acpio.mcp.bridge"
"the-agent"``), :func:`mcp_http_bridge`:

* forwards ``initialize`` and, when the agent advertises ``mcpCapabilities.http`` but not ``acp``,
  advertises ``acp`` upstream: the chain can now take ``acp`` declarations (on ACP v2, where every
  capability is an object: ``capabilities.session.mcp.http`` ``{}`` gets ``acp: {}`` beside it);
* rewrites each ``{"type": "acp"}`` declaration of ``session/new``, ``/load``, ``/resume`` and
  ``/fork`` into an ``http`` one pointing at a loopback Streamable HTTP endpoint it serves, one per
  ``serverId``, with a bearer token of that server's own in the ``Authorization`` header (never in
  the URL);
* relays every HTTP MCP request the agent posts there as one ``mcp/message`` request towards the
  client, and its outcome back as the HTTP response; the provider's notifications for it (progress)
  turn the response into an event stream. Closing the HTTP response cancels the ``mcp/message``
  request (``$/cancel_request``).

Like the official TypeScript SDK's ``McpOverAcpHttpBridge``, the endpoint speaks the stateless MCP
revision 2026-07-28: one JSON-RPC request per POST, no GET stream. It also takes the 2025
``initialize`` handshake most agents' MCP clients open with: the answer comes from the server's
``server/discover``, the client gets an ``Mcp-Session-Id``, and each request of that session is
relayed with the 2026-07-28 envelope (the session's client capabilities and info) added.
Request bodies are bounded (``max_body_bytes``, else ``413``) and so are the requests in flight
(``max_active_requests``, else ``429`` with ``-33000``). An agent that already advertises ``acp``
gets everything unchanged.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import secrets
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, TypeGuard

import orjson

from acpio import running
from acpio.errors import AcpError, RequestError
from acpio.jsonrpc.dispatch import Dispatch, Forward, NotificationDispatch, RequestDispatch, Unhandled
from acpio.jsonrpc.messages import UntypedMessage
from acpio.mcp.wire import (
    BACKEND_FAILED,
    CLIENT_CAPABILITIES_META,
    CLIENT_INFO_META,
    MCP_MESSAGE,
    MCP_PROTOCOL_VERSION,
    PROTOCOL_VERSION_META,
    RESOURCE_LIMIT,
    parse_envelope,
)
from acpio.roles import Agent, Client, Proxy, note_protocol_version

if TYPE_CHECKING:
    from acpio.jsonrpc import Builder, Connection, SentRequest
    from acpio.session import SessionConnection

__all__ = ["DEFAULT_MAX_BODY_BYTES", "McpHttpEndpoint", "mcp_http_bridge"]

_log = logging.getLogger(__name__)

#: The largest request body an endpoint reads (1 MiB, as the TypeScript SDK's bridge).
DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
#: Requests in flight on one connection's endpoint before ``429``.
DEFAULT_MAX_ACTIVE_REQUESTS: Final = 64
_MAX_HEADER_BYTES: Final = 16 * 1024
_SETUP_METHODS: Final = frozenset({"session/new", "session/load", "session/resume", "session/fork"})
_INITIALIZE_METHODS: Final = frozenset({"proxy/initialize", "initialize"})
#: The MCP revisions of the ``initialize`` handshake a bridged session may name (oldest first).
_HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
_SERVER_INFO_META: Final = "io.modelcontextprotocol/serverInfo"


def mcp_http_bridge(
    *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, max_active_requests: int = DEFAULT_MAX_ACTIVE_REQUESTS
) -> Builder[SessionConnection]:
    """The polyfill proxy's builder; serve it where the conductor runs its proxies."""
    app = Proxy.builder(name="mcp-http-bridge", unstable=True)
    endpoints: dict[Connection, McpHttpEndpoint] = {}

    def endpoint(cx: Connection) -> McpHttpEndpoint:
        found = endpoints.get(cx)
        if found is None:
            found = endpoints[cx] = McpHttpEndpoint(cx, max_body_bytes, max_active_requests)
            found.start(on_closed=lambda: endpoints.pop(cx, None))
        return found

    @app.on_dispatch
    async def bridge(message: Dispatch, cx: Connection) -> Unhandled | None:
        if (
            message.method in _INITIALIZE_METHODS
            and type(message) is RequestDispatch
            and message.is_from(Client)
        ):
            assert isinstance(message, RequestDispatch)
            cx.spawn(_initialize, message, cx, endpoint)
            return None
        if message.method in _SETUP_METHODS and message.is_from(Client) and type(message.params) is dict:
            state = endpoints.get(cx)
            if state is None or not state.bridging:
                return Unhandled(message)
            servers = message.params.get("mcpServers")
            if not isinstance(servers, list) or not any(_is_acp(s) for s in servers):
                return Unhandled(message)
            rewritten = [state.declare(s) if _is_acp(s) else s for s in servers]
            return Forward(UntypedMessage(message.method, {**message.params, "mcpServers": rewritten}))
        if (
            message.method == MCP_MESSAGE
            and type(message) is NotificationDispatch
            and message.is_from(Client)
        ):
            state = endpoints.get(cx)
            if state is not None and state.deliver(message.params):
                return None
        return Unhandled(message)

    return app


async def _initialize(
    message: RequestDispatch, cx: Connection, endpoint: Callable[[Connection], McpHttpEndpoint]
) -> None:
    """Initialize the agent; advertise ``acp`` upstream when the agent takes HTTP servers only."""
    answer = await cx.send_request_to(Agent, "initialize", message.params)
    mcp = _mcp_capabilities(answer)
    if mcp is not None:
        on: bool | dict[str, Any] = (
            True if mcp is _v1_mcp(answer) else {}
        )  # v1 markers are booleans, v2 ones objects
        if mcp.get("http") in (True, {}) and mcp.get("acp") in (None, False):
            endpoint(cx).bridging = True
            mcp["acp"] = on
    note_protocol_version(cx, answer)
    message.responder.respond(answer)


def _v1_mcp(answer: object) -> dict[str, Any] | None:
    """v1's ``agentCapabilities.mcpCapabilities`` of an ``initialize`` answer, if it has one."""
    capabilities = answer.get("agentCapabilities") if isinstance(answer, dict) else None
    mcp = capabilities.get("mcpCapabilities") if isinstance(capabilities, dict) else None
    return mcp if isinstance(mcp, dict) else None


def _mcp_capabilities(answer: object) -> dict[str, Any] | None:
    """The MCP capabilities of an ``initialize`` answer: v1's, or v2's ``capabilities.session.mcp``."""
    v1 = _v1_mcp(answer)
    if v1 is not None:
        return v1
    capabilities = answer.get("capabilities") if isinstance(answer, dict) else None
    session = capabilities.get("session") if isinstance(capabilities, dict) else None
    mcp = session.get("mcp") if isinstance(session, dict) else None
    return mcp if isinstance(mcp, dict) else None


def _is_acp(server: object) -> TypeGuard[dict[str, Any]]:
    return (
        isinstance(server, dict)
        and server.get("type") == "acp"
        and isinstance(server.get("serverId"), str)
        and isinstance(server.get("name"), str)
    )


class _Route:
    """One bridged server: its path on the endpoint and its bearer token."""

    __slots__ = ("name", "path", "server_id", "token")

    def __init__(self, server_id: str, name: str) -> None:
        self.server_id = server_id
        self.name = name
        self.path = f"/mcp/{secrets.token_urlsafe(12)}"
        self.token = secrets.token_urlsafe(32)


class _HttpError(Exception):
    def __init__(self, status: int, code: int, message: str, *, request_id: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.request_id = request_id


class McpHttpEndpoint:
    """The loopback Streamable HTTP endpoint of one ACP connection, serving its bridged servers."""

    def __init__(self, cx: Connection, max_body_bytes: int, max_active_requests: int) -> None:
        self.cx = cx
        self.max_body_bytes = max_body_bytes
        self.max_active_requests = max_active_requests
        #: Whether the agent needs the bridge (it takes HTTP MCP servers, not ``acp`` ones).
        self.bridging = False
        self.port = 0
        self._routes: dict[str, _Route] = {}
        self._by_path: dict[str, _Route] = {}
        self._active = 0
        self._next = 0
        self._listening: dict[str, Callable[[str, Any], None]] = {}
        #: Handshake-era sessions (``Mcp-Session-Id``): the envelope their requests are given.
        self._sessions: dict[str, dict[str, Any]] = {}

    def __repr__(self) -> str:
        return f"<McpHttpEndpoint 127.0.0.1:{self.port} servers={len(self._routes)}>"

    def start(self, on_closed: Callable[[], object]) -> None:
        """Listen on an ephemeral loopback port (known at once), serving until the connection ends.

        ``on_closed`` is called once the endpoint stopped listening.
        """
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(128)
        listener.setblocking(False)
        self.port = listener.getsockname()[1]
        self.cx.spawn(self._serve, listener, on_closed)

    async def _serve(self, listener: socket.socket, on_closed: Callable[[], object]) -> None:
        try:
            server = await asyncio.start_server(self._connection, sock=listener, limit=_MAX_HEADER_BYTES)
            try:
                await self.cx.wait_closed()
            finally:
                server.close()
        finally:
            on_closed()

    def declare(self, server: dict[str, Any]) -> dict[str, Any]:
        """The ``http`` declaration that replaces the ``acp`` one ``server`` (same name and ``_meta``)."""
        server_id = server["serverId"]
        route = self._routes.get(server_id)
        if route is None:
            route = self._routes[server_id] = _Route(server_id, server["name"])
            self._by_path[route.path] = route
        declared: dict[str, Any] = {
            "type": "http",
            "name": server["name"],
            "url": f"http://127.0.0.1:{self.port}{route.path}",
            "headers": [{"name": "Authorization", "value": f"Bearer {route.token}"}],
        }
        if "_meta" in server:
            declared["_meta"] = server["_meta"]
        return declared

    def deliver(self, params: object) -> bool:
        """Hand a provider's ``mcp/message`` notification to the HTTP request it belongs to."""
        envelope = parse_envelope(params)
        if isinstance(envelope, str):
            return False
        listener = self._listening.get(envelope.request_id)
        if listener is None:
            return False
        listener(envelope.method, envelope.params)
        return True

    # --- HTTP -------------------------------------------------------------------------------------

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while await self._exchange(reader, writer):
                pass
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()

    async def _exchange(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one HTTP request; whether the connection stays open for another."""
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, path, _version = request_line.split(" ", 2)
        headers: dict[str, str] = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                if name in headers and name in ("authorization", "content-length", "mcp-protocol-version"):
                    raise ValueError(f"duplicate {name} header")
                headers[name] = value.strip()
        keep_alive = headers.get("connection", "").lower() != "close"
        try:
            route = self._check(method, path, headers)
            if method == "DELETE":  # a handshake-era client ends its session
                self._sessions.pop(headers.get("mcp-session-id", ""), None)
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
                return keep_alive
            length = int(headers.get("content-length", "-1"))
            if length < 0:
                raise _HttpError(411, -32600, "A Content-Length is required")
            if length > self.max_body_bytes:
                raise _HttpError(413, RESOURCE_LIMIT, f"Request body over {self.max_body_bytes} bytes")
            body = await reader.readexactly(length)
            if self._active >= self.max_active_requests:
                raise _HttpError(
                    429, RESOURCE_LIMIT, f"Over {self.max_active_requests} MCP requests in flight"
                )
            self._active += 1
            try:
                return await self._relay(route, body, headers, reader, writer) and keep_alive
            finally:
                self._active -= 1
        except _HttpError as error:
            _write_json(writer, error.status, _error(error.request_id, error.code, error.message), keep_alive)
            await writer.drain()
            return keep_alive and error.status not in (411, 413)

    def _check(self, method: str, path: str, headers: dict[str, str]) -> _Route:
        route = self._by_path.get(path.split("?", 1)[0])
        if route is None:
            raise _HttpError(404, -32601, "Unknown MCP endpoint")
        given = headers.get("authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {route.token}".encode()):
            raise _HttpError(401, -32600, "Unauthorized: send the Authorization header of the declaration")
        if "origin" in headers and not headers["origin"].startswith(("http://127.0.0.1", "http://localhost")):
            raise _HttpError(403, -32600, "Invalid Origin")
        if method not in ("POST", "DELETE"):
            raise _HttpError(405, -32600, "Only POST (and DELETE of a session) is supported: no GET stream")
        return route

    async def _initialize_session(
        self, route: _Route, request_id: Any, params: dict[str, Any], writer: asyncio.StreamWriter
    ) -> None:
        """Answer a handshake-era ``initialize`` from the server's ``server/discover``; open a session.

        The provider speaks 2026-07-28 only; the session remembers the client's capabilities and
        info, which the bridge then adds to each of the session's requests as their envelope.
        """
        capabilities = params.get("capabilities")
        session: dict[str, Any] = {
            PROTOCOL_VERSION_META: MCP_PROTOCOL_VERSION,
            CLIENT_CAPABILITIES_META: capabilities if isinstance(capabilities, dict) else {},
        }
        if isinstance(params.get("clientInfo"), dict):
            session[CLIENT_INFO_META] = params["clientInfo"]
        self._next += 1
        envelope = {
            "serverId": route.server_id,
            "requestId": f"mcp-http-{self._next}-{secrets.token_hex(4)}",
            "method": "server/discover",
            "params": {"_meta": session},
        }
        outcome = await _settled(self.cx.send_request_to(Client, MCP_MESSAGE, envelope))
        reply = _reply(request_id, outcome)
        extra = ""
        if "result" in reply:
            discovered = reply["result"] if isinstance(reply["result"], dict) else {}
            requested = params.get("protocolVersion")
            found = discovered.get("_meta")
            meta: dict[str, Any] = found if isinstance(found, dict) else {}
            result: dict[str, Any] = {
                "protocolVersion": requested if requested in _HANDSHAKE_VERSIONS else _HANDSHAKE_VERSIONS[-1],
                "capabilities": discovered.get("capabilities") or {},
                "serverInfo": meta.get(_SERVER_INFO_META) or {"name": route.name, "version": ""},
            }
            if discovered.get("instructions") is not None:
                result["instructions"] = discovered["instructions"]
            reply = {"jsonrpc": "2.0", "id": request_id, "result": result}
            session_id = secrets.token_urlsafe(16)
            self._sessions[session_id] = session
            extra = f"mcp-session-id: {session_id}\r\n"
        _write_json(writer, 200, reply, keep_alive=True, extra_headers=extra)
        await writer.drain()

    async def _relay(
        self,
        route: _Route,
        body: bytes,
        headers: dict[str, str],
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> bool:
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise _HttpError(400, -32700, "Parse error") from None
        if (
            not isinstance(message, dict)
            or message.get("jsonrpc") != "2.0"
            or "result" in message
            or "error" in message
        ):
            raise _HttpError(400, -32600, "Expected one JSON-RPC request (no batches, no responses)")
        if "id" not in message:
            # 2026-07-28 has no client-to-server notifications over HTTP: acknowledged and dropped.
            writer.write(b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
            return True
        request_id = message["id"]
        method, params = message.get("method"), message.get("params")
        if not isinstance(method, str) or (params is not None and not isinstance(params, dict)):
            raise _HttpError(
                400, -32600, "A request needs a string method and object params", request_id=request_id
            )
        if method == "initialize" and not _has_envelope(params):
            await self._initialize_session(route, request_id, params or {}, writer)
            return True
        session = self._sessions.get(headers.get("mcp-session-id", ""))
        if session is not None:
            params = _with_envelope(params, session)
        self._next += 1
        inner_id = f"mcp-http-{self._next}-{secrets.token_hex(4)}"
        envelope: dict[str, Any] = {"serverId": route.server_id, "requestId": inner_id, "method": method}
        if params is not None:
            envelope["params"] = params
        stream: list[bool] = []

        def notified(inner_method: str, inner_params: Any) -> None:
            if not stream:
                stream.append(True)
                writer.write(
                    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
                    b"connection: close\r\n\r\n"
                )
            event: dict[str, Any] = {"jsonrpc": "2.0", "method": inner_method}
            if inner_params is not None:
                event["params"] = inner_params
            writer.write(b"event: message\r\ndata: " + orjson.dumps(event) + b"\r\n\r\n")

        sent: SentRequest[Any] = self.cx.send_request_to(Client, MCP_MESSAGE, envelope)
        self._listening[inner_id] = notified
        gone = asyncio.ensure_future(reader.read(1))
        try:
            await asyncio.wait(
                (asyncio.ensure_future(_settled(sent)), gone), return_when=asyncio.FIRST_COMPLETED
            )
            if gone.done() and not sent.done:
                sent.cancel()  # the agent closed the response: cancel exactly this request
                return False
            reply = _reply(request_id, await _settled(sent))
        finally:
            del self._listening[inner_id]
            if not gone.done():
                gone.cancel()
        if stream:
            writer.write(b"event: message\r\ndata: " + orjson.dumps(reply) + b"\r\n\r\n")
            await writer.drain()
            return False
        _write_json(writer, 200, reply, keep_alive=not gone.done())
        await writer.drain()
        return not gone.done()


def _has_envelope(params: Any) -> bool:
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and PROTOCOL_VERSION_META in meta


def _with_envelope(params: dict[str, Any] | None, session: dict[str, Any]) -> dict[str, Any]:
    """A handshake-era request's params with the session's 2026-07-28 envelope in ``_meta``."""
    params = dict(params or {})
    meta = params.get("_meta")
    params["_meta"] = {**session, **(meta if isinstance(meta, dict) else {})}
    return params


async def _settled(sent: SentRequest[Any]) -> Any:
    """The outcome of ``sent``: its result, or the error it ended with."""
    try:
        return await sent
    except AcpError as exc:
        return exc


def _reply(request_id: Any, outcome: Any) -> dict[str, Any]:
    """The inner JSON-RPC response for an ``mcp/message`` outcome (or the binding's error)."""
    if isinstance(outcome, RequestError):
        return _error(request_id, outcome.code, outcome.message, outcome.data)
    if isinstance(outcome, AcpError):
        return _error(request_id, BACKEND_FAILED, f"The ACP connection failed: {outcome}")
    if isinstance(outcome, dict):
        if "result" in outcome:
            return {"jsonrpc": "2.0", "id": request_id, "result": outcome["result"]}
        error = outcome.get("error")
        if (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and isinstance(error.get("message"), str)
        ):
            return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return _error(request_id, BACKEND_FAILED, "The mcp/message response carries no inner result or error")


def _error(request_id: Any, code: int, message: str, data: Any = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _write_json(
    writer: asyncio.StreamWriter, status: int, body: Any, keep_alive: bool, extra_headers: str = ""
) -> None:
    payload = orjson.dumps(body)
    reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found"}.get(
        status, "Error"
    )
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(payload)}\r\n"
        f"connection: {'keep-alive' if keep_alive else 'close'}\r\n"
    )
    if status == 401:
        head += "www-authenticate: Bearer\r\n"
    writer.write((head + extra_headers).encode() + b"\r\n" + payload)


def main() -> None:
    """Serve the bridge on stdin/stdout (``python -m acpio.mcp.bridge``), under a conductor."""
    from acpio.transports import Stdio

    logging.basicConfig(level=logging.WARNING, format="acpio mcp bridge: %(levelname)s: %(message)s")
    running.run(mcp_http_bridge().serve(Stdio()))


if __name__ == "__main__":
    main()
