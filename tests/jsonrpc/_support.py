"""Typed test messages and a raw-wire peer for the engine tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, ClassVar

import orjson
from pydantic import BaseModel

from acpio.jsonrpc import Builder
from acpio.transports.channel import Channel

TIMEOUT = 5


class HelloResult(BaseModel):
    greeting: str


class Hello(BaseModel):
    METHOD: ClassVar[str] = "hello"
    RESPONSE: ClassVar[type[BaseModel]] = HelloResult
    name: str


class EchoResult(BaseModel):
    value: Any = None


class Echo(BaseModel):
    METHOD: ClassVar[str] = "echo"
    RESPONSE: ClassVar[type[BaseModel]] = EchoResult
    value: Any = None


class Empty(BaseModel):
    METHOD: ClassVar[str] = "empty"
    RESPONSE: ClassVar[type[BaseModel]] = EchoResult


class Note(BaseModel):
    METHOD: ClassVar[str] = "note"
    text: str


class Slow(BaseModel):
    METHOD: ClassVar[str] = "slow"
    RESPONSE: ClassVar[type[BaseModel]] = EchoResult


class WirePeer:
    """The far end of a channel, speaking raw JSON frames to a connection under test."""

    def __init__(self, end: Channel) -> None:
        self.end = end
        self._next_id = 1000

    def send(self, message: Any) -> None:
        self.end.send(message if isinstance(message, bytes) else orjson.dumps(message))

    async def recv_raw(self) -> bytes | None:
        async with asyncio.timeout(TIMEOUT):
            frame = await self.end.receive()
        assert not hasattr(frame, "head"), frame
        return frame  # type: ignore[return-value]

    async def recv(self) -> Any:
        frame = await self.recv_raw()
        assert frame is not None, "the connection closed its output"
        return orjson.loads(frame)

    async def request(self, method: str, params: Any = None, request_id: Any = None) -> Any:
        """Send a request and return the next frame (which must answer it)."""
        if request_id is None:
            self._next_id += 1
            request_id = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return await self.recv()

    async def close(self) -> None:
        await self.end.aclose()


@asynccontextmanager
async def serving(builder: Builder) -> AsyncIterator[WirePeer]:
    """Serve ``builder`` on one end of a channel; yield a raw peer on the other; check a clean end."""
    ours, theirs = Channel.duplex()
    task = asyncio.create_task(builder.connect_to(ours))
    peer = WirePeer(theirs)
    try:
        yield peer
    finally:
        await peer.close()
        async with asyncio.timeout(TIMEOUT):
            await task


def echo_builder(name: str = "echo") -> Builder:
    """A builder answering ``hello`` and ``echo``, for tests that need a working server."""
    from acpio.jsonrpc import UntypedRole

    app = UntypedRole.builder(name=name)

    @app.on_request
    async def hello(req: Hello) -> HelloResult:
        return HelloResult(greeting=f"hello, {req.name}")

    @app.on_request
    async def echo(req: Echo) -> EchoResult:
        return EchoResult(value=req.value)

    return app
