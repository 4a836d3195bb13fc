"""An ACP agent as a LangChain chat model and as a LangGraph node: testy, then ``acpio agent --offline``."""

from __future__ import annotations

import asyncio
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

pytest.importorskip(
    "langgraph", reason="the langgraph extra is not installed: pip install 'acpio[langgraph]'"
)

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph

from acpio.frameworks.langgraph import AcpChatModel, acp_node

ACPIO = [sys.executable, "-m", "acpio"]


def traced(trace: Path, agent: list[str]) -> list[str]:
    """``agent`` behind a conductor that writes every message to ``trace``."""
    return [*ACPIO, "conductor", "--trace", str(trace), "agent", shlex.join(agent)]


def methods(trace: Path, method: str) -> list[dict[str, Any]]:
    lines = trace.read_bytes().splitlines(keepends=True)
    events = [orjson.loads(line) for line in lines if line.endswith(b"\n")]  # not a line being written
    return [e for e in events if e["type"] in ("request", "notification") and e.get("method") == method]


@pytest.fixture
def testy(tmp_path: Path) -> Iterator[tuple[AcpChatModel, Path]]:
    trace = tmp_path / "trace.jsons"
    model = AcpChatModel(command=traced(trace, [*ACPIO, "testy"]), cwd=tmp_path)
    yield model, trace
    model.close()


async def test_testy_answers_streamed_with_one_session_per_conversation(
    testy: tuple[AcpChatModel, Path],
) -> None:
    model, trace = testy
    chunks = [chunk.content async for chunk in model.astream("hello from the graph")]
    assert "".join(str(c) for c in chunks) == "hello from the graph"
    assert chunks[:3] == ["hello ", "from ", "the "]  # as the agent streamed it, word by word
    first = await model.ainvoke("one")
    assert first.content == "one"
    assert first.response_metadata["stop_reason"] == "end_turn"
    follow = await model.ainvoke([HumanMessage("one"), first, HumanMessage("two")])  # the same conversation
    assert follow.content == "two"
    model.close()  # the trace is complete once the conductor has ended
    assert len(methods(trace, "session/new")) == 2
    prompts = [p["params"]["prompt"][0]["text"] for p in methods(trace, "session/prompt")]
    assert prompts == ["hello from the graph", "one", "two"]  # only what is new goes to the agent
    sessions = [p["params"]["sessionId"] for p in methods(trace, "session/prompt")]
    assert sessions[1] == sessions[2] != sessions[0]


async def test_cancelling_the_call_cancels_the_agents_turn(testy: tuple[AcpChatModel, Path]) -> None:
    model, trace = testy
    call = asyncio.create_task(model.ainvoke("sleep 30"))
    async with asyncio.timeout(30):  # the agent process starts, then gets the prompt
        while True:
            if trace.exists() and methods(trace, "session/prompt"):
                break
            await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # the agent is sleeping in its turn
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert (await model.ainvoke("still here")).content == "still here"
    model.close()
    assert len(methods(trace, "session/cancel")) == 1
    ended = [e for e in trace.read_bytes().splitlines() if b'"stopReason":"cancelled"' in e]
    assert len(ended) == 1  # the agent ended the turn cancelled, not after its 30 s


def test_the_sync_api_answers_too(testy: tuple[AcpChatModel, Path]) -> None:
    model, _ = testy
    assert model.invoke("sync words").content == "sync words"
    assert "".join(str(c.content) for c in model.stream("and streamed")) == "and streamed"


def node_graph(model: AcpChatModel) -> Any:
    def check(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        return {"messages": [AIMessage(f"The agent said {len(last.text.split())} words.")]}

    builder = StateGraph(MessagesState).add_node("agent", acp_node(model)).add_node("check", check)
    builder.add_edge(START, "agent").add_edge("agent", "check")
    return builder.compile(checkpointer=InMemorySaver())


@pytest.mark.slow  # the reference agent, its model and its tools start in a process of their own
async def test_acpio_agent_offline_answers_as_a_node_inside_a_graph(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("- buy milk\n")
    trace = tmp_path / "trace.jsons"
    agent = [*ACPIO, "agent", "--offline", "--store", "memory:"]
    model = AcpChatModel(command=traced(trace, agent), cwd=tmp_path, permissions="allow")
    graph = node_graph(model)
    thread = {"configurable": {"thread_id": "t1"}}
    try:
        state = await graph.ainvoke({"messages": [HumanMessage("say hello from the agent")]}, thread)
        assert state["messages"][1].content == "hello from the agent\n"
        assert state["messages"][2].content == "The agent said 4 words."
        # the same thread goes on in the same session; the agent edits through the client's files
        more = {"messages": [HumanMessage("edit notes.txt: - buy milk => - buy milk\\n- try acpio")]}
        state = await graph.ainvoke(more, thread)
        assert (tmp_path / "notes.txt").read_text() == "- buy milk\n- try acpio\n"
    finally:
        model.close()
    assert len(methods(trace, "session/new")) == 1
    assert len(methods(trace, "session/prompt")) == 2
    assert len(methods(trace, "fs/write_text_file")) == 1
