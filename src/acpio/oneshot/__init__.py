"""The one-shot client behind ``acpio prompt``: one prompt, one turn, shown as it happens.

* :mod:`~acpio.oneshot.run`: the flow (:func:`run_prompt`, :class:`PromptOptions`, :class:`ExitCode`);
* :mod:`~acpio.oneshot.files`: ``fs/*`` confined to one directory (:class:`ConfinedFiles`);
* :mod:`~acpio.oneshot.terminals`: ``terminal/*`` as real processes (:class:`Terminals`);
* :mod:`~acpio.oneshot.permissions`: ``--allow``, ``--deny``, ``--ask``;
* :mod:`~acpio.oneshot.render` (plain text, JSON lines: fed by a :class:`~acpio.transports.Tap` for
  ``--json``) and :mod:`~acpio.oneshot.render_rich` (a terminal).

The pieces are usable on their own, for example to give another client confined file access::

    files = ConfinedFiles(project_dir)

    @app.on_request
    async def read(request: ReadTextFileRequest) -> ReadTextFileResponse:
        return files.read(request)
"""

from __future__ import annotations

from acpio.oneshot.files import ConfinedFiles
from acpio.oneshot.permissions import AllowPolicy, AskPolicy, DenyPolicy, LineInput, PermissionPolicy
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
