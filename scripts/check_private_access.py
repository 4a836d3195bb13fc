"""Fail when a module of src/acpio reaches into another module's private names (`make lint`).

Two rules, checked on the syntax tree of every module:

* no ``from acpio.x import _name`` (a private name imported from another module);
* no ``something._name`` where no ``_name`` is defined in the same module (as a function, class,
  attribute assigned anywhere, ``__slots__`` entry or module-level name): that reads or calls a
  private member of a class defined elsewhere.

A line that must touch a private name of the standard library or a dependency says why with a
``# private-ok: <reason>`` comment. Dunder names and the private modules of acpio
(``acpio._process_control``) are fine: the package's own private modules are shared within it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "acpio"
MARKER = "# private-ok:"


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__") and name != "_"


def _defined_names(tree: ast.Module) -> set[str]:
    """Every private name this module defines: defs, classes, assigned attributes, slots, globals."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)  # __slots__ entries, getattr(obj, "_name") of our own names
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[0])
    return names


def check(path: Path) -> list[str]:
    """The violations in one module, as ``file:line: message``."""
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    own = _defined_names(tree)
    where = path.relative_to(ROOT.parent.parent)
    problems: list[str] = []

    def report(node: ast.AST, message: str) -> None:
        line = lines[node.lineno - 1] if hasattr(node, "lineno") else ""
        if MARKER not in line:
            problems.append(f"{where}:{getattr(node, 'lineno', 0)}: {message}")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("acpio"):
            for alias in node.names:
                if _private(alias.name):
                    report(node, f"imports the private name {alias.name} from {node.module}")
        elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
            report(node, f"uses {node.attr}, a private member defined in another module")
    return problems


def main() -> int:
    """Check every module; print the violations and return 1 if there are any."""
    problems = [p for path in sorted(ROOT.rglob("*.py")) if "schema" not in path.parts for p in check(path)]
    for problem in problems:
        print(problem)
    if problems:
        print(
            f"{len(problems)} private name(s) used across modules: make the name public (and document "
            f"it), move the code next to it, or mark a third-party private with '{MARKER} <reason>'.",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
