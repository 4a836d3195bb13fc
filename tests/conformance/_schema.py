"""Checking what an agent sends against the stable v1 schema (``shared/spec/v1/schema.json``)."""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from referencing import Registry, Resource

_URI = "urn:acp:v1:schema.json"


class AgentSchema:
    """Validators for the messages an agent sends: any message, a method's result, a session update."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self.defs: dict[str, Any] = schema["$defs"]
        self._registry: Registry[Any] = Registry().with_resource(_URI, Resource.from_contents(schema))
        agent = next(branch for branch in schema["anyOf"] if branch.get("title") == "Agent")
        self._message = jsonschema.Draft202012Validator(agent | {"$defs": self.defs})
        #: The result type of each method, read from the schema's own response descriptions.
        self.result_types: dict[str, str] = {}
        results = self.defs["AgentResponse"]["anyOf"][0]["properties"]["result"]["anyOf"]
        for branch in results:
            found = re.search(r"for an? `([^`]+)`", branch.get("description", ""))
            if found:
                self.result_types[found.group(1)] = branch["title"]
        self._validators: dict[str, jsonschema.Draft202012Validator] = {}

    def _of(self, name: str) -> jsonschema.Draft202012Validator:
        if name not in self._validators:
            self._validators[name] = jsonschema.Draft202012Validator(
                {"$ref": f"{_URI}#/$defs/{name}"}, registry=self._registry
            )
        return self._validators[name]

    def problems(self, message: Any, answered_method: str | None) -> list[str]:
        """What is wrong with ``message``; ``answered_method`` is the method of the request it answers."""
        found = [e.message[:300] for e in self._message.iter_errors(message)][:1]
        typed = self.typed_part(message, answered_method)
        if typed is not None:
            name, value = typed
            found += [f"{name}: {e.message[:300]}" for e in self._of(name).iter_errors(value)][:3]
        return found

    def typed_part(self, message: Any, answered_method: str | None) -> tuple[str, Any] | None:
        """The schema type and value of a result or of ``session/update`` params, when known."""
        if not isinstance(message, dict):
            return None
        if message.get("method") == "session/update":
            return "SessionNotification", message.get("params")
        if answered_method in self.result_types and "result" in message:
            return self.result_types[answered_method], message["result"]
        return None

    def unknown_keys(self, name: str, value: Any) -> list[str]:
        """The root keys of ``value`` that the type ``name`` does not define (``_meta`` aside)."""
        if not isinstance(value, dict):
            return []
        allowed = self._keys(self.defs[name], value, set())
        return sorted(k for k in value if k != "_meta" and k not in allowed)

    def _keys(self, node: Any, value: dict[str, Any], seen: set[str]) -> set[str]:
        if not isinstance(node, dict):
            return set()
        keys = set(node.get("properties", {}))
        ref = node.get("$ref")
        if isinstance(ref, str) and ref not in seen:
            keys |= self._keys(self.defs[ref.rsplit("/", 1)[-1]], value, seen | {ref})
        for combinator in ("allOf", "anyOf", "oneOf"):
            for branch in node.get(combinator, ()):
                if combinator == "allOf" or self._matches(branch, value):
                    keys |= self._keys(branch, value, seen)
        return keys

    def _matches(self, branch: Any, value: dict[str, Any]) -> bool:
        """Whether ``value`` is the branch of a union it is (by its discriminator, when it has one)."""
        for key, spec in (branch.get("properties") or {}).items() if isinstance(branch, dict) else ():
            if isinstance(spec, dict) and "const" in spec:
                return bool(value.get(key) == spec["const"])
        return True


@cache
def agent_schema(path: Path) -> AgentSchema:
    """The validators for ``path`` (``shared/spec/v1/schema.json``), built once per process."""
    return AgentSchema(json.loads(path.read_text(encoding="utf-8")))
