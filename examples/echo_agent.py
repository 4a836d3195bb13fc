"""An echo agent in the builder style over stdio; ``examples/client.py`` runs it.

``initialize`` needs no handler: the Agent builder answers it (the protocol version, ``agentInfo``
from ``name`` and ``version``, the capabilities its handlers serve).
"""

from __future__ import annotations

import asyncio
import itertools

from acpio import Agent, Connection, Stdio, text_update
from acpio import schema as acp

app = Agent.builder(name="echo", version="1.0")
session_numbers = itertools.count(1)


@app.on_request
async def new_session(req: acp.NewSessionRequest) -> acp.NewSessionResponse:
    return acp.NewSessionResponse(session_id=f"echo-{next(session_numbers)}")


@app.on_request
async def prompt(req: acp.PromptRequest, cx: Connection) -> acp.PromptResponse:
    for block in req.prompt:
        if isinstance(block, acp.TextContent):
            cx.send_notification(text_update(req.session_id, block.text))
    return acp.PromptResponse(stop_reason=acp.StopReason.END_TURN)


if __name__ == "__main__":
    asyncio.run(app.serve(Stdio()))
