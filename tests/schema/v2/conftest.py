"""Fixtures for the v2 model tests: the v2 schema files and a JSON Schema validator for their defs."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from referencing import Registry, Resource

V2_SCHEMA_URI = "urn:acp:v2:schema.unstable.json"

V2DefValidator = Callable[[str], jsonschema.Draft202012Validator]


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def v2_schema(spec_dir: Path) -> dict[str, Any]:
    """``v2/schema.unstable.json``: every v2 type, stable and unstable."""
    return _load(spec_dir / "v2" / "schema.unstable.json")  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def v2_stable_schema(spec_dir: Path) -> dict[str, Any]:
    """``v2/schema.json``: the stable v2 types only."""
    return _load(spec_dir / "v2" / "schema.json")  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def v2_meta(spec_dir: Path) -> dict[str, Any]:
    """``v2/meta.unstable.json``: every v2 method name."""
    return _load(spec_dir / "v2" / "meta.unstable.json")  # type: ignore[no-any-return]


@pytest.fixture(scope="session")
def v2_def_validator(v2_schema: dict[str, Any]) -> V2DefValidator:
    """``v2_def_validator("PromptRequest")``: a Draft 2020-12 validator for one v2 ``$defs`` entry."""
    registry: Registry[Any] = Registry().with_resource(V2_SCHEMA_URI, Resource.from_contents(v2_schema))
    cache: dict[str, jsonschema.Draft202012Validator] = {}

    def validator(name: str) -> jsonschema.Draft202012Validator:
        assert name in v2_schema["$defs"], f"no v2 $defs entry {name!r}"
        if name not in cache:
            cache[name] = jsonschema.Draft202012Validator(
                {"$ref": f"{V2_SCHEMA_URI}#/$defs/{name}"}, registry=registry
            )
        return cache[name]

    return validator
