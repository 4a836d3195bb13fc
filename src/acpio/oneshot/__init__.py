"""The one-shot client behind ``acpio prompt``: one prompt, one turn, shown as it happens.

* :mod:`~acpio.oneshot.run`: the flow (:func:`run_prompt`, :class:`PromptOptions`, :class:`ExitCode`);
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
from acpio.oneshot.permissions import AskPolicy, LineInput
from acpio.oneshot.render import JsonLinesRenderer, PlainRenderer, Renderer
from acpio.oneshot.run import ExitCode, OutputMode, PolicyName, PromptFailed, PromptOptions, run_prompt
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
