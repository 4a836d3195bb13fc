"""``acpio inspect``: an ACP agent in a live web page, every frame both ways, warnings, by-hand answers.

* :mod:`~acpio.inspector.checks`: the warning engine, plain (no I/O, no web): :class:`FrameChecker`
  is fed each frame of a connection and returns the :class:`Finding` s of the rules it breaks;
* :mod:`~acpio.inspector.record`: the run's record (:class:`Inspection`), what the page is fed;
* :mod:`~acpio.inspector.capture`: the run kept in SQLite (:class:`Capture`), exported as a trace;
* :mod:`~acpio.inspector.compare`: two runs compared (:func:`diff_runs`);
* :mod:`~acpio.inspector.answers`: the agent's requests answered by policy or by hand (:class:`Answers`);
* :mod:`~acpio.inspector.connection`: the agent driven by the page, or watched under an editor;
* :mod:`~acpio.inspector.server`: the page, Starlette on uvicorn (the ``inspect`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if TYPE_CHECKING:
    from acpio.inspector.answers import Answers, Policies
    from acpio.inspector.capture import Capture
    from acpio.inspector.checks import RULES, Finding, FrameChecker, Rule
    from acpio.inspector.compare import diff_runs
    from acpio.inspector.connection import InspectedConnection
    from acpio.inspector.record import Inspection
    from acpio.inspector.server import InspectorServer

__all__ = [
    "RULES",
    "Answers",
    "Capture",
    "Finding",
    "FrameChecker",
    "InspectedConnection",
    "Inspection",
    "InspectorServer",
    "Policies",
    "Rule",
    "diff_runs",
]

if not TYPE_CHECKING:  # type checkers see the imports above
    __getattr__, __dir__ = lazy_exports(globals())
