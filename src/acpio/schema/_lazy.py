"""Creating the generated model classes on first use, and the method table's rows that name them.

Creating a pydantic class costs about half a millisecond even with ``defer_build``, and an agent
uses a third of the schema's 220 classes: ``_models.py`` therefore defines each class, union and
class alias in a small function of its own (its *definer*), and :class:`LazyNames` runs a definer
the first time the name is read (``acpio.schema.X``, ``from acpio.schema import X``, a class that
names it being created, a row of the method table being read).

Each name comes with two lists. ``before``: the names its source evaluates as it is created (a base
class, the members of a union, an annotation); they are created first. ``after``: the names it
holds as forward references (quoted, because they refer back to it) and the response model of a
request; they are created right after it, so that a class read from ``acpio.schema`` always has
every class it refers to, as pydantic needs when it builds the validator on first use. Every
created name is stored in the module's globals: Python finds it there from then on (without
calling ``__getattr__`` again), and so does pydantic when it resolves a forward reference.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from acpio.schema.method_spec import MethodSpec

__all__ = ["LazyNames", "LazySpec", "forward_module", "lazy_spec", "lazy_specs"]

#: A definer, and the names to create before and after it (see the module docstring).
Entry = tuple[Callable[[], Any], tuple[str, ...], tuple[str, ...]]


class LazyNames:
    """The lazily created names of one module: its ``__getattr__`` and ``__dir__``.

    ``namespace`` is the module's globals; ``entries`` maps each lazy name to its definer and its
    ``before`` and ``after`` names; ``responses`` maps a request class to its response class, which
    becomes the request's ``RESPONSE``. One lock serialises the creations, so two threads reading
    a name for the first time get the same class.
    """

    def __init__(
        self,
        namespace: dict[str, Any],
        entries: Mapping[str, Entry],
        responses: Mapping[str, str],
        public: Iterable[str],
    ) -> None:
        self._namespace = namespace
        self._entries = entries
        self._responses = responses
        self._public = tuple(public)
        self._module = namespace["__name__"]
        self._lock = threading.RLock()
        self._creating: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        """The module's ``__getattr__`` (PEP 562): create ``name`` and what it needs, or fail."""
        if name not in self._entries:
            raise AttributeError(f"module {self._module!r} has no attribute {name!r}")
        with self._lock:
            return self._create(name)

    def __dir__(self) -> list[str]:
        """The module's ``__dir__``: what exists so far and every public name, created or not."""
        return sorted(set(self._namespace) | set(self._public))

    def created(self) -> frozenset[str]:
        """The lazy names created so far."""
        return frozenset(n for n in self._entries if n in self._namespace)

    def _create(self, name: str) -> Any:
        namespace = self._namespace
        if name in namespace:
            return namespace[name]
        if name in self._creating:
            # Only a ``before`` cycle leads here, and the generator refuses those.
            raise RuntimeError(f"{self._module}: {name} is needed to create itself")
        definer, before, after = self._entries[name]
        self._creating.add(name)
        try:
            for dependency in before:
                self._create(dependency)
            value = definer()
        finally:
            self._creating.discard(name)
        if isinstance(value, type) and value.__name__ == name:
            # not ``_define_Name.<locals>.Name``: pickle finds a class by its qualified name
            # (a class alias, ``AvailableCommandInput``, keeps the name of its class)
            value.__qualname__ = name
        namespace[name] = value
        for dependency in after:
            self._create(dependency)
        response = self._responses.get(name)
        if response is not None:
            value.RESPONSE = namespace[response]
        return value


def forward_module(
    namespace: dict[str, Any], sources: Mapping[str, Iterable[str]], public: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for a module that re-exports the names of other modules.

    ``sources`` maps a module to the names re-exported from it. A name is read from its module
    (which may import pydantic, or create the class) the first time, then kept in ``namespace``.
    Any other name raises :class:`AttributeError`.
    """
    module = namespace["__name__"]
    forwarded = {name: source for source, names in sources.items() for name in names}
    listed = tuple(public)

    def __getattr__(name: str) -> Any:
        source = forwarded.get(name)
        if source is None:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(listed))

    return __getattr__, __dir__


class LazySpec(Protocol):
    """Makes a row of a method table whose ``params`` and ``result`` are named, created when read."""

    def __call__(
        self,
        method: str,
        direction: Any,
        kind: Any,
        params: str,
        result: str | None,
        *,
        stable: bool,
        capability: str | None,
    ) -> MethodSpec:
        """The row; its models are read from the models module the first time they are used."""
        ...


if TYPE_CHECKING:

    def lazy_specs(models: str) -> LazySpec:
        """The row maker of a method table whose models live in module ``models``."""
        ...

else:
    _params_slot = MethodSpec.params
    _result_slot = MethodSpec.result

    def _model(slot: Any, row: MethodSpec) -> Any:
        value = slot.__get__(row)
        if isinstance(value, str):
            value = getattr(importlib.import_module(row._models), value)
            slot.__set__(row, value)
        return value

    class _LazyRow(MethodSpec):
        """A :class:`MethodSpec` that holds its models' names until ``params`` or ``result`` is read."""

        __slots__ = ()
        _models = "acpio.schema._models"

        params = property(lambda self: _model(_params_slot, self), _params_slot.__set__)
        result = property(lambda self: _model(_result_slot, self), _result_slot.__set__)

        def __repr__(self) -> str:
            return "MethodSpec(" + MethodSpec.__repr__(self).partition("(")[2]

        def __eq__(self, other: object) -> bool:
            if not isinstance(other, MethodSpec):
                return NotImplemented
            return _fields(self) == _fields(other)

        __hash__ = MethodSpec.__hash__

        def __reduce__(self) -> tuple[Any, ...]:
            # unpickled as the plain row it equals (its class is made per table, not importable)
            return (MethodSpec, _fields(self))

    def _fields(row: MethodSpec) -> tuple[Any, ...]:
        return (row.method, row.direction, row.kind, row.params, row.result, row.stable, row.capability)

    def lazy_specs(models):
        """The row maker of a method table whose models live in module ``models``."""
        row_class = type("_LazyRow", (_LazyRow,), {"__slots__": (), "_models": models})

        def lazy_spec(method, direction, kind, params, result, *, stable, capability):
            """A row of the method table whose ``params`` and ``result`` are named, created when read."""
            return row_class(method, direction, kind, params, result, stable, capability)

        return lazy_spec


#: The row maker of v1's method table (``acpio.schema.methods``).
lazy_spec: LazySpec = lazy_specs("acpio.schema._models")
