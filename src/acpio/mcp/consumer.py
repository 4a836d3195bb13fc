"""The consumer side: an ``mcp`` client whose transport is the ACP connection.

An agent (or a proxy) given a ``{"type": "acp", "serverId": ...}`` server in a session's
``mcpServers`` talks to it with the official ``mcp`` package's ``Client``, the usual way
(``list_tools``, ``call_tool``...): :func:`connect` opens one, :class:`AcpTransport` is the
transport it runs on. Each inner JSON-RPC request becomes one ``mcp/message`` request; cancelling
it (the client's ``notifications/cancelled``) cancels the outer request with ``$/cancel_request``;
the provider's ``mcp/message`` notifications for it come back as inner notifications.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    ErrorData,
    Implementation,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)

from acpio.errors import AcpError, RequestError
from acpio.jsonrpc.dispatch import Dispatch, NotificationDispatch, Unhandled
from acpio.mcp.wire import BACKEND_FAILED, MCP_MESSAGE, MCP_PROTOCOL_VERSION, parse_envelope
from acpio.schema import McpServerAcp

if TYPE_CHECKING:
    from acpio.jsonrpc import Connection, DynamicHandlerRegistration, PeerLike, SentRequest

__all__ = ["AcpTransport", "acp_servers", "connect", "connect_declared"]

_transports = itertools.count(1)


def acp_servers(servers: Iterable[object] | None) -> list[McpServerAcp]:
    """The ``acp`` servers among a setup request's ``mcp_servers`` (the others are left out)."""
    return [server for server in servers or () if isinstance(server, McpServerAcp)]


@asynccontextmanager
async def connect(
    cx: Connection,
    server: McpServerAcp | str,
    *,
    peer: PeerLike | None = None,
    client_info: Implementation | None = None,
) -> AsyncIterator[Client]:
    """An ``mcp.Client`` talking to the ``acp`` MCP server ``server`` (its declaration or ``serverId``).

    ``cx`` is the connection that received the declaration (an agent's, typically, with unstable
    methods on: ``Agent.builder(unstable=True)``); ``peer`` the role to send to when it is not the
    counterpart (a proxy consuming its client's server passes ``Client``). The client speaks the
    stateless MCP revision 2026-07-28, as the binding requires: no ``initialize`` round trip.
    """
    transport = AcpTransport(cx, server, peer=peer)
    async with Client(transport, mode=MCP_PROTOCOL_VERSION, client_info=client_info, cache=None) as client:
        yield client


@asynccontextmanager
async def connect_declared(
    cx: Connection,
    declaration: Mapping[str, Any],
    *,
    client_info: Implementation | None = None,
    cwd: str | Path | None = None,
) -> AsyncIterator[Client]:
    """An ``mcp.Client`` for a server as a setup request declared it (its JSON object).

    ``acp`` servers are reached over ``cx`` (see :func:`connect`); ``http`` servers over Streamable
    HTTP at their ``url``, and ``sse`` servers over the older HTTP+SSE transport, with their
    ``headers`` on every request; a stdio server (no ``type``) is started as a child process
    (``command``, ``args``, ``env`` over the agent's environment, in ``cwd``: the session's
    directory) and stopped, with its children, when the client closes. Other kinds raise
    ``ValueError``.
    """
    kind = declaration.get("type")
    if kind in (None, "stdio"):
        from mcp.client.stdio import StdioServerParameters

        env = {str(v["name"]): str(v["value"]) for v in declaration.get("env") or ()}
        parameters = StdioServerParameters(
            command=str(declaration["command"]),
            args=[str(a) for a in declaration.get("args") or ()],
            env=env or None,
            cwd=cwd,
        )
        async with Client(parameters, client_info=client_info) as client:
            yield client
        return
    if kind == "sse":
        from mcp.client.sse import sse_client

        headers = {str(h["name"]): str(h["value"]) for h in declaration.get("headers") or ()}
        async with Client(
            sse_client(str(declaration["url"]), headers=headers), client_info=client_info
        ) as client:
            yield client
        return
    if kind == "acp":
        async with connect(cx, str(declaration["serverId"]), client_info=client_info) as client:
            yield client
        return
    if kind == "http":
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        headers = {str(h["name"]): str(h["value"]) for h in declaration.get("headers") or ()}
        async with (
            httpx2.AsyncClient(
                headers=headers,
                timeout=httpx2.Timeout(30.0, read=300.0),
                # a fresh connection per request: reusing a kept-alive one to a loopback server under load
                # failed now and then with ReadError (tests/mcp_acp/test_examples.py, the bridge)
                limits=httpx2.Limits(max_keepalive_connections=0),
            ) as http,
            Client(
                streamable_http_client(str(declaration["url"]), http_client=http), client_info=client_info
            ) as client,
        ):
            yield client
        return
    raise ValueError(
        f"acpio connects to stdio, acp, http and sse MCP servers; {declaration.get('name')!r} is {kind!r}"
    )


class AcpTransport:
    """An ``mcp`` client transport (``mcp.Client(AcpTransport(cx, server), mode="2026-07-28")``).

    Open it once per client: it is an async context manager yielding the client's read and write
    streams, and routes the provider's notifications to the requests they belong to while open.
    """

    def __init__(self, cx: Connection, server: McpServerAcp | str, *, peer: PeerLike | None = None) -> None:
        self.cx = cx
        self.server_id = server.server_id if isinstance(server, McpServerAcp) else server
        self.peer = peer
        # Inner request ids are the client's own (1, 2...); the prefix keeps them apart from those
        # of other clients of the same server on this connection.
        self._prefix = f"acpio-{next(_transports)}-{uuid.uuid4().hex[:8]}-"
        self._pending: dict[str, tuple[RequestId, SentRequest[Any]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._registration: DynamicHandlerRegistration | None = None
        self._to_client: MemoryObjectSendStream[SessionMessage | Exception] | None = None
        self._streams: list[Any] = []

    def __repr__(self) -> str:
        return f"AcpTransport({self.server_id!r})"

    async def __aenter__(
        self,
    ) -> tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]:
        if self._registration is not None:
            raise RuntimeError(f"{self!r} is already open: use one AcpTransport per client")
        to_client, client_reads = anyio.create_memory_object_stream[SessionMessage | Exception](math.inf)
        client_writes, from_client = anyio.create_memory_object_stream[SessionMessage](math.inf)
        self._to_client = to_client
        self._streams = [to_client, client_reads, client_writes, from_client]
        self._registration = self.cx.add_dynamic_handler(_Notifications(self))
        self._spawn(self._pump(from_client))
        return client_reads, client_writes

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._registration is not None:
            self._registration.remove()
        for _, sent in self._pending.values():
            sent.cancel()
        self._pending.clear()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        for stream in self._streams:
            stream.close()

    def _spawn(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _pump(self, from_client: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async for item in from_client:
            message = item.message
            if isinstance(message, JSONRPCRequest):
                self._send(message)
            elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
                cancelled = (message.params or {}).get("requestId")
                entry = self._pending.get(f"{self._prefix}{cancelled}")
                if entry is not None:
                    entry[1].cancel()
            # 2026-07-28 defines no other client-to-server notification, and no server-to-client
            # request a response could answer: the rest has nowhere to go.

    def _send(self, request: JSONRPCRequest) -> None:
        wire_id = f"{self._prefix}{request.id}"
        params: dict[str, Any] = {"serverId": self.server_id, "requestId": wire_id, "method": request.method}
        if request.params is not None:
            params["params"] = request.params
        sent = self.cx.send_request_to(self.peer, MCP_MESSAGE, params)
        self._pending[wire_id] = (request.id, sent)
        self._spawn(self._answer(wire_id, request.id, sent))

    async def _answer(self, wire_id: str, request_id: RequestId, sent: SentRequest[Any]) -> None:
        reply: JSONRPCResponse | JSONRPCError
        try:
            outcome = await sent
        except RequestError as exc:
            # A binding failure (-33001 server unavailable...): the client raises it as an MCPError.
            reply = JSONRPCError(
                jsonrpc="2.0",
                id=request_id,
                error=ErrorData(code=exc.code, message=exc.message, data=exc.data),
            )
        except AcpError as exc:
            reply = JSONRPCError(
                jsonrpc="2.0", id=request_id, error=ErrorData(code=CONNECTION_CLOSED, message=str(exc))
            )
        else:
            reply = _inner_reply(request_id, outcome)
        finally:
            self._pending.pop(wire_id, None)
        if self._to_client is not None:
            self._to_client.send_nowait(SessionMessage(reply))

    def deliver(self, params: object) -> bool:
        """Hand a provider's ``mcp/message`` notification to the client; whether it was ours."""
        envelope = parse_envelope(params)
        if isinstance(envelope, str) or envelope.server_id != self.server_id:
            return False
        if envelope.request_id not in self._pending or self._to_client is None:
            return envelope.request_id.startswith(self._prefix)  # ours, for a finished request: dropped
        notification = JSONRPCNotification(jsonrpc="2.0", method=envelope.method, params=envelope.params)
        self._to_client.send_nowait(SessionMessage(notification))
        return True


def _inner_reply(request_id: RequestId, outcome: Any) -> JSONRPCResponse | JSONRPCError:
    """The inner JSON-RPC answer a ``mcp/message`` response carries (``result`` wins over ``error``)."""
    if isinstance(outcome, dict):
        if "result" in outcome:
            result = outcome["result"]
            return JSONRPCResponse(
                jsonrpc="2.0", id=request_id, result=result if isinstance(result, dict) else {}
            )
        error = outcome.get("error")
        if (
            isinstance(error, dict)
            and isinstance(error.get("code"), int)
            and isinstance(error.get("message"), str)
        ):
            return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData.model_validate(error))
    return JSONRPCError(
        jsonrpc="2.0",
        id=request_id,
        error=ErrorData(
            code=BACKEND_FAILED,
            message="The mcp/message response carries neither an inner result nor an inner error",
            data={"response": outcome},
        ),
    )


class _Notifications:
    """Takes the provider's ``mcp/message`` notifications for one transport's requests."""

    __slots__ = ("transport",)

    def __init__(self, transport: AcpTransport) -> None:
        self.transport = transport

    def accepts(self, message: Dispatch) -> bool:
        return message.method == MCP_MESSAGE and type(message) is NotificationDispatch

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        return None if self.transport.deliver(message.params) else Unhandled(message)
