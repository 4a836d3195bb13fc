"""The server answers at its endpoint only: any other path is ``404``, with a body naming the endpoint."""

from __future__ import annotations

import httpx
import pytest
import websockets

from acpio.agents.testy.agent import testy_agent
from acpio.remote import RemoteServer

from ._support import INITIALIZE
from .test_remote import echo_turn

JSON = {"content-type": "application/json"}


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE"])
async def test_an_unknown_path_is_answered_404_naming_the_endpoint(method: str) -> None:
    async with RemoteServer(testy_agent(), port=0) as server, httpx.AsyncClient() as http:
        response = await http.request(method, f"{server.url}/v1/chat", content=INITIALIZE, headers=JSON)
        assert response.status_code == 404
        assert response.text == "Not found: /v1/chat. The ACP endpoint is / (Streamable HTTP and WebSocket)"
        assert server.listener.connection_count == 0
        # the endpoint itself, with or without its slash, still serves
        assert (await http.post(server.url, content=INITIALIZE, headers=JSON)).status_code == 200
        assert (await http.post(f"{server.url}/", content=INITIALIZE, headers=JSON)).status_code == 200


async def test_a_websocket_on_an_unknown_path_is_answered_404() -> None:
    async with RemoteServer(testy_agent(), port=0) as server:
        url = server.url.replace("http", "ws", 1)
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(f"{url}/acp")
        assert refused.value.response.status_code == 404
        assert b"The ACP endpoint is /" in bytes(refused.value.response.body or b"")
        assert server.listener.connection_count == 0
        assert await echo_turn(url) == "hello there\n"


async def test_under_a_root_path_the_endpoint_is_the_root() -> None:
    """Behind a proxy that strips ``/acp`` (uvicorn's ``root_path``), the endpoint is ``/acp/``."""
    async with RemoteServer(testy_agent(), port=0, uvicorn={"root_path": "/acp"}) as server:
        assert await echo_turn(server.url) == "hello there\n"
        async with httpx.AsyncClient() as http:
            response = await http.post(f"{server.url}/other", content=INITIALIZE, headers=JSON)
        assert response.status_code == 404
        assert "Not found: /acp/other. The ACP endpoint is /acp/" in response.text
