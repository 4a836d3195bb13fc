"""Agents built on other frameworks served over ACP, and ACP agents used inside them: one subpackage each.

* :mod:`acpio.frameworks.openai_agents`: an OpenAI Agents SDK agent (``acpio[openai-agents]``).
* :mod:`acpio.frameworks.langgraph`: a LangGraph graph, and an ACP agent as a LangChain chat model
  or a LangGraph node (``acpio[langgraph]``).

Each subpackage sits behind its extra: importing ``acpio.frameworks`` imports none of them. The
adapters are :class:`~acpio.app.AgentApp` prompt functions; the tools' calls are shown through
:mod:`acpio.app.projections`.
"""
