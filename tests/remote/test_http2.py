"""RemoteListener under hypercorn: Streamable HTTP over HTTP/2 (cleartext, prior knowledge), WebSocket too."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from acpio import Client, SessionConnection
from acpio import schema as acp
from acpio.agents.testy import testy_agent
from acpio.remote import HttpTransport, RemoteListener

from .test_remote import echo_turn

hypercorn_asyncio = pytest.importorskip("hypercorn.asyncio")
hypercorn_config = pytest.importorskip("hypercorn.config")


@asynccontextmanager
async def hypercorn_server() -> AsyncIterator[str]:
    listener = RemoteListener()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = hypercorn_config.Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.loglevel = "WARNING"
    stop = asyncio.Event()
    server = asyncio.ensure_future(hypercorn_asyncio.serve(listener, config, shutdown_trigger=stop.wait))
    serving = asyncio.ensure_future(testy_agent().serve(listener))
    try:
        for _ in range(100):  # until it listens
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
            else:
                writer.close()
                break
        yield f"http://127.0.0.1:{port}"
    finally:
        await listener.aclose()
        stop.set()
        await asyncio.wait_for(asyncio.gather(server, serving), 10)


async def test_streamable_http_over_http2() -> None:
    versions: set[str] = set()

    async def record(response: httpx.Response) -> None:
        versions.add(response.http_version)

    async with hypercorn_server() as url:
        client = httpx.AsyncClient(
            http1=False, http2=True, event_hooks={"response": [record]}, timeout=httpx.Timeout(10, read=None)
        )
        async with client:
            said: list[str] = []

            async def main(cx: SessionConnection) -> None:
                await cx.send_request(acp.InitializeRequest(protocol_version=1))
                async with cx.build_session(Path.cwd()).start_session() as session:
                    session.send_prompt("echo over http2")
                    said.append(await session.read_to_string())

            await Client.builder().connect_with(HttpTransport(url, client=client), main)
    assert said == ["over http2\n"]
    assert versions == {"HTTP/2"}


async def test_websocket_under_hypercorn() -> None:
    async with hypercorn_server() as url:
        assert await echo_turn(url.replace("http", "ws", 1)) == "hello there\n"
