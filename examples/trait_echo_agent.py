"""An echo agent in the trait style (``acpio.traits``) over stdio: each prompt's text comes back.

Run by ``examples/trait_client.py``, or by any ACP client: ``python examples/trait_echo_agent.py``
"""

from __future__ import annotations

import asyncio
import uuid

from acpio import AgentSideConnection, AgentTrait, Stdio, select_version
from acpio import schema as acp


class EchoAgent(AgentTrait):
    def __init__(self, client: AgentSideConnection) -> None:
        self.client = client  # the connection, with the client's methods: session_update...

    async def initialize(self, params: acp.InitializeRequest) -> acp.InitializeResponse:
        info = acp.Implementation(name="compat-echo", version="1.0")
        version = select_version(params.protocol_version, (1,))  # a v1 agent: always 1
        return acp.InitializeResponse(protocol_version=version, agent_info=info)

    async def new_session(self, params: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=f"echo-{uuid.uuid4().hex[:8]}")

    async def prompt(self, params: acp.PromptRequest) -> acp.PromptResponse:
        for block in params.prompt:
            if isinstance(block, acp.TextContent):
                chunk = acp.AgentMessageChunk(content=acp.TextContent(text=block.text))
                update = acp.SessionNotification(session_id=params.session_id, update=chunk)
                await self.client.session_update(update)
        return acp.PromptResponse(stop_reason=acp.StopReason.END_TURN)


if __name__ == "__main__":
    asyncio.run(AgentSideConnection(EchoAgent, Stdio()).serve())
