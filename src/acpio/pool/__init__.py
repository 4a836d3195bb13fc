"""The supervised pool: warm agent processes, sessions on them, and a watchdog for every turn.

:class:`AgentPool` starts ``size`` agent processes ahead of need and runs prompts on them, each
turn under the watchdog of :mod:`~acpio.pool.watchdog` (cancel, grace, kill, respawn, resume);
:class:`PooledSession` is a session leased for several turns; :class:`SupervisedTurn` is what a
turn gave, with every step the pool took for it among its :mod:`~acpio.pool.events`. The names are
also exported by :mod:`acpio.client`. See docs/pool.md.

Modules: :mod:`~acpio.pool.pool` (the pool), :mod:`~acpio.pool.session` (a leased session),
:mod:`~acpio.pool.worker` (one slot's processes), :mod:`~acpio.pool.watchdog` (the escalation),
:mod:`~acpio.pool.turn` (one turn being read), :mod:`~acpio.pool.result`,
:mod:`~acpio.pool.events`.
"""

from acpio.pool.events import (
    CancelHonoured,
    CancelSent,
    PoolEvent,
    ProcessDied,
    ProcessKilled,
    ProcessStarted,
    SessionLost,
    SessionResumed,
    TurnAbandoned,
    TurnTimedOut,
)
from acpio.pool.pool import AgentPool
from acpio.pool.result import SupervisedTurn
from acpio.pool.session import PooledSession, SessionLostError

__all__ = [
    "AgentPool",
    "CancelHonoured",
    "CancelSent",
    "PoolEvent",
    "PooledSession",
    "ProcessDied",
    "ProcessKilled",
    "ProcessStarted",
    "SessionLost",
    "SessionLostError",
    "SessionResumed",
    "SupervisedTurn",
    "TurnAbandoned",
    "TurnTimedOut",
]
