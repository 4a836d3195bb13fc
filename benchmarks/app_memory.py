"""An ``AgentApp`` agent's peak memory while one turn streams many ``turn.say`` updates, against its idle.

    python benchmarks/app_memory.py                        # 100,000 updates of "chunk", ACP v1
    python benchmarks/app_memory.py --updates 20000 --size 200 --protocol 2

The agent (this file with ``--agent``) is an ``AgentApp`` whose prompt function says ``N`` chunks of
``B`` characters (the same text each time, as ``benchmarks/run.py``'s agents send), awaiting each
``say`` (which waits whenever the client is behind). It is spawned over stdio by a client on plain
asyncio and orjson that reads every line. Printed: the agent's ``VmRSS`` after ``initialize`` and
``session/new`` (idle), its ``VmHWM`` once the turn's answer came (peak), their ratio, and the
streaming rate (a wall-clock figure: quote it with the machine's load). Run it with ``PYTHONPATH`` on
another checkout's ``src`` to compare two versions of acpio.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import orjson

IDLE_SETTLE = 0.5


def serve_agent(protocol: int) -> None:
    """The measured process: an ``AgentApp`` that says ``N`` chunks of ``B`` characters for ``stream N B``."""
    from acpio import AgentApp, Turn

    app = AgentApp("memory-bench", protocols=(protocol,))  # type: ignore[arg-type]

    @app.prompt
    async def prompt(turn: Turn) -> None:
        _, count, size = turn.text.split()
        text = "x" * int(size) if int(size) else "chunk"
        for _ in range(int(count)):
            await turn.say(text)

    app.run()


def memory_mb(pid: int, field: str) -> float:
    """``VmRSS`` or ``VmHWM`` of process ``pid``, in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/{pid}/status")


class Agent:
    """The agent process, as lines in and out."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None
        assert process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = process.stdout
        self._next_id = 0
        self.updates = 0

    def request(self, method: str, params: dict[str, Any]) -> int:
        self._next_id += 1
        frame = {"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params}
        self._stdin.write(orjson.dumps(frame) + b"\n")
        return self._next_id

    async def answer(self, request_id: int, until: str | None = None) -> Any:
        """Read lines (counting updates) up to the answer to ``request_id`` (and the state ``until``)."""
        answered: Any = None
        while True:
            line = await self._stdout.readline()
            if not line:
                raise RuntimeError("the agent closed its output")
            message = orjson.loads(line)
            if message.get("method") == "session/update":
                update = message["params"]["update"]
                if update.get("sessionUpdate") == "state_update":
                    if update.get("state") == until and answered is not None:
                        return answered
                elif update.get("sessionUpdate") == "agent_message_chunk":
                    self.updates += 1
            elif message.get("id") == request_id:
                if "error" in message:
                    raise RuntimeError(f"request {request_id} failed: {message['error']}")
                answered = message["result"]
                if until is None:
                    return answered


async def measure(protocol: int, updates: int, size: int) -> dict[str, float]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        __file__,
        "--agent",
        str(protocol),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        limit=1 << 24,
    )
    agent = Agent(process)
    if protocol == 1:
        init: dict[str, Any] = {"protocolVersion": 1, "clientCapabilities": {}}
        new: dict[str, Any] = {"cwd": "/bench", "mcpServers": []}
    else:
        init = {"protocolVersion": 2, "info": {"name": "bench", "version": "1"}, "capabilities": {}}
        new = {"cwd": "/bench"}
    await agent.answer(agent.request("initialize", init))
    session_id = (await agent.answer(agent.request("session/new", new)))["sessionId"]
    await asyncio.sleep(IDLE_SETTLE)
    idle = memory_mb(process.pid, "VmRSS")
    started = time.perf_counter()
    prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": f"stream {updates} {size}"}]}
    await agent.answer(agent.request("session/prompt", prompt), "idle" if protocol == 2 else None)
    seconds = time.perf_counter() - started
    peak = memory_mb(process.pid, "VmHWM")
    assert agent.updates == updates, agent.updates
    assert process.stdin is not None
    process.stdin.close()
    await process.wait()
    return {"idle_mb": idle, "peak_mb": peak, "ratio": peak / idle, "updates_per_s": updates / seconds}


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--updates", type=int, default=100_000, help="updates in the one turn")
    parser.add_argument("--size", type=int, default=0, help="characters per update (0: the text 'chunk')")
    parser.add_argument("--protocol", type=int, choices=[1, 2], default=1)
    parser.add_argument("--agent", type=int, choices=[1, 2], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.agent:
        serve_agent(args.agent)
        return
    figures = asyncio.run(measure(args.protocol, args.updates, args.size))
    print(json.dumps({"protocol": args.protocol, "updates": args.updates, "size": args.size, **figures}))
    print(
        f"v{args.protocol}, {args.updates:,} updates: idle {figures['idle_mb']:.1f} MB, "
        f"peak {figures['peak_mb']:.1f} MB ({figures['ratio']:.2f}x idle), "
        f"{figures['updates_per_s']:,.0f} updates/s"
    )


if __name__ == "__main__":
    main()
