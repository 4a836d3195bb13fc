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


#: Run in a fresh interpreter: the CPU time ``import acpio`` takes (which other processes on a busy
#: machine do not stretch, as they do wall-clock time), and what it loaded.
_IMPORT_PROBE = """
import sys, time
start = time.process_time()
import acpio
print(time.process_time() - start, 'pydantic' in sys.modules, 'acpio.schema._models' in sys.modules)
"""


def _import_acpio() -> tuple[float, bool, bool]:
    out = subprocess.run([sys.executable, "-c", _IMPORT_PROBE], capture_output=True, text=True, check=True)
    seconds, pydantic, models = out.stdout.split()
    return float(seconds), pydantic == "True", models == "True"


def test_import_acpio_is_cheap_and_loads_no_models() -> None:
    runs = [_import_acpio() for _ in range(3)]
    best = min(seconds for seconds, _, _ in runs)
    # 100 ms is the budget; a typical run here is about 10 ms.
    assert best < 0.1, f"import acpio took {best * 1000:.1f} ms of CPU time"
    assert not any(pydantic for _, pydantic, _ in runs), "import acpio imported pydantic"
    assert not any(models for _, _, models in runs), "import acpio created the schema's models"


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
    """No module ``__getattr__`` is visible to type checkers: a typo is an error, not ``Any``.

    pyright stands for both checkers here (mypy reads the same ``TYPE_CHECKING`` imports, and
    treats a visible module ``__getattr__`` the same way); a cold mypy run of the package costs a
    minute of CPU, pyright two seconds.
    """
    pyright = Path(sys.executable).parent / "basedpyright"
    if not pyright.exists():
        pytest.skip(f"{pyright} is not installed (make test installs the dev extra)")
    user = tmp_path / "user.py"
    user.write_text("from acpio import AgentApp, AgentAp\nimport acpio.transports\nacpio.transports.Stdoi\n")
    (tmp_path / "pyrightconfig.json").write_text("{}")
    result = subprocess.run(
        [str(pyright), "--pythonpath", sys.executable, "--level", "error", str(user)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert '"AgentAp" is unknown import symbol' in result.stdout, result.stdout
    assert '"Stdoi" is not a known attribute of module "acpio.transports"' in result.stdout, result.stdout
    assert "2 errors" in result.stdout, result.stdout  # AgentApp itself is fine


def test_no_class_in_the_package_reaches_320_lines() -> None:
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
                if length >= 320:
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
