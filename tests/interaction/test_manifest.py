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


def _tests(path: Path) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    tree = ast.parse(path.read_text())
    return {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    }


def _named_tests() -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """Every test the manifest names (``module::test``) that exists, by reference."""
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for entry in REQUIREMENTS.values():
        if isinstance(entry, str):
            continue
        for ref in entry:
            module, _, name = ref.partition("::")
            path = TESTS / module
            if path.is_file() and name in (tests := _tests(path)):
                found[ref] = tests[name]
    return found


def test_every_named_test_exists() -> None:
    found = _named_tests()
    for rid, entry in REQUIREMENTS.items():
        if isinstance(entry, str):
            continue
        for ref in entry:
            assert ref in found, (rid, ref)


def test_no_named_test_is_an_expected_failure() -> None:
    # A requirement is met by passing tests: an xfail one would claim what acpio does not do.
    for ref, node in _named_tests().items():
        marks = [ast.unparse(decorator) for decorator in node.decorator_list]
        assert not [mark for mark in marks if "xfail" in mark], (ref, marks)


def test_the_scope_matches_the_checklist(shared_dir: Path) -> None:
    text = (shared_dir / "reference" / "spec-conformance.md").read_text()
    numbered = {int(m) for m in re.findall(r"^(\d+)\. \[", text, re.MULTILINE)}
    assert numbered >= SCOPE
    headings = {
        "C": "Initialization",
        "E": "Session setup",
        "F": "Session list",
        "G": "Prompt turn",
        "H": "Cancellation",
    }
    for section, title in headings.items():
        body = text.split(f"## {section}. {title}", 1)[1].split("\n## ", 1)[0]
        in_section = {int(m) for m in re.findall(r"^(\d+)\. \[", body, re.MULTILINE)}
        assert in_section, section
        assert in_section <= SCOPE, (section, sorted(in_section - SCOPE))
