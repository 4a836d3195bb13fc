"""A :class:`~acpio.check.verdicts.CheckReport` as a table (people), JSON (tools) or JUnit XML (CI)."""

from __future__ import annotations

import json
from xml.etree import ElementTree

from acpio.check.verdicts import CheckReport, Outcome, Verdict

__all__ = ["as_json", "as_junit", "as_table"]

_MARK = {Outcome.PASS: "pass", Outcome.FAIL: "FAIL", Outcome.SKIP: "skip"}


def as_table(report: CheckReport, *, strict: bool = False) -> str:
    """A line per requirement (id, tier, outcome, rule); a failure's details, a skip's reason under it."""
    width = max((len(v.requirement.id) for v in report.verdicts), default=10)
    lines = [f"acpio check: {' '.join(report.agent)}", ""]
    for verdict in report.verdicts:
        r = verdict.requirement
        lines.append(f"{r.id:<{width}}  {r.tier:<10}  {_MARK[verdict.outcome]:<4}  {r.text}")
        lines += [f"{'':<{width}}    {detail}" for detail in verdict.details if detail]
    lines += ["", *[f"note: {note}" for note in report.notes]] if report.notes else []
    counts = {outcome: sum(v.outcome is outcome for v in report.verdicts) for outcome in Outcome}
    failing = report.failures(strict=strict)
    summary = "FAILED" if failing else "passed"
    tiers = "MANDATORY and CAPABILITY" if strict else "MANDATORY"
    lines.append(
        f"{summary}: {counts[Outcome.PASS]} passed, {counts[Outcome.FAIL]} failed, {counts[Outcome.SKIP]} "
        f"skipped; {len(failing)} {tiers} failure(s) fail the check"
    )
    return "\n".join(lines)


def as_json(report: CheckReport, *, strict: bool = False) -> str:
    """The report as one JSON document: the agent, ``passed``, and every verdict with its requirement."""
    document = {
        "agent": list(report.agent),
        "passed": not report.failures(strict=strict),
        "strict": strict,
        "notes": report.notes,
        "results": [_verdict(v) for v in report.verdicts],
    }
    return json.dumps(document, indent=2)


def _verdict(verdict: Verdict) -> dict[str, object]:
    r = verdict.requirement
    return {
        "id": r.id,
        "tier": str(r.tier),
        "protocol": r.protocol,
        "text": r.text,
        "spec": r.spec,
        "outcome": str(verdict.outcome),
        "details": list(verdict.details),
    }


def as_junit(report: CheckReport, *, strict: bool = False) -> str:
    """JUnit XML: a test case per requirement (``classname`` its tier), failures and skips as CI shows them.

    A failure that does not fail the check (ADVISORY, or CAPABILITY without ``strict``) is a
    ``skipped`` case saying so, so a CI dashboard's red means what the exit code means.
    """
    failing = {v.requirement.id for v in report.failures(strict=strict)}
    suite = ElementTree.Element(
        "testsuite",
        name="acpio check",
        tests=str(len(report.verdicts)),
        failures=str(len(failing)),
        skipped=str(
            sum(v.outcome is not Outcome.PASS and v.requirement.id not in failing for v in report.verdicts)
        ),
    )
    ElementTree.SubElement(
        ElementTree.SubElement(suite, "properties"), "property", name="agent", value=" ".join(report.agent)
    )
    for verdict in report.verdicts:
        r = verdict.requirement
        case = ElementTree.SubElement(
            suite, "testcase", classname=f"acpio.check.{r.tier}", name=f"{r.id}: {r.text}"
        )
        details = "\n".join(verdict.details)
        if r.id in failing:
            failure = ElementTree.SubElement(case, "failure", message=f"{r.id} ({r.spec})")
            failure.text = details
        elif verdict.outcome is Outcome.FAIL:
            ElementTree.SubElement(
                case, "skipped", message=f"{r.tier} failure (does not fail the check): {details}"
            )
        elif verdict.outcome is Outcome.SKIP:
            ElementTree.SubElement(case, "skipped", message=details)
    ElementTree.indent(suite)
    return ElementTree.tostring(suite, encoding="unicode", xml_declaration=True)
