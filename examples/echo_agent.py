"""An echo agent in the builder style over stdio; ``examples/client.py`` runs it."""

from __future__ import annotations

import asyncio
from typing import Any

from acpio import Agent
from acpio import schema as acp
from acpio.capabilities import negotiate_version
from acpio.jsonrpc import Connection
from acpio.transports import Stdio

app = Agent.builder(name="echo")


@app.on_request
async def initialize(req: acp.InitializeRequest, responder: Any, cx: Connection) -> acp.InitializeResponse:
    return acp.InitializeResponse(protocol_version=negotiate_version(req.protocol_version))


@app.on_request
async def new_session(req: acp.NewSessionRequest, responder: Any, cx: Connection) -> acp.NewSessionResponse:
    return acp.NewSessionResponse(session_id="echo-1")


@app.on_request
async def prompt(req: acp.PromptRequest, responder: Any, cx: Connection) -> acp.PromptResponse:
    for block in req.prompt:
        if isinstance(block, acp.TextContent):
            chunk = acp.AgentMessageChunk(content=acp.TextContent(text=block.text))
            cx.send_notification(acp.SessionNotification(session_id=req.session_id, update=chunk))
    return acp.PromptResponse(stop_reason=acp.StopReason.END_TURN)


if __name__ == "__main__":
    asyncio.run(app.connect_to(Stdio()))
