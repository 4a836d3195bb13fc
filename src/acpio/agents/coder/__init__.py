"""The reference coding agent behind ``acpio agent``, built on :mod:`acpio.app` (see ``docs/agent.md``).

::

    from acpio.agents.coder import CoderOptions, coder_app

    coder_app(CoderOptions(offline=True, store="memory:")).run()   # serve an editor on stdio

Modules: :mod:`~acpio.agents.coder.model` (the model provider interface),
:mod:`~acpio.agents.coder.providers` (the providers, imported lazily; ``offline`` needs no key),
:mod:`~acpio.agents.coder.settings` (settings files, the credential file),
:mod:`~acpio.agents.coder.catalogue` (the usable models), :mod:`~acpio.agents.coder.tools` (the
tools, MCP servers per session), :mod:`~acpio.agents.coder.conversation` (the model's view of a
session's history) and :mod:`~acpio.agents.coder.agent` (the app). The names below are imported on
first use, so ``import acpio.agents.coder.model`` stays cheap for provider modules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if TYPE_CHECKING:
    from acpio.agents.coder.agent import CoderOptions, coder_app

__all__ = ["CoderOptions", "coder_app"]

if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
