"""The package as a user first meets it: import cost, public names, typing marker."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import acpio


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert acpio.__all__ == sorted(acpio.__all__)
    for name in acpio.__all__:
        assert getattr(acpio, name) is not None, name


def test_every_error_class_is_exported_at_the_top() -> None:
    from acpio import errors

    missing = [name for name in errors.__all__ if isinstance(getattr(errors, name), type)]
    missing = [name for name in missing if name not in acpio.__all__]
    assert missing == []


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        acpio.NoSuchThing  # noqa: B018


def test_package_is_typed() -> None:
    assert (Path(acpio.__file__).parent / "py.typed").is_file()


def _import_time_us(statement: str) -> int:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    # the last line is the top-level module: "import time: self | cumulative | name"
    return int(out.strip().splitlines()[-1].split("|")[1])


def test_import_acpio_is_cheap_and_loads_no_models() -> None:
    best = min(_import_time_us("import acpio") for _ in range(3))
    # 100 ms is the budget; a typical run here is about 10 ms.
    assert best < 100_000, f"import acpio took {best / 1000:.1f} ms"
    loaded = subprocess.run(
        [sys.executable, "-c", "import acpio, sys; print('acpio.schema._models' in sys.modules)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert loaded == "False"


#: Every module whose public names load on first use (acpio._exports.lazy_exports).
LAZY_MODULES = [
    "acpio",
    "acpio.agents.coder",
    "acpio.agents.testy",
    "acpio.remote",
    "acpio.roles",
    "acpio.store",
    "acpio.transports",
]


@pytest.mark.parametrize("name", LAZY_MODULES)
def test_a_lazy_module_lists_each_name_once_and_serves_every_one(name: str) -> None:
    import importlib

    from acpio._exports import type_checking_imports

    module = importlib.import_module(name)
    public = module.__all__
    assert len(set(public)) == len(public), f"{name}.__all__ repeats a name"
    lazy = set(type_checking_imports(vars(module))) & set(public)
    eager = {n for n in public if n in vars(module)} - lazy
    assert set(public) == lazy | eager, f"{name}.__all__ lists names it neither defines nor imports"
    for attribute in public:
        assert getattr(module, attribute) is not None
    assert dir(module) == sorted(public)
    with pytest.raises(AttributeError, match=f"module '{name}' has no attribute 'NoSuchThing'"):
        getattr(module, "NoSuchThing")  # noqa: B009


def test_a_type_checker_refuses_a_name_acpio_does_not_export(tmp_path: Path) -> None:
    """No module ``__getattr__`` is visible to type checkers: a typo is an error, not ``Any``."""
    user = tmp_path / "user.py"
    user.write_text("from acpio import AgentApp, AgentAp\nimport acpio.transports\nacpio.transports.Stdoi\n")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(user)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert 'Module "acpio" has no attribute "AgentAp"' in result.stdout, result.stdout
    assert 'Module has no attribute "Stdoi"' in result.stdout, result.stdout
    assert "Found 2 errors" in result.stdout, result.stdout  # AgentApp itself is fine


def test_no_class_in_the_package_reaches_350_lines() -> None:
    """Past that, a class holds more than one reader keeps in mind: split it by responsibility."""
    import ast

    root = Path(acpio.__file__).parent
    too_long = []
    for module in sorted(root.rglob("*.py")):
        if module.name.startswith("_models"):  # generated
            continue
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ClassDef) and node.end_lineno is not None:
                length = node.end_lineno - node.lineno + 1
                if length >= 350:
                    too_long.append(f"{module.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    assert too_long == []


def test_lazy_names_load_through_a_loader_without_get_source(tmp_path: Path) -> None:
    """pytest's assertion rewriter, which loads acpio once acpio[testing]'s plugin is installed, has no
    get_source: lazy names are read from the module's file then (before, every lazy name failed)."""
    import acpio.client
    from acpio._exports import type_checking_imports

    namespace = dict(vars(acpio.client))
    namespace["__loader__"] = object()
    assert type_checking_imports(namespace)["AgentClient"] == ("acpio.driver.client", "AgentClient")
    namespace["__file__"] = str(tmp_path / "compiled_only.py")
    with pytest.raises(ImportError, match="source is not installed"):
        type_checking_imports(namespace)
