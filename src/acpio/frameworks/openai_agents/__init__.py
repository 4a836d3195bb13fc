"""Serve an OpenAI Agents SDK agent over ACP (the ``acpio[openai-agents]`` extra).

In full::

    from agents import Agent
    from acpio.frameworks.openai_agents import serve_openai_agent

    serve_openai_agent(Agent(name="helper", instructions="Answer briefly."), store="sqlite:///sessions.db")

:func:`openai_agent_app` gives the :class:`~acpio.app.AgentApp` to serve in another way or to drive
in-process. :func:`acp_agent_tool` goes the other way: any ACP agent as a tool of an Agents SDK
agent. See ``docs/frameworks/openai-agents.md`` for what maps to what.
"""

from __future__ import annotations

from importlib.util import find_spec
from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if find_spec("agents") is None:
    raise ImportError(
        "acpio.frameworks.openai_agents needs the OpenAI Agents SDK (the package 'agents' is missing): "
        "pip install 'acpio[openai-agents]'"
    )

if TYPE_CHECKING:
    from acpio.frameworks.openai_agents.agent_tool import acp_agent_tool
    from acpio.frameworks.openai_agents.app import openai_agent_app, serve_openai_agent

__all__ = ["acp_agent_tool", "openai_agent_app", "serve_openai_agent"]

__getattr__, __dir__ = lazy_exports(globals())
