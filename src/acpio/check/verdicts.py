"""What a check found: a :class:`Verdict` per requirement, gathered in a :class:`CheckReport`."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import StrEnum

from acpio.check.requirements import BY_ID, Requirement, Tier

__all__ = ["CheckReport", "Outcome", "Verdict", "Verdicts"]

#: How many failure details a verdict keeps (the first ones say enough).
_KEPT = 3


class Outcome(StrEnum):
    """A requirement's outcome: met, not met, or not exercised (the reason in the details)."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True)
class Verdict:
    """One requirement's outcome, with what was sent and what came back (or why it was skipped)."""

    requirement: Requirement
    outcome: Outcome
    details: tuple[str, ...] = ()


class Verdicts:
    """The running tally of one check: each requirement passed, failed (with details) or skipped."""

    def __init__(self) -> None:
        self._failures: dict[str, list[str]] = {}
        self._passed: set[str] = set()
        self._skipped: dict[str, str] = {}

    def check(self, requirement: str, ok: bool, detail: str) -> None:
        """Record one check of ``requirement``; ``detail`` says what was sent and what came back."""
        if requirement not in BY_ID:
            raise KeyError(f"no requirement {requirement!r} in acpio.check.requirements")
        if ok:
            self._passed.add(requirement)
        else:
            self._failures.setdefault(requirement, []).append(detail)

    def skip(self, requirement: str, reason: str) -> None:
        """``requirement`` was not exercised: the agent does not offer it, or could not be made to."""
        if requirement not in BY_ID:
            raise KeyError(f"no requirement {requirement!r} in acpio.check.requirements")
        self._skipped.setdefault(requirement, reason)

    def verdicts(self, requirements: Iterable[Requirement], unjudged: str) -> list[Verdict]:
        """A verdict for each of ``requirements``; one never judged is skipped with ``unjudged`` as reason."""
        found = []
        for requirement in requirements:
            rid = requirement.id
            if rid in self._failures:
                found.append(Verdict(requirement, Outcome.FAIL, tuple(self._failures[rid][:_KEPT])))
            elif rid in self._passed:
                found.append(Verdict(requirement, Outcome.PASS))
            else:
                found.append(Verdict(requirement, Outcome.SKIP, (self._skipped.get(rid, unjudged),)))
        return found


@dataclass
class CheckReport:
    """Every verdict of one ``acpio check`` run against ``agent``."""

    #: The agent's command line.
    agent: tuple[str, ...]
    verdicts: list[Verdict] = field(default_factory=list)
    #: Advice that is no verdict (the absolute command JetBrains IDEs need).
    notes: list[str] = field(default_factory=list)

    def failures(self, *, strict: bool = False) -> list[Verdict]:
        """The failed verdicts that fail the check: MANDATORY ones, and CAPABILITY ones when ``strict``."""
        failing = {Tier.MANDATORY, Tier.CAPABILITY} if strict else {Tier.MANDATORY}
        return [v for v in self.verdicts if v.outcome is Outcome.FAIL and v.requirement.tier in failing]

    def failed_ids(self) -> set[str]:
        """The ids of every failed requirement, whatever its tier."""
        return {v.requirement.id for v in self.verdicts if v.outcome is Outcome.FAIL}

    def exit_code(self, *, strict: bool = False) -> int:
        """``0`` when nothing fails the check (see :meth:`failures`), else ``1``."""
        return 1 if self.failures(strict=strict) else 0
