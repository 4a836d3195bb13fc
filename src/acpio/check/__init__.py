"""``acpio check``: a conformance run against any agent command, with acpio's own requirement registry.

:func:`check_agent` starts the agent (one process per connection), drives it through the
requirements of :data:`REQUIREMENTS` (v1, v2 or both, then the editor profiles of
:mod:`acpio.profiles`) and returns a :class:`CheckReport`: a :class:`Verdict` per requirement.
Every wait is bounded by :attr:`CheckOptions.timeout`, so a hung agent gets a verdict::

    report = await check_agent(("python", "my_agent.py"), CheckOptions(protocol="1"))
    assert not report.failures(), as_table(report)

The command line is ``acpio check -- AGENT_CMD`` (``docs/check.md``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports

if TYPE_CHECKING:
    from acpio.check.options import CheckOptions, ProtocolChoice
    from acpio.check.output import as_json, as_junit, as_table
    from acpio.check.requirements import BY_ID, REQUIREMENTS, Requirement, Tier
    from acpio.check.run import AgentNotFound, check_agent
    from acpio.check.verdicts import CheckReport, Outcome, Verdict

__all__ = [
    "BY_ID",
    "REQUIREMENTS",
    "AgentNotFound",
    "CheckOptions",
    "CheckReport",
    "Outcome",
    "ProtocolChoice",
    "Requirement",
    "Tier",
    "Verdict",
    "as_json",
    "as_junit",
    "as_table",
    "check_agent",
]

__getattr__, __dir__ = lazy_exports(globals())
