"""Lazy public names: a module lists them once in ``__all__`` and imports them under ``TYPE_CHECKING``.

A package whose public names live in heavier modules (the engine, the models, uvicorn...) keeps
``import`` cheap by loading them on first use::

    from typing import TYPE_CHECKING

    from acpio._exports import lazy_exports

    if TYPE_CHECKING:
        from acpio.app import AgentApp, Turn
        from acpio import schema

    __all__ = ["AgentApp", "Turn", "schema"]

    __getattr__, __dir__ = lazy_exports(globals())

Type checkers read the imports. At run time the block does not run: the first time a name is
missing, :func:`lazy_exports` reads the same block from the module's source and imports the name
from where it says, so no second table of names and modules can drift from the first. Only names
listed in ``__all__`` are served (a block may import names for annotations only); a name listed
but neither defined nor imported there fails ``tests/test_package.py``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` (PEP 562) for the module whose ``globals()`` is ``namespace``.

    ``__getattr__(name)`` imports a name of ``__all__`` that the module's ``if TYPE_CHECKING:``
    block imports, keeps it in ``namespace``, and returns it; any other name raises
    :class:`AttributeError`. ``__dir__()`` is ``__all__``, sorted.
    """
    module = namespace["__name__"]
    table: dict[str, tuple[str, str]] | None = None

    def __getattr__(name: str) -> Any:
        nonlocal table
        if table is None:
            public = set(namespace.get("__all__", ()))
            table = {
                alias: where for alias, where in type_checking_imports(namespace).items() if alias in public
            }
        where = table.get(name)
        if where is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        source, attribute = where
        if source == module:  # ``from acpio import schema``: a submodule of this package
            value = importlib.import_module(f"{source}.{attribute}")
        else:
            value = getattr(importlib.import_module(source), attribute)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(namespace.get("__all__", ()))

    return __getattr__, __dir__


def type_checking_imports(namespace: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """What the module's ``if TYPE_CHECKING:`` blocks import: ``{name: (module, attribute)}``.

    Read from the module's source through its loader. Raises :class:`ImportError` when the
    source is not installed (a distribution of compiled files only), which lazy names need.
    """
    import ast  # only when a lazy name is first read: ``import acpio`` stays cheap

    module = namespace["__name__"]
    loader = namespace.get("__loader__")
    get_source = getattr(loader, "get_source", None)
    source = get_source(module) if callable(get_source) else None
    if source is None:
        # Loaders without get_source (pytest's assertion rewriter, which loads every module of a
        # package that declares a pytest plugin, acpio among them) still leave the file.
        source = _read_source_file(namespace.get("__file__"))
    if not isinstance(source, str):
        raise ImportError(
            f"{module} loads its public names on first use from the imports in its source, but its "
            "source is not installed; reinstall acpio from its wheel or sdist"
        )
    found: dict[str, tuple[str, str]] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
                    for alias in statement.names:
                        found[alias.asname or alias.name] = (statement.module, alias.name)
    return found


def _read_source_file(path: object) -> str | None:
    if not isinstance(path, str) or not path.endswith(".py"):
        return None
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except OSError:
        return None


def _is_type_checking(test: object) -> bool:
    name = getattr(test, "id", None) or getattr(test, "attr", None)  # TYPE_CHECKING, typing.TYPE_CHECKING
    return name == "TYPE_CHECKING"
