"""The top-level ``acpio`` names everyday code needs: examples and documented programs import from
``acpio`` (and the models from ``acpio.schema``), and nothing they name is missing there.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import acpio

from ._blocks import python_blocks

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

#: The modules whose names handlers and mains use: each of those names must be a top-level name.
EVERYDAY = {
    "acpio.app",
    "acpio.capabilities",
    "acpio.errors",
    "acpio.jsonrpc",
    "acpio.roles",
    "acpio.session",
    "acpio.traits",
    "acpio.transports",
}
#: Where an example may import acpio's names from: one or two modules, and ``acpio.mcp`` (an optional
#: extra, kept out of the top level so that ``import acpio`` never loads the ``mcp`` package).
EXAMPLE_MODULES = {"acpio", "acpio.schema", "acpio.mcp"}
#: ... and the framework adapters, each behind its extra (``acpio.frameworks.openai_agents``...).
FRAMEWORKS = "acpio.frameworks."


def acpio_imports(source: str) -> list[tuple[str, str]]:
    """``(module, name)`` for each name ``source`` imports from an acpio module."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "acpio":
            found += [(node.module, alias.name) for alias in node.names]
    return found


def sources() -> list[tuple[str, str]]:
    programs = [(str(p.relative_to(ROOT)), p.read_text()) for p in EXAMPLES]
    return programs + [(b.where, b.code) for b in python_blocks()]


@pytest.mark.parametrize(("where", "source"), sources(), ids=[w for w, _ in sources()])
def test_every_everyday_name_a_program_imports_is_also_top_level(where: str, source: str) -> None:
    missing = [f"{m}.{n}" for m, n in acpio_imports(source) if m in EVERYDAY and n not in acpio.__all__]
    assert missing == [], f"{where} needs names acpio does not export: {missing}"


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_an_example_imports_from_acpio_and_its_schema_only(example: Path) -> None:
    modules = {m for m, _ in acpio_imports(example.read_text()) if not m.startswith(FRAMEWORKS)}
    assert modules <= EXAMPLE_MODULES, f"{example.name} imports from {sorted(modules - EXAMPLE_MODULES)}"
