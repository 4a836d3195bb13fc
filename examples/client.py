"""A client in the builder style: spawns the echo agent, opens a session, prints the echo.

Run it: ``python examples/client.py`` (prints ``Hello, agent!`` then ``end_turn``)
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from acpio import AcpAgent, Client, SessionConnection
from acpio import schema as acp

AGENT = [sys.executable, str(Path(__file__).with_name("echo_agent.py"))]


async def main(cx: SessionConnection) -> None:
    await cx.send_request(acp.InitializeRequest(protocol_version=1))
    async with cx.build_session(Path.cwd()).start_session() as session:
        session.send_prompt("Hello, agent!")
        print(await session.read_to_string())
        print(session.stop_reason)


if __name__ == "__main__":
    asyncio.run(Client.builder().connect_with(AcpAgent(AGENT), main))
