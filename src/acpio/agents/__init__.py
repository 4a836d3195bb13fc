"""Ready-made agents built with acpio.

* :mod:`acpio.agents.testy`: ``acpio testy``, a deterministic agent driven by a small prompt
  language, for testing clients, proxies and conductors (see ``docs/testy.md``).
* :mod:`acpio.agents.coder`: ``acpio agent``, the reference coding agent: models of OpenAI-compatible
  servers, Anthropic or a scripted offline model; sessions in a store; modes, tools, auth and MCP
  (see ``docs/agent.md``).
"""
