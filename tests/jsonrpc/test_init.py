"""The package's public surface: exported names, docstrings, layering."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import acpio.jsonrpc as jsonrpc

PACKAGE = Path(jsonrpc.__file__).parent


def test_all_lists_every_public_name_sorted_and_importable() -> None:
    assert sorted(jsonrpc.__all__, key=str.lower) == sorted(set(jsonrpc.__all__), key=str.lower)
    for name in jsonrpc.__all__:
        assert hasattr(jsonrpc, name), name


def test_every_exported_class_and_function_has_a_docstring() -> None:
    for name in jsonrpc.__all__:
        obj = getattr(jsonrpc, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            assert inspect.getdoc(obj), name
            for member_name, member in vars(obj).items() if inspect.isclass(obj) else ():
                if not member_name.startswith("_") and (
                    inspect.isfunction(member) or isinstance(member, property)
                ):
                    assert inspect.getdoc(member), f"{name}.{member_name}"


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_engine_imports_only_errors_transports_and_itself() -> None:
    for path in PACKAGE.glob("*.py"):
        for module in _imports(path):
            if module.startswith("acpio"):
                assert module == "acpio.errors" or module.startswith(("acpio.jsonrpc", "acpio.transports")), (
                    f"{path.name} imports {module}"
                )


def test_sans_io_modules_do_not_import_asyncio() -> None:
    for name in ("messages.py", "pending.py"):
        assert "asyncio" not in _imports(PACKAGE / name), name
