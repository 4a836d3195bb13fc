"""Helpers shared by the schema-model tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel


def canon(value: Any) -> Any:
    """A comparable form of a JSON value where ``true`` is not ``1`` (Python says ``True == 1``).

    Numbers compare by value (``3 == 3.0``); object key order is ignored.
    """
    if isinstance(value, dict):
        return {key: canon(item) for key, item in value.items()}
    if isinstance(value, list):
        return [canon(item) for item in value]
    if isinstance(value, bool):
        return ("bool", value)
    if isinstance(value, int | float):
        return ("number", value)
    if value is None:
        return ("null",)
    return (type(value).__name__, value)


def assert_same_json(actual: Any, expected: Any) -> None:
    """Assert two JSON values are equal, key order aside, booleans distinct from numbers."""
    assert canon(actual) == canon(expected), f"\n  got:      {actual!r}\n  expected: {expected!r}"


def iter_models(value: Any) -> Iterator[BaseModel]:
    """Every pydantic model inside ``value`` (itself included), depth first."""
    if isinstance(value, BaseModel):
        yield value
        for name in type(value).model_fields:
            yield from iter_models(getattr(value, name))
        for item in (value.model_extra or {}).values():
            yield from iter_models(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from iter_models(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from iter_models(item)
