"""A proxy that gives any agent a "project notes" tool, served over ACP (MCP over ACP, unstable).

Every new session gets the MCP server ``notes`` (an official ``mcp`` package server) declared as
``{"type": "acp"}``; the agent calls it with ``mcp/message`` through this proxy, which then steps
aside (proxy mode) for the rest of the session. Needs ``acpio[mcp]``.

Run it under a conductor:
``acpio conductor agent "python examples/mcp_notes_proxy.py" "acpio testy --mcp-acp"``
and prompt ``mcp notes add_note {"text": "ship it"}``.
"""

from __future__ import annotations

import asyncio

from mcp.server.mcpserver import MCPServer

from acpio import Client, Proxy, Responder, SessionConnection, Stdio
from acpio import schema as acp
from acpio.mcp import McpServer

notes: list[str] = []
tools = MCPServer("notes")


@tools.tool()
def add_note(text: str) -> str:
    """Remember a note about the project; returns every note so far."""
    notes.append(text)
    return "\n".join(notes)


app = Proxy.builder(name="notes-proxy", unstable=True)


@app.on_request(peer=Client)
async def new_session(
    req: acp.NewSessionRequest, responder: Responder[acp.NewSessionResponse], cx: SessionConnection
) -> None:
    session = cx.build_session_from(req).with_mcp_server(McpServer(tools))
    cx.spawn(session.start_session_proxy(responder))


if __name__ == "__main__":
    asyncio.run(app.serve(Stdio()))
