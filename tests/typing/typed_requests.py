"""User code the type checkers must accept: what sending a typed request gives back, and the types of
the engine's other edges (spawn, handlers, peers, targets) (not run)."""

import asyncio
from typing import Any, assert_type

from acpio import Agent, SessionConnection, schema
from acpio.extensions import ExtensionRequest
from acpio.jsonrpc import (
    Builder,
    Connection,
    Dispatch,
    JsonValue,
    SentRequest,
    ServeTarget,
    Unhandled,
    UntypedMessage,
)


class Ping(ExtensionRequest, method="_example/ping"):
    text: str


async def client_side(cx: SessionConnection) -> None:
    sent = cx.send_request(schema.InitializeRequest(protocol_version=1))
    assert_type(sent, SentRequest[schema.InitializeResponse])
    answer = await cx.send_request_to(Agent, schema.NewSessionRequest(cwd="/", mcp_servers=[]))
    assert_type(answer, schema.NewSessionResponse)
    assert_type(await cx.send_request("_raw/method", {"x": 1}), JsonValue)
    assert_type(await cx.send_request(UntypedMessage("_raw/method", [1, "two"])), JsonValue)


async def agent_side(cx: Connection) -> None:
    read = await cx.send_request(schema.ReadTextFileRequest(session_id="s", path="/a"))
    assert_type(read, schema.ReadTextFileResponse)
    assert_type(read.content, str)
    assert_type(await cx.send_request(Ping(text="hi")), Any)


async def turn(session_id: str, attempts: int) -> float:
    return attempts / 2


async def spawning(cx: Connection) -> None:
    assert_type(cx.spawn(turn, "s", 3), asyncio.Task[float])
    assert_type(cx.spawn(turn("s", 3)), asyncio.Task[float])
    # a missing argument is caught before anything runs
    cx.spawn(turn, "s")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


async def untyped_handler(message: Dispatch) -> Unhandled | None:
    return Unhandled(message) if message.params is None else None


def untyped_edges(cx: Connection, builder: Builder[Connection]) -> None:
    cx.add_dynamic_handler(untyped_handler)
    builder.with_handler(untyped_handler)
    cx.send_notification_to(Agent, "_raw/note", {"x": [1, 2.5, None, {"y": True}]})
    served: ServeTarget = builder  # a builder is a component: another builder can serve it
    print(served)
