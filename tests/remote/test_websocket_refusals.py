"""A refused WebSocket handshake says why, as a refused HTTP request does: the status and the reason
reach the client (``acpio prompt --agent ws://...`` prints them), and the server logs no error."""

from __future__ import annotations

import logging

import pytest
import websockets

from acpio.agents.testy.agent import testy_agent
from acpio.errors import TransportError
from acpio.remote import RemoteServer

from .test_remote import echo_turn


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_a_missing_token_is_answered_401_with_the_reason() -> None:
    async with RemoteServer(testy_agent(), port=0, token="s3cret") as server:
        uvicorn_errors = _Records()  # added once uvicorn has set its logging up, which drops handlers
        logging.getLogger("uvicorn.error").addHandler(uvicorn_errors)
        try:
            url = server.url.replace("http", "ws", 1)
            with pytest.raises(websockets.InvalidStatus) as refused:
                await websockets.connect(url)
            assert refused.value.response.status_code == 401
            assert refused.value.response.headers["www-authenticate"] == "Bearer"
            assert b"bearer token" in bytes(refused.value.response.body or b"")

            with pytest.raises(TransportError, match=r"answered 401: Missing or wrong bearer token"):
                await echo_turn(url, token="wrong")
            assert await echo_turn(url, token="s3cret") == "hello there\n"
        finally:
            logging.getLogger("uvicorn.error").removeHandler(uvicorn_errors)
    assert [r.getMessage() for r in uvicorn_errors.records] == []


async def test_a_foreign_origin_is_answered_403_with_the_reason() -> None:
    async with RemoteServer(testy_agent(), port=0, allowed_origins=["https://app.example"]) as server:
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(server.url.replace("http", "ws", 1), origin="https://evil.example")
        assert refused.value.response.status_code == 403
        assert b"https://evil.example is not allowed" in bytes(refused.value.response.body or b"")
