"""What the pool reports: one record per step it takes on its own, never silently.

Every step the pool takes without being asked (a turn past its time, the cancel sent for it, the
kill, the new process, the session taken up again on it) is one of these records. A turn's
records are in its :class:`~acpio.pool.SupervisedTurn` (``turn.events``), in order; the pool's
``on_event`` callback gets each one as it happens, the steps of no turn too (a process that died
while idle, and its replacement).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

__all__ = [
    "CancelHonoured",
    "CancelSent",
    "PoolEvent",
    "ProcessDied",
    "ProcessKilled",
    "ProcessStarted",
    "SessionLost",
    "SessionResumed",
    "TurnAbandoned",
    "TurnTimedOut",
]


@dataclass(frozen=True, slots=True)
class TurnTimedOut:
    """A turn ran past the pool's ``turn_timeout``: the pool is about to cancel it."""

    slot: int
    session_id: str
    seconds: float


@dataclass(frozen=True, slots=True)
class CancelSent:
    """``session/cancel`` went to the agent, for ``reason``: ``"timeout"`` or ``"caller"`` (who cancelled)."""

    slot: int
    session_id: str
    reason: Literal["timeout", "caller"]


@dataclass(frozen=True, slots=True)
class CancelHonoured:
    """The agent ended the cancelled turn itself, ``seconds`` after the cancel: nothing more to do."""

    slot: int
    session_id: str
    seconds: float


@dataclass(frozen=True, slots=True)
class TurnAbandoned:
    """The agent had not ended the turn ``grace`` seconds after the cancel: it is ended ``cancelled`` here.

    The agent's process is killed next (:class:`ProcessKilled`), since it cannot be trusted with
    the session any more.
    """

    slot: int
    session_id: str
    grace: float


@dataclass(frozen=True, slots=True)
class ProcessKilled:
    """The process group of the agent in ``slot`` got SIGKILL, for a turn that would not end."""

    slot: int
    pid: int
    session_id: str


@dataclass(frozen=True, slots=True)
class ProcessDied:
    """The agent in ``slot`` exited on its own (``returncode``: negative, the signal that ended it).

    ``stderr_tail`` is the end of what it wrote to stderr, which usually says why.
    """

    slot: int
    pid: int
    returncode: int | None
    stderr_tail: str | None


@dataclass(frozen=True, slots=True)
class ProcessStarted:
    """A new agent process in ``slot`` is initialized and ready; ``respawn``: it replaces one that ended."""

    slot: int
    pid: int
    respawn: bool


@dataclass(frozen=True, slots=True)
class SessionResumed:
    """The session goes on in the new process, set up there again with ``method``."""

    slot: int
    session_id: str
    pid: int
    method: Literal["session/resume", "session/load"]


@dataclass(frozen=True, slots=True)
class SessionLost:
    """The session could not be taken up by the new process; ``reason`` says why.

    The session's next prompt raises :class:`~acpio.pool.SessionLostError`; open another session.
    """

    slot: int
    session_id: str
    reason: str


#: Any step the pool reports.
PoolEvent: TypeAlias = (
    TurnTimedOut
    | CancelSent
    | CancelHonoured
    | TurnAbandoned
    | ProcessKilled
    | ProcessDied
    | ProcessStarted
    | SessionResumed
    | SessionLost
)
