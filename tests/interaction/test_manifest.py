"""The requirements manifest covers its scope, names real tests, and matches the checklist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from ._requirements import REQUIREMENTS, SCOPE

TESTS = Path(__file__).resolve().parents[1]


def test_every_requirement_in_scope_is_mapped_and_nothing_else() -> None:
    assert set(REQUIREMENTS) == set(SCOPE), sorted(set(SCOPE) ^ set(REQUIREMENTS))


def test_every_entry_names_tests_or_gives_a_reason() -> None:
    for rid, entry in REQUIREMENTS.items():
        if isinstance(entry, str):
            assert entry.startswith("OUT: "), (rid, entry)
            assert len(entry) > 10, (rid, entry)
        else:
            assert entry, rid


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    }


def test_every_named_test_exists() -> None:
    cache: dict[str, set[str]] = {}
    for rid, entry in REQUIREMENTS.items():
        if isinstance(entry, str):
            continue
        for ref in entry:
            module, _, name = ref.partition("::")
            path = TESTS / module
            assert path.is_file(), (rid, ref)
            names = cache.setdefault(module, _test_names(path))
            assert name in names, (rid, ref)


def test_the_scope_matches_the_checklist(shared_dir: Path) -> None:
    text = (shared_dir / "reference" / "spec-conformance.md").read_text()
    numbered = {int(m) for m in re.findall(r"^(\d+)\. \[", text, re.MULTILINE)}
    assert numbered >= SCOPE
    headings = {"C": "Initialization", "E": "Session setup", "G": "Prompt turn", "H": "Cancellation"}
    for section, title in headings.items():
        body = text.split(f"## {section}. {title}", 1)[1].split("\n## ", 1)[0]
        in_section = {int(m) for m in re.findall(r"^(\d+)\. \[", body, re.MULTILINE)}
        assert in_section, section
        assert in_section <= SCOPE, (section, sorted(in_section - SCOPE))
