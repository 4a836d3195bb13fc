"""The one-shot client behind ``acpio prompt``: one prompt, one turn, shown as it happens.

* :mod:`~acpio.oneshot.run`: the flow (:func:`run_prompt`), given :class:`PromptOptions`, ending
  with an :class:`ExitCode` (both in :mod:`~acpio.oneshot.options`);
* :mod:`~acpio.oneshot.opening`: ``initialize`` and the session, new or continued;
  :mod:`~acpio.oneshot.failures`: what the user reads when the agent fails;
* :mod:`~acpio.oneshot.answers`: the answers to the agent's requests during the turn;
* :mod:`acpio.client` (shared with every client): ``fs/*`` confined to one directory
  (:class:`~acpio.client.ConfinedFiles`), the ``--allow`` and ``--deny`` policies;
* :mod:`~acpio.oneshot.terminals`: ``terminal/*`` as real processes (:class:`Terminals`);
* :mod:`~acpio.oneshot.permissions`: ``--ask``, and commands covered by granted permissions;
* :mod:`~acpio.oneshot.render` (plain text, JSON lines: fed by a :class:`~acpio.transports.Tap` for
  ``--json``) and :mod:`~acpio.oneshot.render_rich` (a terminal).

The pieces are usable on their own; the ones any client wants (confined files, the allow and
deny policies) are in :mod:`acpio.client`.
"""

from __future__ import annotations

from acpio.client.files import ConfinedFiles
from acpio.client.permissions import AllowPolicy, DenyPolicy, PermissionPolicy
from acpio.oneshot.answers import PolicyName
from acpio.oneshot.options import ExitCode, OutputMode, PromptFailed, PromptOptions
from acpio.oneshot.permissions import AskPolicy, LineInput
from acpio.oneshot.render import JsonLinesRenderer, PlainRenderer, Renderer
from acpio.oneshot.run import run_prompt
from acpio.oneshot.terminals import OutputBuffer, Terminals, TerminalSnapshot

__all__ = [
    "AllowPolicy",
    "AskPolicy",
    "ConfinedFiles",
    "DenyPolicy",
    "ExitCode",
    "JsonLinesRenderer",
    "LineInput",
    "OutputBuffer",
    "OutputMode",
    "PermissionPolicy",
    "PlainRenderer",
    "PolicyName",
    "PromptFailed",
    "PromptOptions",
    "Renderer",
    "TerminalSnapshot",
    "Terminals",
    "run_prompt",
]
