"""Agents served over HTTP and WebSocket: a turn end to end, and the server's defences, on the wire."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import websockets

from acpio import Client, SessionConnection
from acpio import schema as acp
from acpio.agents.testy.agent import testy_agent
from acpio.errors import TransportError
from acpio.remote import Limits, RemoteAgent, RemoteListener, RemoteServer, is_remote_url

from ._support import INITIALIZE

SCHEMES = pytest.mark.parametrize("scheme", ["http", "ws"], ids=["streamable-http", "websocket"])


async def echo_turn(url: str, text: str = "echo hello there", **options: Any) -> str:
    said: list[str] = []

    async def main(cx: SessionConnection) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(Path.cwd()).start_session() as session:
            session.send_prompt(text)
            said.append(await session.read_to_string())
            assert session.stop_reason == "end_turn"

    await Client.builder().connect_with(RemoteAgent(url, **options), main)
    return said[0]


@SCHEMES
async def test_a_turn_over_the_network(scheme: str) -> None:
    async with RemoteServer(testy_agent(), port=0) as server:
        url = server.url.replace("http", scheme, 1)
        assert await echo_turn(url) == "hello there\n"
        # the connections ended with their clients
        assert server.listener.connection_count == 0


async def test_streamable_http_on_the_wire() -> None:
    async with RemoteServer(testy_agent(), port=0) as server, httpx.AsyncClient() as http:
        json = {"content-type": "application/json"}
        response = await http.post(server.url, content=INITIALIZE, headers=json)
        assert response.status_code == 200
        connection = response.headers["acp-connection-id"]
        assert orjson.loads(response.content)["id"] == 0
        headers = {**json, "acp-connection-id": connection}
        new = b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}'
        async with http.stream(
            "GET", server.url, headers={"accept": "text/event-stream", "acp-connection-id": connection}
        ) as events:
            assert events.headers["content-type"] == "text/event-stream"
            posted = await http.post(server.url, content=new, headers=headers)
            assert (posted.status_code, posted.content) == (202, b"")
            lines = events.aiter_lines()
            line = await anext(lines)
            assert line.startswith("data: ")
            assert orjson.loads(line[6:])["result"]["sessionId"] == "testy-1"
        prompt = (
            b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"testy-1","prompt":[]}}'
        )
        missing = await http.post(server.url, content=prompt, headers=headers)
        assert missing.status_code == 400
        assert "Acp-Session-Id" in missing.text
        wrong = await http.post(server.url, content=prompt, headers={**headers, "acp-session-id": "other"})
        assert wrong.status_code == 400
        unknown = await http.post(server.url, content=new, headers={**json, "acp-connection-id": "nope"})
        assert unknown.status_code == 404
        batch = await http.post(server.url, content=b"[" + new + b"]", headers=headers)
        assert batch.status_code == 400
        assert orjson.loads(batch.content)["error"]["code"] == -32600
        assert (await http.post(server.url, content=new)).status_code == 415
        assert (await http.delete(server.url, headers={"acp-connection-id": connection})).status_code == 202
        gone = await http.post(server.url, content=new, headers=headers)
        assert gone.status_code == 404


@SCHEMES
async def test_a_foreign_origin_is_refused(scheme: str) -> None:
    limits = Limits()
    async with RemoteServer(
        testy_agent(), port=0, limits=limits, allowed_origins=["https://app.example"]
    ) as server:
        if scheme == "ws":
            with pytest.raises(websockets.InvalidStatus) as refused:
                await websockets.connect(server.url.replace("http", "ws", 1), origin="https://evil.example")
            assert refused.value.response.status_code == 403
            allowed = await websockets.connect(
                server.url.replace("http", "ws", 1), origin="https://app.example"
            )
            await allowed.close()
        else:
            async with httpx.AsyncClient() as http:
                headers = {"content-type": "application/json", "origin": "http://localhost:3000"}
                response = await http.post(server.url, content=INITIALIZE, headers=headers)
                assert response.status_code == 403
                assert "not allowed" in response.text
        assert server.listener.connection_count == 0


@SCHEMES
async def test_a_token_is_required_when_set(scheme: str) -> None:
    async with RemoteServer(testy_agent(), port=0, token="s3cret") as server:
        url = server.url.replace("http", scheme, 1)
        with pytest.raises(TransportError):
            await echo_turn(url)
        with pytest.raises(TransportError):
            await echo_turn(url, token="wrong")
        assert await echo_turn(url, token="s3cret") == "hello there\n"


def test_a_network_bind_needs_a_token() -> None:
    with pytest.raises(ValueError, match="token"):
        RemoteServer(testy_agent(), host="0.0.0.0")
    RemoteServer(testy_agent(), host="0.0.0.0", token="t")
    RemoteServer(testy_agent(), host="0.0.0.0", insecure=True)
    RemoteServer(testy_agent(), host="::1")


@SCHEMES
async def test_an_oversized_message_is_answered_and_the_connection_kept(scheme: str) -> None:
    limits = Limits(max_message=64 * 1024)
    big = "echo " + "x" * (100 * 1024)
    async with RemoteServer(testy_agent(), port=0, limits=limits) as server:
        url = server.url.replace("http", scheme, 1)
        said: list[str] = []

        async def main(cx: SessionConnection) -> None:
            await cx.send_request(acp.InitializeRequest(protocol_version=1))
            async with cx.build_session(Path.cwd()).start_session() as session:
                session.send_prompt(big)
                with pytest.raises(acp.RequestError if hasattr(acp, "RequestError") else Exception) as error:
                    await session.read_to_string()
                said.append(str(error.value))
                session.send_prompt("echo still here")
                said.append(await session.read_to_string())

        await Client.builder().connect_with(RemoteAgent(url), main)
    assert "too large" in said[0].lower()
    assert said[1] == "still here\n"


def test_remote_urls() -> None:
    assert is_remote_url("wss://agents.example/acp")
    assert is_remote_url("http://127.0.0.1:8000")
    assert not is_remote_url("npx my-agent --url http://x")
    assert not is_remote_url("acpio testy")
    with pytest.raises(ValueError, match="URL"):
        RemoteAgent("acpio testy")


@SCHEMES
async def test_a_load_balancer_cookie_comes_back(scheme: str) -> None:
    """A cookie set in front of the server (load balancer affinity) comes back with every later request."""
    import uvicorn

    listener = RemoteListener()
    cookies: list[str | None] = []

    async def balancer(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", []))
        cookies.append(headers[b"cookie"].decode() if b"cookie" in headers else None)

        async def with_cookie(message: Any) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):
                extra = [(b"set-cookie", b"backend=b1; Path=/")]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await listener(scope, receive, with_cookie)

    server = uvicorn.Server(uvicorn.Config(balancer, port=0, log_level="warning", lifespan="off"))
    server.config.load()
    server.lifespan = server.config.lifespan_class(server.config)
    await server.startup()
    serving = asyncio.ensure_future(testy_agent().serve(listener))
    try:
        port = server.servers[0].sockets[0].getsockname()[1]
        url = f"{scheme}://127.0.0.1:{port}"
        jar = httpx.Cookies()
        assert await echo_turn(url, cookies=jar) == "hello there\n"
        assert await echo_turn(url, cookies=jar) == "hello there\n"
    finally:
        await listener.aclose()
        await asyncio.wait_for(serving, 10)
        server.should_exit = True
        await server.shutdown()
    assert cookies[0] is None
    assert cookies[1:] == ["backend=b1"] * (len(cookies) - 1)
    assert len(cookies) >= 2
