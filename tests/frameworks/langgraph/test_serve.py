"""A real LangGraph graph (langchain-core's fake chat models, a real checkpointer) served over ACP."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "langgraph", reason="the langgraph extra is not installed: pip install 'acpio[langgraph]'"
)

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.pregel import Pregel
from langgraph.types import interrupt
from pydantic import BaseModel

from acpio.client import AgentClient, FormAnswer
from acpio.frameworks.langgraph import approve, graph_app
from acpio.schema import CreateElicitationRequest, ElicitationSchema
from acpio.testing import WirePeer, serving

CAPABILITIES = {"elicitation": {"form": {}}}


def calling(name: str, args: dict[str, Any], call_id: str) -> AIMessage:
    """A model message that calls ``name`` (OpenAI's shape: langchain-core streams it as tool-call chunks)."""
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
    return AIMessage(content="", additional_kwargs={"tool_calls": [call]})


def agent_graph(script: list[AIMessage | str], tools: list[Callable[..., str]]) -> Pregel[Any, Any, Any, Any]:
    model = GenericFakeChatModel(messages=iter(script))

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState).add_node("agent", agent).add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent").add_conditional_edges("agent", tools_condition).add_edge(
        "tools", "agent"
    )
    return builder.compile(checkpointer=InMemorySaver())


async def open_session(peer: WirePeer, cwd: Path) -> str:
    await peer.response_to(
        peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": CAPABILITIES})
    )
    new = await peer.response_to(peer.request("session/new", {"cwd": str(cwd), "mcpServers": []}))
    return str(new["result"]["sessionId"])


def prompt(peer: WirePeer, session_id: str, text: str) -> Any:
    return peer.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )


def updates(frames: list[Any]) -> list[dict[str, Any]]:
    return [f["params"]["update"] for f in frames if f.get("method") == "session/update"]


def said(frames: list[Any]) -> str:
    return "".join(
        u["content"]["text"] for u in updates(frames) if u["sessionUpdate"] == "agent_message_chunk"
    )


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Callable[[Pregel[Any, Any, Any, Any]], Any]]:
    """Serve a graph in-process: ``peer, session_id = await served(graph)``."""
    async with contextlib.AsyncExitStack() as stack:

        async def serve(graph: Pregel[Any, Any, Any, Any]) -> tuple[WirePeer, str]:
            peer = await stack.enter_async_context(serving(graph_app(graph).builder()))
            return peer, await open_session(peer, tmp_path)

        yield serve


async def test_a_streamed_tool_call_is_shown_with_its_kind_and_diff_then_its_result(
    served: Any, tmp_path: Path
) -> None:
    def write_file(path: str, content: str) -> str:
        """Write a file."""
        return f"Wrote {(tmp_path / path).write_text(content)} characters"

    (tmp_path / "notes.txt").write_text("- milk\n")
    script = [calling("write_file", {"path": "notes.txt", "content": "- milk\n- acpio\n"}, "call_1"), "Done."]
    peer, sid = await served(agent_graph(script, [write_file]))
    frames: list[Any] = []
    answer = await peer.response_to(prompt(peer, sid, "add acpio"), frames)
    assert answer["result"] == {"stopReason": "end_turn"}
    calls = [u for u in updates(frames) if u["sessionUpdate"] in ("tool_call", "tool_call_update")]
    assert calls[0] == {
            "sessionUpdate": "tool_call", "toolCallId": "call_1", "title": "write_file", "kind": "edit",
        "status": "pending",
    }  # fmt: skip
    shown = calls[1]
    assert shown["status"] == "in_progress"
    assert shown["title"] == "Edit notes.txt"
    assert shown["rawInput"] == {"path": "notes.txt", "content": "- milk\n- acpio\n"}
    assert shown["locations"] == [{"path": str(tmp_path / "notes.txt")}]
    assert shown["content"] == [
        {
            "type": "diff",
            "path": str(tmp_path / "notes.txt"),
            "oldText": "- milk\n",
            "newText": "- milk\n- acpio\n",
        }
    ]
    assert calls[2] == {  # an edit's output is not shown: the diff is
        "sessionUpdate": "tool_call_update", "toolCallId": "call_1", "status": "completed",
        "rawOutput": "Wrote 15 characters",
    }  # fmt: skip
    assert said(frames) == "Done."
    assert (tmp_path / "notes.txt").read_text() == "- milk\n- acpio\n"


class Release(BaseModel):
    version: str
    notes: bool = True


async def test_an_interrupt_with_a_response_schema_is_a_form_and_its_answer_resumes_the_graph(
    served: Any,
) -> None:
    async def ask(state: MessagesState) -> dict[str, Any]:
        release = interrupt("How should I release?", response_schema=Release)
        name = interrupt("Who signs it?")  # no schema: one text field
        text = f"Releasing {release.version} (notes: {release.notes}), signed {name}."
        return {"messages": [AIMessage(text)]}

    graph = StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask")
    peer, sid = await served(graph.compile(checkpointer=InMemorySaver()))
    request_id = prompt(peer, sid, "release")
    form = await peer.message_for("elicitation/create")
    assert form["params"]["message"] == "How should I release?"
    assert form["params"]["mode"] == "form"
    assert form["params"]["requestedSchema"]["properties"]["version"] == {
        "type": "string",
        "title": "Version",
    }
    assert form["params"]["requestedSchema"]["required"] == ["version"]
    peer.respond(form, {"action": "accept", "content": {"version": "1.2.3", "notes": False}})
    text = await peer.message_for("elicitation/create")
    assert text["params"]["message"] == "Who signs it?"
    assert text["params"]["requestedSchema"]["properties"] == {
        "answer": {"type": "string", "title": "Who signs it?"}
    }
    peer.respond(text, {"action": "accept", "content": {"answer": "Ada"}})
    frames: list[Any] = []
    answer = await peer.response_to(request_id, frames)
    assert answer["result"] == {"stopReason": "end_turn"}
    assert said(frames) == "Releasing 1.2.3 (notes: False), signed Ada."


@pytest.mark.parametrize(("choice", "outcome"), [("allow", "Wrote it"), ("reject", "Refused")])
async def test_an_approval_is_a_permission_on_the_tool_call(
    served: Any, tmp_path: Path, choice: str, outcome: str
) -> None:
    def write_file(path: str, content: str) -> str:
        """Write a file if the user allows it."""
        if not approve("write_file", {"path": path, "content": content}, description="Write the notes"):
            return "Refused"
        (tmp_path / path).write_text(content)
        return "Wrote it"

    script = [calling("write_file", {"path": "n.txt", "content": "hi"}, "call_w"), "Over."]
    peer, sid = await served(agent_graph(script, [write_file]))
    request_id = prompt(peer, sid, "write")
    asked = await peer.message_for("session/request_permission")
    assert asked["params"]["toolCall"] == {"toolCallId": "call_w", "title": "Write the notes"}
    assert [o["kind"] for o in asked["params"]["options"]] == ["allow_once", "reject_once"]
    peer.respond(asked, {"outcome": {"outcome": "selected", "optionId": choice}})
    frames: list[Any] = []
    assert (await peer.response_to(request_id, frames))["result"] == {"stopReason": "end_turn"}
    result = [u for u in updates(frames) if u.get("toolCallId") == "call_w" and "rawOutput" in u]
    assert result[0]["rawOutput"] == outcome
    assert (tmp_path / "n.txt").exists() == (choice == "allow")


async def test_a_cancel_cancels_the_graphs_task_and_the_turn_ends_cancelled(served: Any) -> None:
    started, stopped = asyncio.Event(), asyncio.Event()

    async def slow(state: MessagesState) -> dict[str, Any]:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            stopped.set()
            raise
        return {"messages": [AIMessage("never")]}

    graph = StateGraph(MessagesState).add_node("slow", slow).add_edge(START, "slow")
    peer, sid = await served(graph.compile(checkpointer=InMemorySaver()))
    request_id = prompt(peer, sid, "wait")
    await asyncio.wait_for(started.wait(), 5)
    peer.notify("session/cancel", {"sessionId": sid})
    answer = await peer.response_to(request_id)
    assert answer["result"] == {"stopReason": "cancelled"}
    assert stopped.is_set()  # the node itself was cancelled, not left running


async def test_subgraphs_stream_and_todos_become_the_plan(served: Any) -> None:
    inner_model = GenericFakeChatModel(messages=iter(["from the subgraph"]))

    async def inner(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await inner_model.ainvoke(state["messages"])]}

    class Planned(MessagesState):
        todos: list[dict[str, str]]

    def plan(state: Planned) -> dict[str, Any]:
        todos = [{"content": "look", "status": "completed"}, {"content": "fix", "status": "in_progress"}]
        return {"todos": todos}

    sub = StateGraph(MessagesState).add_node("inner", inner).add_edge(START, "inner").compile()
    graph = StateGraph(Planned).add_node("plan", plan).add_node("sub", sub)
    graph.add_edge(START, "plan").add_edge("plan", "sub")
    peer, sid = await served(graph.compile(checkpointer=InMemorySaver()))
    frames: list[Any] = []
    assert (await peer.response_to(prompt(peer, sid, "go"), frames))["result"] == {"stopReason": "end_turn"}
    plans = [u for u in updates(frames) if u["sessionUpdate"] == "plan"]
    assert plans == [
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "look", "status": "completed", "priority": "medium"},
                {"content": "fix", "status": "in_progress", "priority": "medium"},
            ],
        }
    ]
    assert said(frames) == "from the subgraph"


async def test_an_interrupt_to_a_client_without_forms_fails_the_turn_saying_why(tmp_path: Path) -> None:
    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(str(interrupt("Your name?")))]}

    graph = StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask")
    async with serving(graph_app(graph.compile(checkpointer=InMemorySaver())).builder()) as peer:
        await peer.response_to(peer.request("initialize", {"protocolVersion": 1}))
        new = await peer.response_to(peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        answer = await peer.response_to(prompt(peer, new["result"]["sessionId"], "hi"))
    assert answer["error"]["message"].startswith(
        "The graph asks 'Your name?' (an interrupt), and this client"
    )
    assert answer["error"]["data"] == {
        "interrupt": "Your name?",
        "needs": "clientCapabilities.elicitation.form",
    }


async def test_an_agent_client_answers_the_graphs_interrupts_with_its_forms_callback(tmp_path: Path) -> None:
    async def ask(state: MessagesState) -> dict[str, Any]:
        release = interrupt("How should I release?", response_schema=Release)
        name = interrupt("Who signs it?")
        return {
            "messages": [AIMessage(f"Releasing {release.version} (notes: {release.notes}), signed {name}.")]
        }

    async def fill(request: CreateElicitationRequest) -> FormAnswer:
        fields = set((request.requested_schema or ElicitationSchema()).properties or {})
        return {"version": "1.2.3", "notes": "no"} if "version" in fields else {"answer": "Ada"}

    graph = StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask")
    app = graph_app(graph.compile(checkpointer=InMemorySaver()))
    async with AgentClient(app, cwd=tmp_path, forms=fill) as client:
        result = await (await client.new_session()).prompt("release")

    assert result.ok, result.error
    assert result.text == "Releasing 1.2.3 (notes: False), signed Ada."
    assert [(form.message, form.content) for form in result.forms] == [
        ("How should I release?", {"version": "1.2.3", "notes": False}),
        ("Who signs it?", {"answer": "Ada"}),
    ]


def test_a_graph_without_a_checkpointer_is_refused_with_the_fix() -> None:
    graph = StateGraph(MessagesState).add_node("n", lambda s: {}).add_edge(START, "n").compile()
    with pytest.raises(ValueError, match=r"compile it with one \(graph.compile\(checkpointer="):
        graph_app(graph)


async def test_an_interrupt_inside_a_subgraph_is_asked_and_resumes_it(served: Any) -> None:
    def ask(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(f"Hello, {interrupt('Your name?')}.")]}

    sub = StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask").compile()
    graph = StateGraph(MessagesState).add_node("sub", sub).add_edge(START, "sub")
    peer, sid = await served(graph.compile(checkpointer=InMemorySaver()))
    request_id = prompt(peer, sid, "hi")
    form = await peer.message_for("elicitation/create")
    assert form["params"]["message"] == "Your name?"
    peer.respond(form, {"action": "accept", "content": {"answer": "Ada"}})
    frames: list[Any] = []
    assert (await peer.response_to(request_id, frames))["result"] == {"stopReason": "end_turn"}
    assert said(frames) == "Hello, Ada."


async def test_a_declined_form_resumes_the_graph_with_none(served: Any) -> None:
    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt({"message": "Deploy to which region?"})
        return {"messages": [AIMessage("Not deploying." if answer is None else f"Deploying to {answer}.")]}

    graph = StateGraph(MessagesState).add_node("ask", ask).add_edge(START, "ask")
    peer, sid = await served(graph.compile(checkpointer=InMemorySaver()))
    request_id = prompt(peer, sid, "deploy")
    form = await peer.message_for("elicitation/create")
    assert form["params"]["message"] == "Deploy to which region?"
    peer.respond(form, {"action": "decline"})
    frames: list[Any] = []
    assert (await peer.response_to(request_id, frames))["result"] == {"stopReason": "end_turn"}
    assert said(frames) == "Not deploying."


async def test_a_tool_call_id_the_model_repeats_is_made_unique_in_the_session(served: Any) -> None:
    def read_file(path: str) -> str:
        """Read a file."""
        return "text"

    call = calling("read_file", {"path": "a.txt"}, "call_same")
    peer, sid = await served(agent_graph([call, "One.", call, "Two."], [read_file]))
    ids = []
    for text in ("first", "second"):
        frames: list[Any] = []
        await peer.response_to(prompt(peer, sid, text), frames)
        ids += [u["toolCallId"] for u in updates(frames) if u["sessionUpdate"] == "tool_call"]
    assert ids[0] == "call_same"
    assert ids[1].startswith("call_same_")


async def test_after_a_turn_cancelled_at_its_question_the_next_prompt_runs_the_graph_again(
    served: Any, tmp_path: Path
) -> None:
    def write_file(path: str, content: str) -> str:
        """Write a file if the user allows it."""
        if not approve("write_file", {"path": path, "content": content}):
            return "Refused"
        (tmp_path / path).write_text(content)
        return "Wrote it"

    call = calling("write_file", {"path": "n.txt", "content": "hi"}, "call_w")
    peer, sid = await served(agent_graph([call, call, "Over."], [write_file]))
    first = prompt(peer, sid, "write")
    await peer.message_for("session/request_permission")
    peer.notify("session/cancel", {"sessionId": sid})
    assert (await peer.response_to(first))["result"] == {"stopReason": "cancelled"}
    second = prompt(peer, sid, "write, now")
    asked = await peer.message_for("session/request_permission")
    peer.respond(asked, {"outcome": {"outcome": "selected", "optionId": "allow"}})
    frames: list[Any] = []
    assert (await peer.response_to(second, frames))["result"] == {"stopReason": "end_turn"}
    assert (tmp_path / "n.txt").read_text() == "hi"
    assert said(frames) == "Over."
