"""Two JSON-RPC peers in one process: a typed request, its answer, and a notification.

Run it: ``python examples/jsonrpc_hello.py``
"""

from __future__ import annotations

import asyncio
from typing import ClassVar

from pydantic import BaseModel

from acpio import Channel, Connection, UntypedRole


class HelloResult(BaseModel):
    greeting: str


class Hello(BaseModel):
    METHOD: ClassVar[str] = "hello"
    RESPONSE: ClassVar[type[BaseModel]] = HelloResult
    name: str


server = UntypedRole.builder(name="server")


@server.on_request
async def hello(request: Hello, responder: object, cx: Connection) -> HelloResult:
    return HelloResult(greeting=f"Hello, {request.name}!")


async def main() -> None:
    ours, theirs = Channel.duplex()
    serving = asyncio.create_task(server.serve(theirs))

    async def talk(cx: Connection) -> str:
        result: HelloResult = await cx.send_request(Hello(name="Ada"))
        return result.greeting

    print(await UntypedRole.builder(name="client").connect_with(ours, talk))
    await serving


if __name__ == "__main__":
    asyncio.run(main())
