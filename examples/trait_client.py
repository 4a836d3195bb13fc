"""A client in the trait style (``acpio.traits``): spawns the echo agent and prints what it echoes.

Run it: ``python examples/trait_client.py`` (prints ``Hello, agent!`` then ``end_turn``)
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from acpio import AcpAgent, ClientSideConnection, ClientTrait
from acpio import schema as acp

AGENT = [sys.executable, str(Path(__file__).with_name("trait_echo_agent.py"))]


class Printer(ClientTrait):
    async def session_update(self, params: acp.SessionNotification) -> None:
        update = params.update
        if isinstance(update, acp.AgentMessageChunk) and isinstance(update.content, acp.TextContent):
            print(update.content.text)


async def main() -> None:
    async with ClientSideConnection(Printer(), AcpAgent(AGENT)) as agent:
        await agent.initialize(acp.InitializeRequest(protocol_version=1))
        session = await agent.new_session(acp.NewSessionRequest(cwd=str(Path.cwd()), mcp_servers=[]))
        text: list[acp.ContentBlock] = [acp.TextContent(text="Hello, agent!")]
        response = await agent.prompt(acp.PromptRequest(session_id=session.session_id, prompt=text))
        print(response.stop_reason)


if __name__ == "__main__":
    asyncio.run(main())
