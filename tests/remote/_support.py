"""A uvicorn server on a loopback port whose listener the test accepts from, and client/server pairs."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

pytest.importorskip("uvicorn")

from acpio.remote import HttpTransport, Limits, RemoteServer, WebSocketTransport
from acpio.testing import TransportPair
from acpio.transports import Transport

MAX_LINE = 64 * 1024

#: Small bounds, so that the checks of backpressure and a vanished client finish quickly.
TEST_LIMITS = Limits(max_message=MAX_LINE, max_buffered=1024 * 1024, detach_timeout=0.3, stall_timeout=20.0)


class Idle:
    """Serves nothing: the test accepts the listener's connections itself."""

    async def serve(self, target: Any) -> None:
        return None


@asynccontextmanager
async def listening(limits: Limits = TEST_LIMITS, **options: Any) -> AsyncIterator[RemoteServer]:
    async with RemoteServer(Idle(), port=0, limits=limits, **options) as server:
        yield server


async def accepted(server: RemoteServer) -> Transport:
    end = await server.listener.accept()
    assert end is not None
    return end


INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
INITIALIZED = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}'


async def http_pair(server: RemoteServer, *, client_end: bool = False) -> TransportPair:
    """A Streamable HTTP connection past initialize: the server's end and the client's."""
    client = HttpTransport(server.url, max_message=MAX_LINE)
    client.send(INITIALIZE)
    end = await accepted(server)
    assert await end.receive() == INITIALIZE
    end.send(INITIALIZED)
    assert await client.receive() == INITIALIZED
    if client_end:
        return TransportPair(client, end)
    return TransportPair(end, client, kill_peer=client.abort)


async def ws_pair(server: RemoteServer, *, client_end: bool = False) -> TransportPair:
    """A WebSocket connection: the server's end and the client's."""
    client = await WebSocketTransport.connect(server.url.replace("http", "ws", 1), max_message=MAX_LINE)
    end = await accepted(server)
    if client_end:
        return TransportPair(client, end)
    return TransportPair(end, client, kill_peer=client.abort)
