"""What AgentClient's TurnResult costs over reading a turn with ActiveSession.read_to_string.

Run: ``.venv/bin/python benchmarks/agent_client.py [--turns 300]``. Both drive the same in-process
``acpio testy`` (no pipe: only the client side differs) with the same turn, a streamed echo and a
tool call, in alternating rounds; each prints the mean time of a turn. AgentClient does more per
turn (the merged tool calls, the events, the usage, the TurnResult): this shows how much that is.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time

from acpio import AgentClient, Client, SessionConnection
from acpio.agents.testy import testy_agent
from acpio.schema import ClientCapabilities, FileSystemCapabilities, InitializeRequest

PROMPT = "echo hello there\ntool Look around"


async def agent_client(root: str, turns: int) -> float:
    """Seconds per turn through AgentClient.prompt."""
    async with AgentClient(testy_agent(), cwd=root, permissions="allow") as client:
        session = await client.new_session()
        await session.prompt(PROMPT)  # warm
        start = time.perf_counter()
        for _ in range(turns):
            await session.prompt(PROMPT)
        return (time.perf_counter() - start) / turns


async def read_to_string(root: str, turns: int) -> float:
    """Seconds per turn through send_prompt and read_to_string."""

    async def main(cx: SessionConnection) -> float:
        files = FileSystemCapabilities(read_text_file=True, write_text_file=True)
        await cx.initialize(
            InitializeRequest(protocol_version=1, client_capabilities=ClientCapabilities(fs=files))
        )
        async with cx.build_session(root).start_session() as session:
            session.send_prompt(PROMPT)
            await session.read_to_string(permissions="allow", files=root)  # warm
            start = time.perf_counter()
            for _ in range(turns):
                session.send_prompt(PROMPT)
                await session.read_to_string(permissions="allow", files=root)
            return (time.perf_counter() - start) / turns

    return await Client.builder().connect_with(testy_agent(), main)


async def run(turns: int, rounds: int) -> None:
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    root = tempfile.mkdtemp()
    for _ in range(rounds):
        for name, measure in (("read_to_string", read_to_string), ("AgentClient.prompt", agent_client)):
            print(f"{name:>20}: {await measure(root, turns) * 1e3:.2f} ms/turn")
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="A turn through AgentClient.prompt against read_to_string")
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    asyncio.run(run(arguments.turns, arguments.rounds))
