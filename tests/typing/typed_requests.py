"""User code the type checkers must accept: what sending a typed request gives back (not run)."""

from typing import Any, assert_type

from acpio import Agent, SessionConnection, schema
from acpio.extensions import ExtensionRequest
from acpio.jsonrpc import Connection, JsonValue, SentRequest, UntypedMessage


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
