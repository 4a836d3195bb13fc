"""Checking what an agent sends against the v2 schema (``shared/spec/v2/schema.json``)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

_URI = "urn:acp:v2:schema.json"


class V2Schema:
    """Validators for the messages a v2 agent sends: any message, and ``session/update`` params in full."""

    def __init__(self, schema: dict[str, Any]) -> None:
        defs = schema["$defs"]
        registry: Registry[Any] = Registry().with_resource(_URI, Resource.from_contents(schema))
        agent = next(branch for branch in schema["anyOf"] if branch.get("title") == "Agent")
        self._message = jsonschema.Draft202012Validator(agent | {"$defs": defs})
        self._update = jsonschema.Draft202012Validator(
            {"$ref": f"{_URI}#/$defs/UpdateSessionNotification"}, registry=registry
        )

    def problems_of(self, messages: list[Any]) -> list[str]:
        """What is wrong with each message, one line per problem (the message's start included)."""
        found = []
        for message in messages:
            errors = [e.message[:200] for e in self._message.iter_errors(message)][:1]
            if isinstance(message, dict) and message.get("method") == "session/update":
                errors += [e.message[:200] for e in self._update.iter_errors(message.get("params"))][:2]
            found += [f"{error} in {json.dumps(message)[:200]}" for error in errors]
        return found


@cache
def v2_schema(path: Path) -> V2Schema:
    """The validators of the schema at ``path`` (read once)."""
    return V2Schema(json.loads(path.read_text()))
