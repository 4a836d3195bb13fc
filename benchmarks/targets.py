"""Issue 34's targets, judged on the figures of one ``benchmarks/run.py`` run.

Each target is a ratio between two figures of the same run (the pairings are interleaved, so that
load on the machine moves both alike): a pairing's figure against another pairing's (the TypeScript
SDK, the floor) or against another figure of its own (peak RSS against idle RSS). The round trips
must meet theirs in every repetition, not only in the median. :func:`targets_table` prints them with
the figures the issue was filed with, this run's, a verdict, and for the builder agent's targets the
same ratio for the *typed floor* (``peers/pydantic_agent.py``: the floor's agent with pydantic models,
nothing of acpio), the least those targets can reach while acpio's models are pydantic's;
:func:`judge` gives the same as data for the JSON.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Protocol

Pair = tuple[str, str]

FLOOR: Pair = ("bare", "bare")
TS: Pair = ("ts", "ts")
ACPIO: Pair = ("acpio", "acpio")
BUILDER_ALONE: Pair = ("bare", "acpio")
APP_ALONE: Pair = ("bare", "acpio_app")
TS_ALONE: Pair = ("bare", "ts")
#: The floor's agent with pydantic models (``peers/pydantic_agent.py``): what a typed agent pays first.
TYPED_FLOOR: Pair = ("bare", "pydantic")

#: What a figure is, for the "this run" column.
UNITS = {
    "msgs_per_s": "msgs/s",
    "req_per_s": "req/s",
    "pinned_req_per_s": "req/s",
    "spawn_ms": "ms",
    "idle_rss_mb": "MB",
    "peak_rss_mb": "MB",
}


class Figures(Protocol):
    """What the targets read of one pairing's results (``run.PairResult``)."""

    def median(self, key: str) -> float | None:
        """The median of ``key`` over the repetitions, ``None`` when it was not measured."""
        ...

    def by_repetition(self, key: str) -> dict[int, float]:
        """Each repetition's value of ``key``, by repetition number."""
        ...


@dataclasses.dataclass(frozen=True)
class Goal:
    """One target: ``judged``'s figure ``key`` ``comparison`` ``factor`` times the reference figure.

    The reference is ``reference``'s figure ``reference_key`` (``key`` when ``None``); a goal without a
    ``reference`` pairing compares two figures of ``judged`` itself. ``each_run``: every repetition
    must meet it, compared with the reference's figure of the same repetition.
    """

    label: str
    filed: str
    judged: Pair
    key: str
    comparison: str
    factor: float
    reference: Pair | None = None
    reference_key: str | None = None
    reference_label: str = ""
    each_run: bool = False
    #: A pairing whose same figure, against the same reference, shows the least a target of the
    #: builder style can reach while its models are pydantic's (the ``pydantic floor`` column).
    typed_floor: Pair | None = None

    def describe(self) -> str:
        """``>= 0.4x bare -> bare``."""
        return f"{self.comparison} {self.factor:g}x {self.reference_label}"

    def meets(self, ratio: float) -> bool:
        """Whether a ratio (judged / reference) meets the target."""
        return ratio >= self.factor if self.comparison == ">=" else ratio <= self.factor


GOALS = (
    Goal(
        "AgentApp agent (acpio_app) streaming `say` to a bare client",
        "56k/s (0.10x floor)",
        APP_ALONE,
        "msgs_per_s",
        ">=",
        0.4,
        FLOOR,
        reference_label="the floor (bare -> bare)",
    ),
    Goal(
        "acpio -> acpio typed streaming",
        "1.17-1.64x TS",
        ACPIO,
        "msgs_per_s",
        ">=",
        2.5,
        TS,
        reference_label="TS (ts -> ts)",
        typed_floor=TYPED_FLOOR,
    ),
    Goal(
        "AgentApp peak RSS streaming 100k updates in one turn (bare -> acpio_app)",
        "4x idle",
        APP_ALONE,
        "peak_rss_mb",
        "<=",
        1.2,
        reference_key="idle_rss_mb",
        reference_label="its idle RSS",
    ),
    Goal(
        "sequential round trips, acpio -> acpio",
        "0.46-1.41x TS across runs",
        ACPIO,
        "req_per_s",
        ">=",
        1.2,
        TS,
        reference_label="TS (ts -> ts) in each run",
        each_run=True,
    ),
    Goal(
        "the same, both processes of each pair pinned to one CPU",
        "(not measured)",
        ACPIO,
        "pinned_req_per_s",
        ">=",
        1.2,
        TS,
        reference_label="TS pinned in each run",
        each_run=True,
    ),
    Goal(
        "spawn -> `initialize` answer, builder agent (bare -> acpio)",
        "1.69x TS",
        BUILDER_ALONE,
        "spawn_ms",
        "<=",
        0.9,
        TS_ALONE,
        reference_label="the TS agent (bare -> ts)",
        typed_floor=TYPED_FLOOR,
    ),
    Goal(
        "spawn -> `initialize` answer, AgentApp (bare -> acpio_app)",
        "1.96x TS",
        APP_ALONE,
        "spawn_ms",
        "<=",
        1.1,
        TS_ALONE,
        reference_label="the TS agent (bare -> ts)",
    ),
    Goal(
        "idle RSS, builder agent (bare -> acpio)",
        "1.81x floor",
        BUILDER_ALONE,
        "idle_rss_mb",
        "<=",
        1.45,
        FLOOR,
        reference_label="the floor's agent",
        typed_floor=TYPED_FLOOR,
    ),
    Goal(
        "idle RSS, AgentApp (bare -> acpio_app)",
        "1.99x floor",
        APP_ALONE,
        "idle_rss_mb",
        "<=",
        1.6,
        FLOOR,
        reference_label="the floor's agent",
    ),
)

#: The pairings a run needs for every target to be judged.
PAIRS_NEEDED = tuple(
    dict.fromkeys(
        pair for goal in GOALS for pair in (goal.judged, goal.reference, goal.typed_floor) if pair is not None
    )
)


@dataclasses.dataclass(frozen=True)
class Judgement:
    """A target judged on one run: the figures, their ratios (one per repetition for ``each_run``)."""

    goal: Goal
    values: tuple[float, ...]
    ratios: tuple[float, ...]
    verdict: str
    #: The typed floor's ratio against the same reference (its median), when the goal names one.
    typed_floor_ratio: float | None = None

    def as_json(self) -> dict[str, object]:
        """The judgement for the run's JSON file."""
        return {
            "figure": self.goal.label,
            "pair": list(self.goal.judged),
            "key": self.goal.key,
            "filed": self.goal.filed,
            "values": list(self.values),
            "ratios": list(self.ratios),
            "target": self.goal.describe(),
            "verdict": self.verdict,
            "typed_floor_ratio": self.typed_floor_ratio,
        }


def judge(goal: Goal, results: Mapping[Pair, Figures]) -> Judgement:
    """``goal`` on this run's results; the verdict is ``not measured`` when a figure is missing."""
    judged = results.get(goal.judged)
    source = results.get(goal.reference or goal.judged)
    reference_key = goal.reference_key or goal.key
    floor = _typed_floor_ratio(goal, results)
    if judged is None or source is None:
        return Judgement(goal, (), (), "not measured", floor)
    if goal.each_run:
        mine, theirs = judged.by_repetition(goal.key), source.by_repetition(reference_key)
        runs = sorted(run for run in mine.keys() & theirs.keys() if theirs[run])
        values = tuple(mine[run] for run in runs)
        ratios = tuple(mine[run] / theirs[run] for run in runs)
    else:
        value, reference = judged.median(goal.key), source.median(reference_key)
        values = () if value is None else (value,)
        ratios = () if value is None or not reference else (value / reference,)
    if not ratios:
        return Judgement(goal, values, ratios, "not measured", floor)
    missed = sum(not goal.meets(ratio) for ratio in ratios)
    if not missed:
        verdict = "met"
    elif len(ratios) == 1:
        verdict = "missed"
    else:
        verdict = f"missed in {missed} of {len(ratios)} runs"
    return Judgement(goal, values, ratios, verdict, floor)


def _typed_floor_ratio(goal: Goal, results: Mapping[Pair, Figures]) -> float | None:
    """The median of the goal's figure for its typed floor, over the reference's median."""
    floor = results.get(goal.typed_floor) if goal.typed_floor is not None else None
    source = results.get(goal.reference or goal.judged)
    if floor is None or source is None:
        return None
    value, reference = floor.median(goal.key), source.median(goal.reference_key or goal.key)
    return value / reference if value is not None and reference else None


def _this_run(judgement: Judgement) -> str:
    if not judgement.values:
        return "-"
    unit = UNITS[judgement.goal.key]
    values = ", ".join(f"{value:,.1f}" if value < 100 else f"{value:,.0f}" for value in judgement.values)
    ratios = ", ".join(f"{ratio:.2f}x" for ratio in judgement.ratios)
    return f"{values} {unit} ({ratios or '-'})"


def targets_table(results: Mapping[Pair, Figures]) -> tuple[str, list[Judgement]]:
    """Issue 34's targets as a Markdown table (the README takes it as it is), and the judgements."""
    judgements = [judge(goal, results) for goal in GOALS]
    lines = [
        "| figure | when issue 34 was filed | this run | target | verdict | pydantic floor |",
        "|---|---|---|---|---|---|",
    ]
    for judgement in judgements:
        cells = (judgement.goal.label, judgement.goal.filed, _this_run(judgement), judgement.goal.describe())
        floor = "-" if judgement.typed_floor_ratio is None else f"{judgement.typed_floor_ratio:.2f}x"
        lines.append(f"| {' | '.join(cells)} | {judgement.verdict} | {floor} |")
    return "\n".join(lines), judgements
