"""Every JSON example of the ACP v1 protocol docs parses into the right model and round-trips.

Source: every ```json block of ``shared/spec/docs/protocol/v1/*.mdx`` (not the ``draft`` folder),
numbered per file from 0 in document order; test ids are ``<page>-<index>``.

How an example finds its type:

* JSON-RPC requests and notifications: the params model of ``REQUESTS`` / ``NOTIFICATIONS`` by method.
  Extension methods (``_vendor/...``) have no schema type and are skipped with the reason.
* Responses: the result model of the request with the same id shown *earlier in the same page* (the
  latest one wins). A few pages show a response without its request (typically the ``initialize``
  result, id 0); :data:`UNPAIRED_RESPONSES` names their method, and the test checks that they are
  indeed unpaired. Error responses check the ``error`` object against ``Error``.
* Fragments (a content block, an MCP server, ...): the explicit table :data:`FRAGMENTS`, which also
  names the class the union must resolve to.

Each example must be valid against its ``$defs`` entry of ``schema.unstable.json`` (Draft 2020-12),
parse into the expected class, contain no ``Unknown*`` catch-all anywhere, and ``to_wire()`` must
give back the original JSON (key order aside).

Examples that contradict the schema are listed in :data:`SCHEMA_CONFLICTS` with the reason (see
``shared/reference/spec-conformance.md`` section P), and a test asserts that they are indeed invalid,
so the list cannot rot. Examples that are not JSON at all are in :data:`NOT_JSON`.

Decision on ``"result": null`` (session-setup ``session/load``, file-system ``fs/write_text_file``):
the schema types those results as objects with no required field, and the models follow the schema
(``null`` does not validate). Accepting ``null`` as ``{}`` for empty-result methods is done where
results are decoded (the JSON-RPC layer), so these two examples are schema conflicts here, and
:func:`test_null_result_examples_are_empty_result_methods` checks that ``{}`` is a complete result
for those methods.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

import acpio.schema as acp
from acpio.schema import NOTIFICATIONS, REQUESTS

from ._helpers import assert_same_json, iter_models
from .conftest import DefValidator

DOCS = Path("spec", "docs", "protocol", "v1")
JSON_BLOCK = re.compile(r"^```json\b[^\n]*\n(.*?)^```", re.S | re.M)

Key = tuple[str, int]  # (page file name, index of the json block in the page)

#: Examples that are not JSON, with the reason.
NOT_JSON: dict[Key, str] = {
    ("session-config-options.mdx", 5): 'elides the select options as `"options": [...]` (an ellipsis)',
    ("session-config-options.mdx", 6): 'elides the select options as `"options": [...]` (an ellipsis)',
}

#: Examples that are JSON but invalid against the schema, with the reason (spec-conformance.md §P).
SCHEMA_CONFLICTS: dict[Key, str] = {
    ("session-modes.mdx", 2): (
        "P#226: the current_mode_update example uses `modeId`; the schema's CurrentModeUpdate requires "
        "`currentModeId`"
    ),
    ("session-modes.mdx", 3): (
        'P#229: the request_permission example puts a bare `{"type": "text"}` content block in '
        'toolCall.content; a ToolCallContent must be wrapped as `{"type": "content", "content": ...}`'
    ),
    ("session-setup.mdx", 6): (
        'P#227: shows `"result": null` for session/load; LoadSessionResponse is an object (send `{}`)'
    ),
    ("file-system.mdx", 4): (
        'P#228: shows `"result": null` for fs/write_text_file; WriteTextFileResponse is an object (send `{}`)'
    ),
}

#: Responses shown without their request in the same page: the method they answer.
UNPAIRED_RESPONSES: dict[Key, str] = {
    ("authentication.mdx", 0): "initialize",
    ("extensibility.mdx", 5): "initialize",
    ("file-system.mdx", 0): "initialize",
    ("session-config-options.mdx", 0): "session/new",
    ("session-delete.mdx", 0): "initialize",
    ("session-list.mdx", 0): "initialize",
    ("session-modes.mdx", 0): "session/new",
    ("session-setup.mdx", 2): "initialize",
    ("session-setup.mdx", 7): "initialize",
    ("session-setup.mdx", 10): "initialize",
    ("session-setup.mdx", 17): "initialize",
    ("terminals.mdx", 0): "initialize",
}

#: Schema-valid examples that still contradict the prose (P#230): file-system.mdx and terminals.mdx
#: show ``clientCapabilities`` inside the ``initialize`` *result*. The schema allows unknown fields,
#: so they parse as an InitializeResponse that keeps ``clientCapabilities`` as an unknown field.
CLIENT_CAPABILITIES_IN_INITIALIZE_RESULT: tuple[Key, ...] = (("file-system.mdx", 0), ("terminals.mdx", 0))


@dataclass(frozen=True)
class Fragment:
    """How to check a fragment: its ``$defs`` type, the key it sits under (if any), the class expected."""

    definition: str
    expected: str
    under: str | None = None


#: Examples that are not JSON-RPC messages.
FRAGMENTS: dict[Key, Fragment] = {
    ("authentication.mdx", 1): Fragment("AuthMethod", "AuthMethodAgent"),
    ("authentication.mdx", 2): Fragment("AuthMethod", "AuthMethodTerminal"),
    ("content.mdx", 0): Fragment("ContentBlock", "TextContent"),
    ("content.mdx", 1): Fragment("ContentBlock", "ImageContent"),
    ("content.mdx", 2): Fragment("ContentBlock", "AudioContent"),
    ("content.mdx", 3): Fragment("ContentBlock", "EmbeddedResource"),
    ("content.mdx", 4): Fragment("ContentBlock", "ResourceLink"),
    ("elicitation.mdx", 0): Fragment("ClientCapabilities", "ClientCapabilities", under="clientCapabilities"),
    ("session-config-options.mdx", 1): Fragment(
        "ClientCapabilities", "ClientCapabilities", under="clientCapabilities"
    ),
    ("session-config-options.mdx", 2): Fragment("SessionConfigOption", "SessionConfigOption"),
    ("session-setup.mdx", 14): Fragment("McpServer", "McpServerStdio"),
    ("session-setup.mdx", 15): Fragment("McpServer", "McpServerHttp"),
    ("session-setup.mdx", 16): Fragment("McpServer", "McpServerSse"),
    ("tool-calls.mdx", 5): Fragment("ToolCallContent", "Content"),
    ("tool-calls.mdx", 6): Fragment("ToolCallContent", "Diff"),
    ("tool-calls.mdx", 7): Fragment("ToolCallContent", "Terminal"),
    ("tool-calls.mdx", 8): Fragment("ToolCallLocation", "ToolCallLocation"),
}


@dataclass(frozen=True)
class DocExample:
    """One ```json block of a protocol page."""

    file: str
    index: int
    text: str
    #: For a response: the method of the latest earlier request with the same id in the page.
    answers: str | None

    @property
    def key(self) -> Key:
        return (self.file, self.index)

    @property
    def id(self) -> str:
        return f"{self.file.removesuffix('.mdx')}-{self.index}"


def load_examples(shared: Path) -> list[DocExample]:
    """Every ```json block of the v1 protocol pages, with the request each response answers."""
    examples = []
    for page in sorted((shared / DOCS).glob("*.mdx")):
        pending: dict[Any, str] = {}
        for index, text in enumerate(JSON_BLOCK.findall(page.read_text(encoding="utf-8"))):
            answers = None
            try:
                data = json.loads(text)
            except ValueError:
                data = None
            if isinstance(data, dict) and "jsonrpc" in data:
                if "method" in data and "id" in data:
                    pending[data["id"]] = data["method"]
                elif "method" not in data:
                    answers = pending.get(data.get("id"))
            examples.append(DocExample(page.name, index, text, answers))
    return examples


def parametrize_from_shared(metafunc: pytest.Metafunc, shared: Path | None) -> None:
    """Called by tests/conftest.py: parametrize ``doc_example`` over the pages' examples."""
    if "doc_example" not in metafunc.fixturenames:
        return
    if shared is None:
        metafunc.parametrize(
            "doc_example", [pytest.param(None, marks=pytest.mark.skip(reason="../shared is absent"))]
        )
        return
    listed = set(NOT_JSON) | set(SCHEMA_CONFLICTS)
    params = [pytest.param(ex, id=ex.id) for ex in load_examples(shared) if ex.key not in listed]
    metafunc.parametrize("doc_example", params)


@pytest.fixture(scope="module")
def examples_by_key(shared_dir: Path) -> dict[Key, DocExample]:
    return {ex.key: ex for ex in load_examples(shared_dir)}


@dataclass(frozen=True)
class Target:
    """What an example is checked against."""

    definition: str  # the $defs entry
    value: Any  # the JSON validated against it
    expected: str  # the class the value must parse into


def target_of(example: DocExample) -> Target:
    """The type an example must match (skips extension methods)."""
    data = json.loads(example.text)
    if not (isinstance(data, dict) and "jsonrpc" in data):
        fragment = FRAGMENTS.get(example.key)
        assert fragment is not None, f"unclassified fragment {example.id}: add it to FRAGMENTS: {data}"
        value = data[fragment.under] if fragment.under else data
        return Target(fragment.definition, value, fragment.expected)
    assert example.key not in FRAGMENTS, f"{example.id} is a JSON-RPC message, not a fragment"
    method = data.get("method")
    if method is not None:
        if method.startswith("_"):
            pytest.skip(f"extension method {method}: no schema type for its params")
        table = REQUESTS if "id" in data else NOTIFICATIONS
        assert method in table, f"{example.id}: unknown method {method}"
        name = table[method].params.__name__
        return Target(name, data.get("params"), name)
    if example.key in UNPAIRED_RESPONSES:
        assert example.answers is None, (
            f"{example.id} now follows its request ({example.answers}): remove it from UNPAIRED_RESPONSES"
        )
        method = UNPAIRED_RESPONSES[example.key]
    else:
        method = example.answers
        assert method is not None, f"{example.id}: response without request: add it to UNPAIRED_RESPONSES"
    if method.startswith("_"):
        pytest.skip(f"response to extension method {method}: no schema type for its result")
    if "error" in data:
        return Target("Error", data["error"], "Error")
    result = REQUESTS[method].result
    assert result is not None
    return Target(result.__name__, data["result"], result.__name__)


def test_doc_example_parses_and_round_trips(doc_example: DocExample, def_validator: DefValidator) -> None:
    target = target_of(doc_example)
    errors = [
        f"{list(e.absolute_path)}: {e.message}"
        for e in def_validator(target.definition).iter_errors(target.value)
    ]
    assert not errors, (
        f"{doc_example.id} is invalid against {target.definition}: list it in SCHEMA_CONFLICTS with the "
        f"reason, or fix the lookup: {errors}"
    )

    parsed = TypeAdapter(getattr(acp, target.definition)).validate_python(target.value)

    assert type(parsed).__name__ == target.expected
    unknown = [type(m).__name__ for m in iter_models(parsed) if type(m).__name__.startswith("Unknown")]
    assert not unknown, f"a known variant fell into a catch-all: {unknown}"
    if isinstance(parsed, acp.SessionNotification):
        tag = target.value["update"]["sessionUpdate"]
        assert type(parsed.update).__name__ == "".join(part.title() for part in tag.split("_"))
    assert_same_json(parsed.to_wire(), target.value)


@pytest.mark.parametrize(("key", "reason"), list(NOT_JSON.items()), ids=lambda v: str(v))
def test_listed_examples_are_indeed_not_json(
    key: Key, reason: str, examples_by_key: dict[Key, DocExample]
) -> None:
    assert key in examples_by_key, f"{key} no longer exists: remove it from NOT_JSON"
    with pytest.raises(ValueError, match="Expecting value"):
        json.loads(examples_by_key[key].text)
    assert "[...]" in examples_by_key[key].text, reason


@pytest.mark.parametrize("key", list(SCHEMA_CONFLICTS), ids=lambda k: f"{k[0].removesuffix('.mdx')}-{k[1]}")
def test_listed_conflicts_are_indeed_invalid_against_the_schema(
    key: Key, examples_by_key: dict[Key, DocExample], def_validator: DefValidator
) -> None:
    assert key in examples_by_key, f"{key} no longer exists: remove it from SCHEMA_CONFLICTS"
    target = target_of(examples_by_key[key])
    assert not def_validator(target.definition).is_valid(target.value), (
        f"{key} is now valid against {target.definition}: remove it from SCHEMA_CONFLICTS "
        f"({SCHEMA_CONFLICTS[key]})"
    )
    # what the models do with it: reject it, keep the odd part as an `Unknown*` variant (forward
    # compatibility: passed on unchanged), or repair it into a schema-valid value (lenient receive)
    try:
        parsed = TypeAdapter(getattr(acp, target.definition)).validate_python(target.value)
    except ValidationError:
        return
    if any(type(m).__name__.startswith("Unknown") for m in iter_models(parsed)):
        assert_same_json(parsed.to_wire(), target.value)
        return
    repaired = parsed.to_wire()
    assert repaired != target.value
    assert def_validator(target.definition).is_valid(repaired), repaired


@pytest.mark.parametrize(
    ("key", "method"),
    [(("session-setup.mdx", 6), "session/load"), (("file-system.mdx", 4), "fs/write_text_file")],
)
def test_null_result_examples_are_empty_result_methods(
    key: Key, method: str, examples_by_key: dict[Key, DocExample]
) -> None:
    example = examples_by_key[key]
    assert example.answers == method
    assert json.loads(example.text)["result"] is None
    result = REQUESTS[method].result
    assert result is not None
    # no required field: `{}` is a complete result, which a receiver substitutes for `null`
    assert not [name for name, field in result.model_fields.items() if field.is_required()]
    assert result.model_validate({}).to_wire() == {}


@pytest.mark.parametrize("key", CLIENT_CAPABILITIES_IN_INITIALIZE_RESULT, ids=lambda k: k[0])
def test_client_capabilities_in_initialize_result_stay_an_unknown_field(
    key: Key, examples_by_key: dict[Key, DocExample]
) -> None:
    example = examples_by_key[key]
    assert key in UNPAIRED_RESPONSES
    result = json.loads(example.text)["result"]
    parsed = acp.InitializeResponse.model_validate(result)
    assert parsed.model_extra == {"clientCapabilities": result["clientCapabilities"]}
    assert "agentCapabilities" not in parsed.to_wire()
