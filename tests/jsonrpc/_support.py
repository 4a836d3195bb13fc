"""Typed test messages and a raw-wire peer for the engine tests."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any, ClassVar

from pydantic import BaseModel

from acpio import testing
from acpio.jsonrpc import Builder

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


class WirePeer(testing.WirePeer):
    """A raw peer that can also make a request and read its answer."""

    _next_id = 1000

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


def serving(builder: Builder) -> AbstractAsyncContextManager[WirePeer]:
    """Serve ``builder``; yield a raw peer on the other end; check a clean end."""
    return testing.serving(builder, WirePeer, timeout=TIMEOUT)


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
