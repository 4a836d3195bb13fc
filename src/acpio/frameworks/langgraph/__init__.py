"""LangGraph on ACP (``pip install 'acpio[langgraph]'``): serve a graph, or use an ACP agent inside one.

Serve a compiled graph (with a checkpointer) to any ACP editor::

    from acpio.frameworks.langgraph import run_graph

    run_graph(builder, "sessions.db", name="my-graph")      # or graph_app(compiled_graph) for more control

Use an ACP agent as a LangChain chat model, or as a node of a graph::

    from acpio.frameworks.langgraph import AcpChatModel, acp_node

    model = AcpChatModel(command=["acpio", "agent", "--offline"])
    builder.add_node("coder", acp_node(model))

See ``docs/frameworks/langgraph.md`` for what maps to what.
"""

from importlib.util import find_spec
from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

for _package in ("langgraph", "langchain_core"):
    if find_spec(_package) is None:
        raise ImportError(f"acpio.frameworks.langgraph needs {_package}: pip install 'acpio[langgraph]'")

if TYPE_CHECKING:
    from acpio.frameworks.langgraph.chat_model import AcpChatModel, AcpNode, acp_node
    from acpio.frameworks.langgraph.interrupts import approve
    from acpio.frameworks.langgraph.serve import graph_app, run_graph

__all__ = ["AcpChatModel", "AcpNode", "acp_node", "approve", "graph_app", "run_graph"]

if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
