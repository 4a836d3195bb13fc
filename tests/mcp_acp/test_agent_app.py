"""An AgentApp's turn calls a tool the client hosts over ACP: ``turn.mcp(name)``."""

from __future__ import annotations

import asyncio

import pytest
from mcp.types import TextContent

from acpio import AgentApp, Client, SessionConnection, Turn, schema
from acpio.mcp import McpServer

from ._support import TIMEOUT, notes_server


def adding_app() -> AgentApp:
    app = AgentApp("adder", mcp=True)

    @app.prompt
    async def answer(turn: Turn) -> None:
        async with turn.mcp("notes") as notes:
            result = await notes.call_tool("add", {"a": 2, "b": 3})
        (content,) = result.content
        assert isinstance(content, TextContent)
        await turn.say(f"2 + 3 = {content.text}")

    return app


async def test_a_turn_calls_the_clients_tool_through_the_connection() -> None:
    async def main(cx: SessionConnection) -> str:
        answer = await cx.send_request(schema.InitializeRequest(protocol_version=1))
        assert answer.agent_capabilities is not None
        assert answer.agent_capabilities.mcp_capabilities == schema.McpCapabilities(acp=True, http=True)
        builder = cx.build_session("/work").with_mcp_server(McpServer(notes_server(), name="notes"))
        async with await builder.start_session() as session:
            session.send_prompt("add")
            return await session.read_to_string()

    said = await asyncio.wait_for(Client.builder(unstable=True).connect_with(adding_app(), main), TIMEOUT)
    assert said == "2 + 3 = 5"


async def test_an_undeclared_server_is_named_in_the_error() -> None:
    app = AgentApp("lonely", mcp=True)
    errors: list[BaseException] = []

    @app.prompt
    async def answer(turn: Turn) -> None:
        try:
            turn.mcp("notes")
        except LookupError as exc:
            errors.append(exc)

    async def main(cx: SessionConnection) -> None:
        await cx.send_request(schema.InitializeRequest(protocol_version=1))
        async with await cx.build_session("/work").start_session() as session:
            session.send_prompt("go")
            await session.read_to_string()

    await asyncio.wait_for(Client.builder(unstable=True).connect_with(app, main), TIMEOUT)
    with pytest.raises(
        LookupError, match=r"No MCP server named 'notes' was declared for this session \(declared: none\)"
    ):
        raise errors[0]
