"""Agents built on other frameworks, served over ACP: each adapter a subpackage behind its extra.

* :mod:`acpio.frameworks.openai_agents`: an OpenAI Agents SDK agent (``acpio[openai-agents]``).

The adapters are :class:`~acpio.app.AgentApp` prompt functions; the tools' calls are shown through
:mod:`acpio.app.projections`.
"""
