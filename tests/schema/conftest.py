"""Fixtures for the schema-model tests: the official ACP schema files and a JSON Schema validator."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

SCHEMA_URI = "urn:acp:v1:schema.unstable.json"

DefValidator = Callable[[str], jsonschema.Draft202012Validator]


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def unstable_schema(spec_dir: Path) -> dict[str, Any]:
    """``v1/schema.unstable.json``: every type, stable and unstable."""
    return _load(spec_dir / "v1" / "schema.unstable.json")  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def stable_schema(spec_dir: Path) -> dict[str, Any]:
    """``v1/schema.json``: the stable types only."""
    return _load(spec_dir / "v1" / "schema.json")  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def meta_unstable(spec_dir: Path) -> dict[str, Any]:
    """``v1/meta.unstable.json``: every method name."""
    return _load(spec_dir / "v1" / "meta.unstable.json")  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def meta_stable(spec_dir: Path) -> dict[str, Any]:
    """``v1/meta.json``: the stable method names."""
    return _load(spec_dir / "v1" / "meta.json")  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def def_validator(unstable_schema: dict[str, Any]) -> DefValidator:
    """``def_validator("ContentBlock")``: a Draft 2020-12 validator for one ``$defs`` entry."""
    registry: Registry[Any] = Registry().with_resource(SCHEMA_URI, Resource.from_contents(unstable_schema))
    cache: dict[str, jsonschema.Draft202012Validator] = {}

    def validator(name: str) -> jsonschema.Draft202012Validator:
        assert name in unstable_schema["$defs"], f"no $defs entry {name!r}"
        if name not in cache:
            cache[name] = jsonschema.Draft202012Validator(
                {"$ref": f"{SCHEMA_URI}#/$defs/{name}"}, registry=registry
            )
        return cache[name]

    return validator
