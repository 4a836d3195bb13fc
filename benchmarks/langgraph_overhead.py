"""The LangGraph adapter's cost per update, over a hand-written AgentApp and LangGraph's own streaming.

    python benchmarks/langgraph_overhead.py             # 2,000 words a turn, 7 repetitions
    python benchmarks/langgraph_overhead.py --quick     # small sizes, to check the script runs

A turn streams N text chunks, four ways, each in this process (the agent served in-process to an
acpio client that reads every update), each the least CPU time of --repeat runs (both ends run in
this process, so CPU time is the work, which other load on a shared machine inflates less than wall
time):

* ``graph alone``: LangGraph streams a graph whose node calls langchain-core's
  ``FakeListChatModel`` (``stream_mode=["messages", "updates", "custom"]``, subgraphs), nobody
  listening over ACP: LangGraph's own cost per chunk;
* ``AgentApp``: a hand-written ``AgentApp`` whose prompt function says the same N chunks: the cost
  of an update through acpio, client included;
* ``GraphStream``: an ``AgentApp`` whose prompt function maps the graph's recorded stream with the
  adapter's :class:`~acpio.frameworks.langgraph.stream.GraphStream`;
* ``graph_app``: the same graph served by :func:`acpio.frameworks.langgraph.graph_app`.

The adapter's own overhead per update is ``GraphStream - AgentApp``; ``graph_app - graph alone -
AgentApp`` is the same seen end to end. Needs the langgraph extra.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from acpio import Client, SessionConnection
from acpio.app import AgentApp, StopReasonName, Turn
from acpio.app.projections import Projections
from acpio.frameworks.langgraph import graph_app
from acpio.frameworks.langgraph.stream import GraphStream
from acpio.schema import InitializeRequest


def graph(tokens: int) -> Any:
    # streams character by character (2N - 1 chunks) from its own _astream, as a real model's client does:
    # GenericFakeChatModel streams from a thread (one executor hop per chunk), which would be measured too
    model = FakeListChatModel(responses=[" ".join(["w"] * tokens)])

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState).add_node("agent", agent).add_edge(START, "agent")
    return builder.compile(checkpointer=InMemorySaver())


def replaying(items: list[tuple[Any, str, Any]]) -> AgentApp:
    """An AgentApp whose turn maps recorded LangGraph stream items with the adapter's GraphStream."""
    app = AgentApp("replay")
    projections = Projections()

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        stream = GraphStream(turn, projections)
        for namespace, mode, chunk in items:
            await stream.feed(namespace, mode, chunk)
        return "end_turn"

    return app


def hand_written(chunks: int) -> AgentApp:
    app = AgentApp("hand-written")

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        for i in range(chunks):
            await turn.say("w" if i % 2 == 0 else " ")
        return "end_turn"

    return app


async def over_acp(app: AgentApp) -> int:
    """One turn of ``app``, read by an acpio client in this process; the updates it read."""

    async def main(cx: SessionConnection) -> int:
        await cx.send_request(InitializeRequest(protocol_version=1))
        async with cx.build_session(os.getcwd()).start_session() as session:
            session.send_prompt("go")
            return len([message async for message in session if message.text is not None])

    return await Client.builder().connect_with(app.builder(), main)


async def record(compiled: Any) -> list[tuple[Any, str, Any]]:
    """What the graph streams for one prompt, as graph_app asks for it."""
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    modes = ["messages", "updates", "custom"]
    prompt = {"messages": [HumanMessage("go")]}
    return [item async for item in compiled.astream(prompt, config, stream_mode=modes, subgraphs=True)]


async def alone(compiled: Any) -> int:
    return sum(mode == "messages" for _ns, mode, _chunk in await record(compiled))


async def least_cpu(run: Callable[[], Awaitable[int]], repeat: int) -> tuple[float, int]:
    """The least CPU seconds of ``repeat`` runs, and the count the runs returned (all the same)."""
    best, counts = float("inf"), set()
    for _ in range(repeat):
        began = time.process_time()
        counts.add(await run())
        best = min(best, time.process_time() - began)
    if len(counts) != 1:
        raise SystemExit(f"the runs did not stream the same number of chunks: {sorted(counts)}")
    return best, counts.pop()


async def main(tokens: int, repeat: int) -> None:
    compiled = graph(tokens)
    await alone(compiled)  # warm-up: imports, first-call costs
    graph_cpu, graph_chunks = await least_cpu(lambda: alone(compiled), repeat)
    app_cpu, app_chunks = await least_cpu(lambda: over_acp(hand_written(graph_chunks)), repeat)
    items = await record(compiled)
    replay_cpu, replay_chunks = await least_cpu(lambda: over_acp(replaying(items)), repeat)
    served_cpu, served_chunks = await least_cpu(lambda: over_acp(graph_app(compiled)), repeat)
    if not graph_chunks == app_chunks == replay_chunks == served_chunks:
        raise SystemExit(
            f"chunk counts differ: {graph_chunks}, {app_chunks}, {replay_chunks}, {served_chunks}"
        )
    figures = [
        ("graph alone", graph_cpu, "LangGraph streaming the fake model, no ACP"),
        ("AgentApp", app_cpu, "a hand-written AgentApp saying the same chunks"),
        ("GraphStream", replay_cpu, "an AgentApp mapping the recorded stream with the adapter"),
        ("graph_app", served_cpu, "the graph served by graph_app, end to end"),
    ]
    per = {name: cpu / graph_chunks * 1e6 for name, cpu, _ in figures}
    print(f"{graph_chunks} chunks a turn, least CPU time of {repeat} runs, microseconds per update:")
    for name, _, what in figures:
        print(f"  {name:<12} {per[name]:8.1f}  {what}")
    adapter = per["GraphStream"] - per["AgentApp"]
    print(f"  adapter overhead (GraphStream - AgentApp): {adapter:.1f} us per update")
    end_to_end = per["graph_app"] - per["graph alone"] - per["AgentApp"]
    print(f"  end to end (graph_app - graph alone - AgentApp): {end_to_end:.1f} us per update")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=2000, help="words the model streams a turn")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="200 tokens, 2 repetitions")
    args = parser.parse_args()
    tokens, repeat = (200, 2) if args.quick else (args.tokens, args.repeat)
    print(f"Python {platform.python_version()} ({sys.executable}); load before: {os.getloadavg()}")
    asyncio.run(main(tokens, repeat))
    print(f"load after: {os.getloadavg()}")
