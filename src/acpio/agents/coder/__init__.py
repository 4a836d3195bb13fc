"""The reference coding agent behind ``acpio agent``, built on :mod:`acpio.app` (see ``docs/agent.md``).

Modules: :mod:`~acpio.agents.coder.model` (the model provider interface),
:mod:`~acpio.agents.coder.providers` (the providers, imported lazily; ``offline`` needs no key).
"""
