"""The older MCP-over-ACP wire, served to peers that use it (Rust SDK 2.x components).

``mcp/connect {serverId}`` opens a stateful MCP connection and answers ``{connectionId}``;
``mcp/message {connectionId, method, params?}`` then carries the connection's messages both ways
(a request's outer response is the inner result, an inner error the outer error; a notification
is an outer notification); ``mcp/disconnect {connectionId}`` closes it and answers ``{}``.

Each connection runs the ``mcp`` package's own server loop (``Server.run``: the handshake era the
peer opens with, ``initialize`` first) over in-memory streams, as that package's in-process
transport does; server-to-client requests (``roots/list``, ``sampling/createMessage``...) go to
the peer as ``mcp/message`` requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import math
import uuid
from typing import TYPE_CHECKING, Any

import anyio
from mcp.shared.message import SessionMessage
from mcp_types import ErrorData, JSONRPCError, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from acpio.errors import AcpError, RequestCancelled, RequestError
from acpio.jsonrpc.chain import unowned_context
from acpio.mcp.wire import BACKEND_FAILED, MCP_MESSAGE

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
    from mcp.server import Server

    from acpio.jsonrpc import Connection, PeerLike, Responder

__all__ = ["CONNECT", "DISCONNECT", "LegacyConnection"]

#: Opens a connection to a declared server: ``{serverId}`` -> ``{connectionId}``.
CONNECT = "mcp/connect"
#: Closes a connection: ``{connectionId}`` -> ``{}``.
DISCONNECT = "mcp/disconnect"


class LegacyConnection:
    """One ``mcp/connect`` connection: the MCP server's loop, and the requests in flight both ways."""

    def __init__(self, server: Server[Any], cx: Connection, peer: PeerLike | None) -> None:
        self.connection_id = f"mcp-over-acp-connection:{uuid.uuid4()}"
        self.server = server
        self.cx = cx
        self.peer = peer
        self._ids = itertools.count(1)
        self._waiting: dict[int, Responder[Any]] = {}
        to_server, self._server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](
            math.inf
        )
        self._server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](math.inf)
        self._to_server: MemoryObjectSendStream[SessionMessage | Exception] = to_server
        self._from_server: MemoryObjectReceiveStream[SessionMessage] = from_server
        self._task = asyncio.get_running_loop().create_task(self._run(), context=unowned_context())

    def __repr__(self) -> str:
        return f"<LegacyConnection {self.connection_id!r}>"

    async def _run(self) -> None:
        async with anyio.create_task_group() as group:
            group.start_soon(self._relay_from_server)
            await self.server.run(
                self._server_reads, self._server_writes, self.server.create_initialization_options()
            )
            group.cancel_scope.cancel()

    def request(self, method: str, params: dict[str, Any] | None, responder: Responder[Any]) -> None:
        """An inner request from the peer; ``responder`` gets its result, or its error as the outer one."""
        request_id = next(self._ids)
        self._waiting[request_id] = responder
        self._send(JSONRPCRequest(jsonrpc="2.0", id=request_id, method=method, params=params))

        def cancelled() -> None:
            # MCP asks the server not to answer a cancelled request: the cancel is answered here.
            if self._waiting.pop(request_id, None) is not None:
                self.notify(
                    "notifications/cancelled", {"requestId": request_id, "reason": "$/cancel_request"}
                )
                responder.respond_with_error(RequestCancelled({"connectionId": self.connection_id}))

        responder.cancel_flag.add_callback(cancelled)

    def notify(self, method: str, params: dict[str, Any] | None) -> None:
        """An inner notification from the peer."""
        self._send(JSONRPCNotification(jsonrpc="2.0", method=method, params=params))

    def _send(self, message: JSONRPCRequest | JSONRPCNotification | JSONRPCResponse | JSONRPCError) -> None:
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._to_server.send_nowait(SessionMessage(message))

    async def _relay_from_server(self) -> None:
        async for item in self._from_server:
            message = item.message
            if isinstance(message, JSONRPCResponse | JSONRPCError):
                responder = self._waiting.pop(message.id, None) if isinstance(message.id, int) else None
                if responder is None:
                    continue
                if isinstance(message, JSONRPCResponse):
                    responder.respond(message.result)
                else:
                    error = message.error
                    responder.respond_with_error(RequestError(error.code, error.message, error.data))
            elif isinstance(message, JSONRPCNotification):
                params: dict[str, Any] = {"connectionId": self.connection_id, "method": message.method}
                if message.params is not None:
                    params["params"] = message.params
                self.cx.send_notification_to(self.peer, MCP_MESSAGE, params)
            else:
                self.cx.spawn(self._server_request, message)

    async def _server_request(self, message: JSONRPCRequest) -> None:
        params: dict[str, Any] = {"connectionId": self.connection_id, "method": message.method}
        if message.params is not None:
            params["params"] = message.params
        try:
            result = await self.cx.send_request_to(self.peer, MCP_MESSAGE, params)
        except RequestError as exc:
            error = ErrorData(code=exc.code, message=exc.message, data=exc.data)
            self._send(JSONRPCError(jsonrpc="2.0", id=message.id, error=error))
        except AcpError as exc:
            error = ErrorData(code=BACKEND_FAILED, message=f"The ACP connection failed: {exc}")
            self._send(JSONRPCError(jsonrpc="2.0", id=message.id, error=error))
        else:
            self._send(
                JSONRPCResponse(
                    jsonrpc="2.0", id=message.id, result=result if isinstance(result, dict) else {}
                )
            )

    async def close(self) -> None:
        """End the connection: requests still waiting are cancelled, then the server loop stops."""
        waiting, self._waiting = self._waiting, {}
        for responder in waiting.values():
            responder.respond_with_error(
                RequestCancelled(
                    {"connectionId": self.connection_id},
                    message="Request cancelled: its MCP connection was closed",
                )
            )
        self._to_server.close()
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
