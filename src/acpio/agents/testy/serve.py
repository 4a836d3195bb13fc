"""testy for one ACP version or both: what ``acpio testy --protocol 1|2|both`` serves.

:func:`testy_component` gives the v1 builder (:func:`~acpio.agents.testy.agent.testy_agent`), or a
:class:`~acpio.VersionRouter` over the v2 builder (:func:`~acpio.agents.testy.v2.agent.testy_agent_v2`),
alone or beside the v1 one. Both which share one set of sessions: a session set up by a
v1 client resumes for a v2 client (its history replayed as v2 upserts) and the other way round.
"""

from __future__ import annotations

from collections.abc import Sequence

from acpio.agents.testy.agent import TestyAgent, TestyOptions, testy_builder
from acpio.jsonrpc import Builder
from acpio.store import SessionStore
from acpio.version_router import VersionRouter

__all__ = ["testy_component"]


def testy_component(
    options: TestyOptions | None = None,  # noqa: PT028 - not a test
    store: SessionStore | None = None,  # noqa: PT028
    protocols: Sequence[int] = (1,),  # noqa: PT028
) -> Builder | VersionRouter:
    """Testy serving the ACP ``protocols`` (``(1,)``, ``(2,)`` or ``(1, 2)``) with one set of sessions.

    A v2-only testy answers a v1 ``initialize`` with ``-32022`` (data ``{requested, supported}``).
    """
    chosen = tuple(sorted(set(protocols)))
    if not chosen or not set(chosen) <= {1, 2}:
        raise ValueError(f"testy speaks ACP versions 1 and 2, not {list(protocols)}")
    testy = TestyAgent(options if options is not None else TestyOptions(), store)
    if chosen == (1,):
        return testy_builder(testy)
    from acpio.agents.testy.v2.agent import testy_agent_v2

    v2 = testy_agent_v2(testy.options, testy.sessions)
    if chosen == (2,):
        return VersionRouter({2: v2}, name="testy")  # the router answers what v1 asks with -32022
    return VersionRouter({1: testy_builder(testy), 2: v2}, name="testy")
