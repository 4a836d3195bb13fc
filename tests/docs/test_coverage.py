"""docs/coverage.md (scripts/coverage_table.py): full rows for every stable method and update kind.

Each row's test exists, and the page is the script's output.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("coverage_table", ROOT / "scripts" / "coverage_table.py")
assert _spec is not None
assert _spec.loader is not None
coverage = importlib.util.module_from_spec(_spec)
sys.modules["coverage_table"] = coverage  # dataclasses look their module up there
_spec.loader.exec_module(coverage)


def test_every_stable_method_and_update_kind_has_a_row_and_nothing_else_does() -> None:
    methods, kinds = coverage.stable_methods(), coverage.stable_update_kinds()
    assert "elicitation/create" in methods
    assert "compaction_summary_chunk" in kinds
    assert sorted(set(methods) - set(coverage.METHODS)) == [], "stable methods without coverage"
    assert sorted(set(kinds) - set(coverage.UPDATES)) == [], "stable update kinds without coverage"
    assert sorted(set(coverage.METHODS) - set(methods)) == [], "rows for methods that are not stable"
    assert sorted(set(coverage.UPDATES) - set(kinds)) == [], "rows for kinds that are not stable"


def test_no_cell_is_empty() -> None:
    for name, row in {**coverage.METHODS, **coverage.UPDATES}.items():
        for cell in (row.testy, row.prompt, row.agent_api, row.test):
            assert cell.strip(), f"{name} has an empty cell"


def test_every_test_named_exists() -> None:
    for name, row in {**coverage.METHODS, **coverage.UPDATES}.items():
        path, _, function = row.test.partition("::")
        source = (ROOT / path).read_text()
        assert re.search(rf"^(async )?def {re.escape(function)}\(", source, re.M), f"{name}: no {row.test}"


def test_a_method_added_to_the_schema_without_coverage_leaves_an_empty_cell(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(coverage, "stable_methods", lambda: [*coverage.METHODS, "thing/new"])
    page = coverage.render()
    assert "| `thing/new` |  |  |  |  |" in page


def test_the_page_is_the_scripts_output() -> None:
    page = (ROOT / "docs" / "coverage.md").read_text()
    stale = "docs/coverage.md is stale: run python scripts/coverage_table.py --write"
    assert page == coverage.render(), stale
