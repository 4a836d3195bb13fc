"""The requirement registry: unique ids, a tier, the rule and a link each; docs/check.md lists it as it is.

Regenerate the page's table after changing the registry with
``PYTHONPATH=src python -m tests.check.test_requirements``.
"""

from __future__ import annotations

import re
from pathlib import Path

from acpio.check import BY_ID, REQUIREMENTS, Requirement, Tier

PAGE = Path(__file__).resolve().parents[2] / "docs" / "check.md"
START, END = "<!-- requirements: start -->", "<!-- requirements: end -->"


def table(requirements: tuple[Requirement, ...]) -> str:
    """The registry as the Markdown table of docs/check.md."""
    rows = ["| id | tier | the rule | spec |", "|---|---|---|---|"]
    for r in requirements:
        where = r.spec.removeprefix("https://").split("#")[0].rstrip("/").rsplit("/", 1)[-1]
        rows.append(f"| `{r.id}` | {r.tier} | {r.text} | [{where}]({r.spec}) |")
    return "\n".join(rows)


def test_each_requirement_has_a_unique_id_a_tier_its_rule_and_a_link() -> None:
    assert len(BY_ID) == len(REQUIREMENTS)
    assert {r.tier for r in REQUIREMENTS} == set(Tier)
    for r in REQUIREMENTS:
        prefix = {0: "EDITOR-", 1: "V1-", 2: "V2-"}[r.protocol]
        assert re.fullmatch(rf"{prefix}[A-Z0-9]+-\d{{3}}|EDITOR-\d{{3}}", r.id), r.id
        assert r.text
        assert r.spec.startswith("https://"), r


def test_the_page_lists_the_registry() -> None:
    text = PAGE.read_text(encoding="utf-8")
    listed = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert listed == table(REQUIREMENTS), (
        "regenerate it: PYTHONPATH=src python -m tests.check.test_requirements"
    )


if __name__ == "__main__":
    text = PAGE.read_text(encoding="utf-8")
    head, rest = text.split(START, 1)
    PAGE.write_text(f"{head}{START}\n{table(REQUIREMENTS)}\n{END}{rest.split(END, 1)[1]}", encoding="utf-8")
