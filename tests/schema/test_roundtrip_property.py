"""Property test: instances generated from the JSON schema survive model -> ``to_wire()`` unchanged.

Strategies come from ``hypothesis_jsonschema.from_schema`` over ``{"$ref": "#/$defs/<Name>", "$defs": ...}``
of ``schema.unstable.json``. Two adjustments to the schema, both genuine impossibilities rather than
model leniency:

* integer ``format``s (``uint16``, ``uint32``, ``uint64``, ``int32``, ``int64``) are annotations that
  JSON Schema validators ignore, so the generator would produce ``line: 10**30``; the models enforce the
  ranges (as the Rust reference does), so the strategy gets the matching ``minimum``/``maximum``;
* nothing else: tags, nulls and unknown fields are generated as the schema allows them.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import utils as conjecture_utils
from hypothesis_jsonschema import _canonicalise, from_schema
from jsonschema.validators import Draft202012Validator, validator_for
from pydantic import TypeAdapter

import acpio.schema as acp
from acpio.schema import METHODS

from ._helpers import assert_same_json

# hypothesis-jsonschema 0.23.1 (the latest release) drives hypothesis' private `many` helper through
# `more()`, which hypothesis removed when `many` became a context manager/iterator. Restore `more()` on
# top of the new API so that `from_schema` works with the hypothesis this project installs.
if not hasattr(conjecture_utils.many, "more"):

    def _more(self: Any) -> bool:
        iterator = getattr(self, "_acpio_iterator", None)
        if iterator is None:
            self.__enter__()
            iterator = self._acpio_iterator = iter(self)
        try:
            next(iterator)
        except StopIteration:
            self.__exit__(None)
            return False
        return True

    conjecture_utils.many.more = _more  # type: ignore[attr-defined]


# hypothesis-jsonschema checks every sub-schema it canonicalises against its draft's meta-schema
# (jsonschema's `check_schema`, 0.15 s each for draft 2020-12), hundreds per type: 70% of this
# file's time. The ACP schemas are checked whole, once (`check_whole_schema`), so each part is
# given its validator class without checking it again.
def _validator_class(schema: Any) -> Any:
    return validator_for(schema, default=Draft202012Validator)


_canonicalise._get_validator_class = _validator_class

INT_RANGES = {
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "uint64": (0, 2**64 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}

#: The representative set the issue asks for; every request/notification params model is added below.
CORE_DEFS = [
    "SessionNotification",
    "PromptRequest",
    "InitializeRequest",
    "InitializeResponse",
    "NewSessionRequest",
    "RequestPermissionRequest",
    "ToolCallUpdate",
    "ContentBlock",
    "McpServer",
    "SessionConfigOption",
    "CreateElicitationRequest",
    "CreateElicitationResponse",
    "SessionUpdate",
    "AuthMethod",
    "ToolCallContent",
    "RequestPermissionOutcome",
    "ElicitationPropertySchema",
]
METHOD_DEFS = [m.params.__name__ for m in METHODS] + [
    m.result.__name__ for m in METHODS if m.result is not None
]
DEFS = list(dict.fromkeys(CORE_DEFS + METHOD_DEFS))
#: Examples per type: the core set gets more; the whole file stays under a minute.
MAX_EXAMPLES = {name: 10 for name in CORE_DEFS}
METHOD_EXAMPLES = 8


def _bound_integer_formats(node: Any) -> Any:
    if isinstance(node, dict):
        out = {key: _bound_integer_formats(value) for key, value in node.items()}
        types = out.get("type")
        is_integer = types == "integer" or (isinstance(types, list) and "integer" in types)
        if is_integer and out.get("format") in INT_RANGES:
            low, high = INT_RANGES[out["format"]]
            out["minimum"] = max(out.get("minimum", low), low)
            out["maximum"] = min(out.get("maximum", high), high)
        return out
    if isinstance(node, list):
        return [_bound_integer_formats(item) for item in node]
    return node


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {str(node["$ref"]).rsplit("/", 1)[-1]} if "$ref" in node else set()
        return found.union(*(_refs(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(_refs(item) for item in node))
    return set()


def _reachable(name: str, defs: dict[str, Any]) -> dict[str, Any]:
    """Only the ``$defs`` that ``name`` uses: hypothesis-jsonschema canonicalises all of them."""
    seen: set[str] = set()
    todo = [name]
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            todo.extend(_refs(defs[current]))
    return {key: defs[key] for key in seen}


def _from_def(name: str, defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    return from_schema({"$ref": f"#/$defs/{name}", "$defs": _reachable(name, defs)})


def strategy_for(name: str, defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Instances of ``$defs[name]``.

    hypothesis-jsonschema rebuilds the strategy of each property on every draw; for the 16-variant
    ``SessionUpdate`` that costs seconds per example, so ``SessionNotification.update`` is drawn from
    one strategy built once and put into an otherwise generated notification.
    """
    if name != "SessionNotification":
        return _from_def(name, defs)
    shell = copy.deepcopy(defs[name])
    del shell["properties"]["update"]
    shell["required"] = [key for key in shell["required"] if key != "update"]
    shell_defs = {**defs, "SessionNotificationShell": shell}
    return st.builds(
        lambda params, update: {**params, "update": update},
        _from_def("SessionNotificationShell", shell_defs),
        _from_def("SessionUpdate", defs),
    )


def check_whole_schema(schema: dict[str, Any]) -> None:
    """What lets the generator skip checking each part of ``schema`` (``_validator_class``)."""
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)


def test_the_schema_is_valid_json_schema(unstable_schema: dict[str, Any]) -> None:
    check_whole_schema(unstable_schema)


@pytest.fixture(scope="module")
def generation_defs(unstable_schema: dict[str, Any]) -> dict[str, Any]:
    return _bound_integer_formats(copy.deepcopy(unstable_schema["$defs"]))  # type: ignore[no-any-return]


@pytest.mark.slow
@pytest.mark.parametrize("name", DEFS)
def test_generated_instances_round_trip(name: str, generation_defs: dict[str, Any]) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(getattr(acp, name))
    strategy = strategy_for(name, generation_defs)

    @settings(
        max_examples=MAX_EXAMPLES.get(name, METHOD_EXAMPLES),
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    @given(st.data())
    def round_trip(data: st.DataObject) -> None:
        instance = data.draw(strategy, label=name)
        parsed = adapter.validate_python(instance)
        assert_same_json(parsed.to_wire(), instance)
        if hasattr(parsed, "to_wire_json"):  # the engine's one-step serializer writes the same JSON
            assert_same_json(orjson.loads(parsed.to_wire_json()), instance)

    round_trip()
