"""The OpenAI Agents SDK adapter's cost per update, over a hand-written AgentApp streaming the same text.

    python benchmarks/openai_agents_overhead.py              # 5,000 updates a turn, 5 repetitions
    python benchmarks/openai_agents_overhead.py --quick      # small sizes, to check the script runs

Three ways to stream N text deltas, each the median of --repeat runs, run alternately:

* ``hand-written``: an :class:`~acpio.app.AgentApp` whose prompt function calls ``turn.say`` N times;
* ``adapter``: :func:`acpio.frameworks.openai_agents.openai_agent_app` serving an ``Agent`` whose
  model streams N ``response.output_text.delta`` events (an in-process ``Model``: no HTTP, so what
  is measured is the SDK's runner and the adapter, not a server);
* ``SDK alone``: ``Runner.run_streamed`` of the same agent, its events read and dropped: no ACP.

Both apps are served in-process to the same client (``acpio.testing.serving``), which reads every
update. The figures are CPU time of this process per update (the client, the agent and the SDK run
here: CPU time is the work, which other load on a shared machine inflates less than wall time), and
wall time. The adapter's overhead is ``adapter - hand-written``; the SDK's own share of it is
``SDK alone``; the rest is the adapter's glue.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from agents import Agent, ModelSettings, RunConfig, Runner
from agents.models.interface import Model
from openai.types.responses import ResponseCompletedEvent, ResponseStreamEvent, ResponseTextDeltaEvent

from acpio.app import AgentApp, StopReasonName, Turn
from acpio.frameworks.openai_agents import openai_agent_app
from acpio.testing import WirePeer, serving

NO_TRACES = RunConfig(tracing_disabled=True)


def text_events(pieces: list[str]) -> list[ResponseStreamEvent]:
    """The events of one streamed answer made of ``pieces``, as the Responses API sends them."""
    place = {"item_id": "msg_1", "output_index": 0, "content_index": 0, "logprobs": []}
    deltas: list[ResponseStreamEvent] = [
        ResponseTextDeltaEvent.model_validate(
            {"type": "response.output_text.delta", "sequence_number": n, "delta": piece, **place}
        )
        for n, piece in enumerate(pieces)
    ]
    text = {"type": "output_text", "text": "".join(pieces), "annotations": []}
    message = {
        "id": "msg_1",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [text],
    }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
        "output_tokens": len(pieces),
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 10 + len(pieces),
    }
    response = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": "bench",
        "output": [message],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "status": "completed",
        "usage": usage,
    }
    done = {"type": "response.completed", "sequence_number": len(pieces), "response": response}
    return [*deltas, ResponseCompletedEvent.model_validate(done)]


class ReplayModel(Model):
    """A model that streams the same prepared events for every call."""

    def __init__(self, events: list[ResponseStreamEvent]) -> None:
        self.events = events

    async def get_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the benchmark streams")

    async def stream_response(  # type: ignore[override]
        self, *args: Any, **kwargs: Any
    ) -> AsyncIterator[ResponseStreamEvent]:
        for event in self.events:
            yield event


def hand_written(pieces: list[str]) -> AgentApp:
    app = AgentApp("hand-written")

    @app.prompt
    async def stream(turn: Turn) -> StopReasonName:
        for piece in pieces:
            await turn.say(piece)
        return "end_turn"

    return app


async def one_turn(app: AgentApp, n: int) -> tuple[float, float]:
    """CPU and wall seconds of one turn of ``app``, from the prompt to its answer, all N updates read."""
    async with serving(app.builder(), timeout=120) as peer:
        session = await open_session(peer)
        cpu, wall = time.process_time(), time.perf_counter()
        prompt = [{"type": "text", "text": "go"}]
        turn = peer.request("session/prompt", {"sessionId": session, "prompt": prompt})
        counted: list[Any] = []
        answer = await peer.response_to(turn, counted)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    chunks = sum(1 for m in counted if m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
    assert answer["result"] == {"stopReason": "end_turn"}, answer
    assert chunks == n, chunks
    return cpu, wall


async def open_session(peer: WirePeer) -> str:
    peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    await peer.response_to(1)
    new = peer.request("session/new", {"cwd": str(Path.cwd()), "mcpServers": []})
    return str((await peer.response_to(new))["result"]["sessionId"])


async def sdk_alone(agent: Agent[Any], n: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    result = Runner.run_streamed(agent, "go", run_config=NO_TRACES)
    deltas = 0
    async for event in result.stream_events():
        deltas += event.type == "raw_response_event" and event.data.type == "response.output_text.delta"
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    assert deltas == n, deltas
    return cpu, wall


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="200 updates, 1 repetition")
    args = parser.parse_args()
    n, repeat = (200, 1) if args.quick else (args.updates, args.repeat)
    pieces = [f"word{i} " for i in range(n)]
    agent = Agent(name="bench", instructions="", model=ReplayModel(text_events(pieces)))
    agent.model_settings = ModelSettings()
    ways: dict[str, Callable[[], Awaitable[tuple[float, float]]]] = {
        "hand-written": lambda: one_turn(hand_written(pieces), n),
        "adapter": lambda: one_turn(openai_agent_app(agent, run_config=NO_TRACES), n),
        "SDK alone": lambda: sdk_alone(agent, n),
    }
    print(f"python {platform.python_version()} ({sys.executable}), {n} updates a turn, {repeat} runs")
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for way in ways.values():  # warm-up: imports, first connection
        await way()
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    for _ in range(repeat):
        for name, way in ways.items():
            runs[name].append(await way())
    per: dict[str, tuple[float, float]] = {
        name: (
            statistics.median(c for c, _ in done) / n * 1e6,
            statistics.median(w for _, w in done) / n * 1e6,
        )
        for name, done in runs.items()
    }
    print(f"{'':14} {'CPU us/update':>14} {'wall us/update':>15}")
    for name, (cpu, wall) in per.items():
        print(f"{name:14} {cpu:14.1f} {wall:15.1f}")
    (hand, _), (adapter, _), (sdk, _) = per["hand-written"], per["adapter"], per["SDK alone"]
    print(
        f"adapter overhead: {adapter - hand:.1f} us CPU per update over the hand-written app "
        f"({adapter / hand:.2f}x), of which the SDK alone {sdk:.1f} us"
    )
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    asyncio.run(main())
