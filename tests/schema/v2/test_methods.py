"""The v2 method table covers every method of v2's meta files, and every v2 union keeps its catch-all.

Also the drift test: the committed v2 modules equal what the generator makes of ``../shared/spec/v2``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter

from acpio.schema import v2

REPO = Path(__file__).resolve().parents[3]


def test_generated_v2_modules_are_up_to_date(shared_dir: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "generate_schema.py"),
            "--spec",
            str(shared_dir / "spec"),
            "--version",
            "2",
            "--check",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, f"generated v2 modules are stale; run `make schema`:\n{result.stderr}"


def _meta_methods(meta: dict[str, Any]) -> set[str]:
    groups = ("agentMethods", "clientMethods", "protocolMethods", "proxyMethods")
    return {method for group in groups for method in meta.get(group, {}).values()}


def test_every_method_of_the_meta_files_has_a_row(v2_meta: dict[str, Any], spec_dir: Path) -> None:
    stable_meta = json.loads((spec_dir / "v2" / "meta.json").read_text())
    rows = {m.method for m in v2.METHODS}
    assert _meta_methods(v2_meta) == rows
    stable_rows = {m.method for m in v2.METHODS if m.stable}
    assert _meta_methods(stable_meta) <= stable_rows
    assert not rows & {"session/load", "authenticate", "fs/read_text_file", "terminal/create"}


def test_directions_and_capabilities_of_v2_methods(v2_meta: dict[str, Any]) -> None:
    agent = set(v2_meta["agentMethods"].values())
    client = set(v2_meta["clientMethods"].values())
    for row in v2.METHODS:
        if row.method in agent & client or row.method == "$/cancel_request":
            assert row.direction == "both", row
        elif row.method in agent:
            assert row.direction == "client_to_agent", row
        elif row.method in client:
            assert row.direction == "agent_to_client", row
    caps = {m.method: m.capability for m in v2.METHODS}
    assert caps["session/prompt"] == "A.session"
    assert caps["session/fork"] == "A.session.fork"
    assert caps["elicitation/create"] == "C.elicitation"
    assert caps["initialize"] is None
    assert caps["auth/login"] is None  # advertised by a non-empty authMethods, not a capability
    for row in v2.METHODS:
        assert row.method == row.params.METHOD  # type: ignore[union-attr]
        if row.kind == "request":
            assert row.result is not None
            assert row.params.RESPONSE is row.result  # type: ignore[union-attr]


def test_v2_capabilities_are_objects_and_empty_means_supported() -> None:
    caps = v2.AgentCapabilities.model_validate({"session": {}, "auth": None})
    assert caps.session is not None
    assert caps.session.fork is None
    assert caps.auth is None
    assert caps.to_wire() == {"session": {}, "auth": None}


def _unions_with_other(schema: dict[str, Any]) -> list[str]:
    found = []
    for name, node in schema["$defs"].items():
        alts = node.get("anyOf") or node.get("oneOf") or []
        tagged = any(any("const" in p for p in alt.get("properties", {}).values()) for alt in alts)
        other = any(alt.get("title") == "other" and alt.get("type") == "object" for alt in alts)
        if tagged and other and "properties" not in node:
            found.append(name)
    return found


def test_every_tagged_union_has_its_catch_all(v2_schema: dict[str, Any]) -> None:
    unions = _unions_with_other(v2_schema)
    assert len(unions) >= 14
    missing = []
    for name in unions:
        if not hasattr(v2, name):
            missing.append(name)
            continue
        # Other<Union> where the schema has a def named Unknown<Union> (the ``unknown`` state)
        catch_all = getattr(v2, f"Other{name}", None) or getattr(v2, f"Unknown{name}", None)
        if not isinstance(catch_all, type):
            missing.append(name)
            continue
        node = v2_schema["$defs"][name]
        tag = next(
            key
            for alt in node.get("anyOf") or node.get("oneOf")
            for key, prop in alt.get("properties", {}).items()
            if "const" in prop
        )
        wire = {tag: "_acpio_test_custom", "extra": [1, {"a": None}]}
        if name == "AvailableCommand":
            wire.update(name="n", description="d")
        value = TypeAdapter(getattr(v2, name)).validate_python(wire)
        if type(value) is not catch_all or value.to_wire() != wire:
            missing.append(name)
    assert missing == []


@pytest.mark.parametrize(
    "enum",
    [v2.ToolKind, v2.ToolCallStatus, v2.PermissionOptionKind, v2.PlanEntryStatus, v2.SessionStatus],
)
def test_open_enums_keep_custom_values(enum: Any) -> None:
    adapter = TypeAdapter(enum | str)
    assert adapter.validate_python("_acpio_custom") == "_acpio_custom"
