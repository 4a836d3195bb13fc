"""A client that hosts a tool for the agent it drives (MCP over ACP, unstable; needs ``acpio[mcp]``).

It starts ``acpio testy --mcp-acp``, opens a session declaring its MCP server ``clock`` (an
official ``mcp`` package server, served over the ACP connection itself), and asks testy to call
the tool. Prints the tool call's outcome: ``completed: tools: today | 2026-01-02``.
"""

from __future__ import annotations

import asyncio
import os

from mcp.server.mcpserver import MCPServer

from acpio import AcpAgent, Client, SessionConnection, SessionMessage
from acpio import schema as acp
from acpio.mcp import McpServer

clock = MCPServer("clock")


@clock.tool()
def today() -> str:
    """Today's date (a fixed one: this is an example)."""
    return "2026-01-02"


async def main(cx: SessionConnection) -> None:
    await cx.send_request(acp.InitializeRequest(protocol_version=1))
    async with (
        await cx.build_session(os.getcwd()).with_mcp_server(McpServer(clock)).start_session() as session
    ):
        session.send_prompt("mcp clock today")
        while isinstance(message := await session.read_update(), SessionMessage):
            update = message.update
            if isinstance(update, acp.ToolCallUpdate) and update.status in ("completed", "failed"):
                texts = [
                    c.content.text
                    for c in update.content or ()
                    if isinstance(c, acp.Content) and isinstance(c.content, acp.TextContent)
                ]
                print(f"{update.status}: {' | '.join(texts)}")


if __name__ == "__main__":
    asyncio.run(Client.builder(unstable=True).connect_with(AcpAgent(["acpio", "testy", "--mcp-acp"]), main))
