"""Property test: v2 instances generated from the v2 JSON schema survive model -> ``to_wire()`` unchanged.

The strategies and the one adjustment to the schema (integer ``format``s bounded) are v1's
(``tests/schema/test_roundtrip_property.py``); here the types of a v2 exchange, with few examples
each so that the file stays fast. Generated instances include the ``other`` variants of every
union and enum the types reach, so unknown tags and ``_``-prefixed custom values are covered.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter

from acpio.schema import v2

from .._helpers import assert_same_json
from ..test_roundtrip_property import _bound_integer_formats, _from_def, check_whole_schema

#: Types of an initialize + session/new + session/prompt exchange: a few seconds each.
DEFS = ["InitializeRequest", "NewSessionResponse", "PromptRequest", "PromptResponse", "Error"]
#: Larger closures, and unions whose ``other`` variants (``not`` one of the known tags) make
#: generation slow: 10 s and more each.
SLOW_DEFS = [
    "InitializeResponse",
    "NewSessionRequest",
    "ContentBlock",
    "ToolCallUpdate",
    "StateUpdate",
    "RequestPermissionRequest",
]
MAX_EXAMPLES = 4


def test_the_schema_is_valid_json_schema(v2_schema: dict[str, Any]) -> None:
    check_whole_schema(v2_schema)


@pytest.fixture(scope="module")
def generation_defs(v2_schema: dict[str, Any]) -> dict[str, Any]:
    return _bound_integer_formats(copy.deepcopy(v2_schema["$defs"]))  # type: ignore[no-any-return]


@pytest.mark.parametrize("name", [*DEFS, *(pytest.param(name, marks=pytest.mark.slow) for name in SLOW_DEFS)])
def test_generated_instances_round_trip(name: str, generation_defs: dict[str, Any]) -> None:
    adapter: TypeAdapter[Any] = TypeAdapter(getattr(v2, name))
    strategy = _from_def(name, generation_defs)

    @settings(
        max_examples=MAX_EXAMPLES,
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
        # the engine's one-step serializer writes the same JSON (camelCase, nothing omitted added)
        assert_same_json(orjson.loads(parsed.to_wire_json()), instance)

    round_trip()
