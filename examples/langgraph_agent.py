"""A LangGraph graph served over ACP: a scripted model writes notes.txt (shown as a diff) if allowed."""

from pathlib import Path

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel as FakeModel
from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from acpio.frameworks.langgraph import approve, run_graph

CALL = {"id": "n", "function": {"name": "write_file", "arguments": '{"path": "notes.txt", "content": "hi"}'}}
model = FakeModel(messages=iter([AIMessage("", additional_kwargs={"tool_calls": [CALL]}), "Noted."] * 99))


def agent(state: MessagesState) -> MessagesState:
    return {"messages": [model.invoke(state["messages"])]}


def write_file(path: str, content: str) -> str:
    """Write a file if the user allows it (asked as an ACP permission)."""
    return "Wrote it." if approve("write_file", locals()) and Path(path).write_text(content) else "Refused."


graph = StateGraph(MessagesState).add_node(agent).add_node(ToolNode([write_file])).set_entry_point("agent")
graph.add_edge("tools", "agent").add_conditional_edges("agent", tools_condition)
run_graph(graph, "langgraph.db", protocols=(1, 2))  # on stdio, to v1 and v2 editors; state in SQLite
