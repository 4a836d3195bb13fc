from pathlib import Path

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel as FakeModel
from langchain_core.messages import AIMessage
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

import acpio
from acpio.frameworks.langgraph import approve, graph_app

CALL = {"id": "n", "function": {"name": "write_file", "arguments": '{"path": "notes.txt", "content": "hi"}'}}
model = FakeModel(messages=iter([AIMessage("", additional_kwargs={"tool_calls": [CALL]}), "Noted."] * 99))
graph = StateGraph(MessagesState).add_node("agent", lambda s: {"messages": model.invoke(s["messages"])})


def write_file(path: str, content: str) -> str:
    """Write a file if the user allows it (asked as an ACP permission)."""
    return "Wrote it." if approve("write_file", locals()) and Path(path).write_text(content) else "Refused."


async def main() -> None:  # serves the graph on stdio; ./langgraph.db keeps its checkpoints and sessions
    graph.add_node(ToolNode([write_file])).add_edge("tools", "agent").set_entry_point("agent")
    async with AsyncSqliteSaver.from_conn_string("langgraph.db") as saver:
        compiled = graph.add_conditional_edges("agent", tools_condition).compile(saver)
        await graph_app(compiled, store="sqlite:///langgraph.db").serve(acpio.Stdio())


acpio.run(main())
