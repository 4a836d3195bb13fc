"""A tracer that raises is logged and left out: the connection's traffic goes on as without it."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from acpio.jsonrpc import Connection, UntypedRole
from acpio.jsonrpc.tracing import install_tracer

from ._support import TIMEOUT, Hello, HelloResult, Note, echo_builder


class Broken(Exception):
    pass


class BrokenReceived:
    def __enter__(self) -> None:
        raise Broken("enter")

    def __exit__(self, *exc_info: object) -> None:
        raise Broken("exit")

    def answered(self, error: object) -> None:
        raise Broken("answered")


class BrokenTracer:
    def sending_request(self, connection: str, method: str, request_id: Any, params: object) -> Any:
        raise Broken("sending_request")

    def sending_notification(self, connection: str, method: str, params: object) -> object:
        raise Broken("sending_notification")

    def receiving(self, connection: str, message: object) -> BrokenReceived:
        return BrokenReceived()


class BrokenAtReceiving(BrokenTracer):
    def receiving(self, connection: str, message: object) -> BrokenReceived:
        raise Broken("receiving")


@pytest.fixture(params=[BrokenTracer, BrokenAtReceiving])
def broken_tracer(request: pytest.FixtureRequest) -> Iterator[None]:
    install_tracer(request.param())
    try:
        yield
    finally:
        install_tracer(None)


@pytest.mark.usefixtures("broken_tracer")
async def test_requests_and_notifications_go_on_when_the_tracer_raises(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = echo_builder()
    noted = asyncio.Event()

    @server.on_notification
    async def note(n: Note, cx: Connection) -> None:
        noted.set()

    async def main(cx: Connection) -> HelloResult:
        cx.send_notification(Note(text="x"))
        async with asyncio.timeout(TIMEOUT):
            await noted.wait()
            return await cx.send_request(Hello(name="world"))

    result = await UntypedRole.builder(name="client").connect_with(server, main)
    assert result == HelloResult(greeting="hello, world")
    assert "tracer" in caplog.text
