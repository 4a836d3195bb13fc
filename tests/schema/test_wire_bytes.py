"""Union fields serialize with their value's own class (``SerializeAsAny``): the same bytes as before.

The generated unions carry ``SerializeAsAny()`` so that pydantic writes a union field's value with
that value's own serializer instead of finding the member again. The reference is the generated
module *without* those markers (the serializer acpio had before), loaded beside the real one from
the same source: every doc example of the protocol pages, values generated from the JSON schema,
and objects built in Python as an agent builds them must give the same ``to_wire_json()`` bytes,
``to_wire()``, ``model_dump()`` and ``model_dump_json()`` with both.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import types
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, TypeAdapter

import acpio.schema as acp
from acpio.schema import _models

from .test_doc_examples import DocExample, parametrize_from_shared, target_of
from .test_roundtrip_property import _bound_integer_formats, strategy_for

__all__ = ["parametrize_from_shared"]  # tests/conftest.py parametrizes ``doc_example`` with it

MARKERS = ("        SerializeAsAny(),\n", "    SerializeAsAny(),\n", "SerializeAsAny(), ")


@pytest.fixture(scope="module")
def reference() -> Iterator[types.ModuleType]:
    """The generated models as they were before ``SerializeAsAny``: the markers taken out of the source."""
    source = Path(_models.__file__).read_text(encoding="utf-8")
    stripped = source
    for marker in MARKERS:
        stripped = stripped.replace(marker, "")
    assert stripped.count("SerializeAsAny") == 1, "only the import should be left"
    assert source.count("SerializeAsAny()") >= 7, "the unions lost their markers"
    name = f"acpio_reference_models_{uuid.uuid4().hex}"
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves forward references through sys.modules
    try:
        exec(compile(stripped, f"<{name}>", "exec"), module.__dict__)
        yield module
    finally:
        del sys.modules[name]


def assert_same_output(value: Any, before: Any) -> None:
    """``value`` (current models) and ``before`` (reference models) serialize to the same JSON."""
    assert type(value).__name__ == type(before).__name__
    if not isinstance(value, BaseModel):
        return
    assert value.to_wire_json() == before.to_wire_json()  # type: ignore[attr-defined]
    assert json.dumps(value.to_wire()) == json.dumps(before.to_wire())  # type: ignore[attr-defined]
    assert value.model_dump_json() == before.model_dump_json()
    assert value.model_dump_json(exclude_unset=True, by_alias=False) == before.model_dump_json(
        exclude_unset=True, by_alias=False
    )
    assert repr(value.model_dump()) == repr(before.model_dump())


def parse_both(name: str, data: Any, reference: types.ModuleType) -> tuple[Any, Any]:
    now = TypeAdapter(getattr(acp, name)).validate_python(data)
    before = TypeAdapter(getattr(reference, name)).validate_python(data)
    return now, before


def test_doc_examples_serialize_as_before(doc_example: DocExample, reference: types.ModuleType) -> None:
    target = target_of(doc_example)
    now, before = parse_both(target.definition, target.value, reference)
    assert_same_output(now, before)


def test_a_subclass_in_a_union_field_is_written_whole(reference: types.ModuleType) -> None:
    """What the markers change: a user's subclass of a variant keeps its own fields on the wire.

    The reference (pydantic's union serializer) finds the member ``TextContent`` and writes only its
    fields, silently dropping ``mood``; the value's own serializer writes every field it has.
    """

    class MoodText(acp.TextContent):
        mood: str = "calm"

    class OldMoodText(reference.TextContent):  # type: ignore[misc,name-defined]
        mood: str = "calm"

    now = acp.AgentMessageChunk(content=MoodText(text="hi", mood="glad"))
    before = reference.AgentMessageChunk(content=OldMoodText(text="hi", mood="glad"))
    assert (
        now.to_wire_json()
        == b'{"content":{"type":"text","text":"hi","mood":"glad"},"sessionUpdate":"agent_message_chunk"}'
    )
    assert (
        before.to_wire_json()
        == b'{"content":{"type":"text","text":"hi"},"sessionUpdate":"agent_message_chunk"}'
    )


def build(module: Any) -> list[BaseModel]:
    """Objects built in Python as an agent builds them, with every kind of union field."""
    m = module
    text = m.TextContent(text="chunk", meta={"k": [1, 2.5, None]})
    link = m.ResourceLink(name="n", uri="file:///a")
    embedded = m.EmbeddedResource(resource=m.TextResourceContents(text="t", uri="file:///b"))
    blob = m.EmbeddedResource(resource=m.BlobResourceContents(blob="AA==", uri="file:///c"))
    call = m.ToolCall(
        tool_call_id="c1",
        title="read",
        kind=m.ToolKind.READ,
        status="in_progress",
        content=[m.Content(content=text), m.Diff(path="/a", new_text="x", old_text=None)],
        raw_input={"path": "/a", "n": 3},
    )
    update = m.ToolCallUpdate(
        tool_call_id="c1", status=m.ToolCallStatus.COMPLETED, content=[m.Content(content=link)]
    )
    return [
        m.SessionNotification(session_id="s", update=m.AgentMessageChunk(content=text)),
        m.SessionNotification(session_id="s", update=m.UserMessageChunk(content=embedded), meta={"a": 1}),
        m.SessionNotification(session_id="s", update=m.AgentThoughtChunk(content=blob, message_id="m1")),
        m.SessionNotification(session_id="s", update=call),
        m.SessionNotification(session_id="s", update=update),
        m.SessionNotification(session_id="s", update=m.UnknownSessionUpdate(session_update="future", x=1)),
        m.PromptRequest(
            session_id="s", prompt=[text, link, embedded, m.UnknownContentBlock(type="video", u=1)]
        ),
        m.RequestPermissionRequest(
            session_id="s",
            tool_call=update,
            options=[m.PermissionOption(option_id="o", name="Allow", kind="allow_once")],
        ),
        m.RequestPermissionResponse(outcome=m.CancelledPermissionOutcome()),
        m.NewSessionRequest(
            cwd="/",
            mcp_servers=[
                m.McpServerStdio(name="s", command="c", args=[], env=[]),
                m.McpServerHttp(name="h", url="u", headers=[]),
            ],
        ),
    ]


def test_objects_built_in_python_serialize_as_before(reference: types.ModuleType) -> None:
    for now, before in zip(build(acp), build(reference), strict=True):
        assert_same_output(now, before)


def test_a_field_assigned_another_type_serializes_as_before(reference: types.ModuleType) -> None:
    """No validation on assignment: a union field may hold anything; both serializers infer it."""
    now = acp.AgentMessageChunk(content=acp.TextContent(text="a"))
    before = reference.AgentMessageChunk(content=reference.TextContent(text="a"))
    for value in ("plain text", {"type": "text", "text": "b"}, [1, 2], None):
        now.content = value  # type: ignore[assignment]
        before.content = value
        assert now.to_wire_json() == before.to_wire_json()
        with warnings.catch_warnings():
            warnings.simplefilter(
                "ignore"
            )  # the reference warns that no member fits; the bytes are what count
            assert now.to_wire() == before.to_wire()


#: The types with union fields (or unions themselves), and how many values to draw of each:
#: hypothesis-jsonschema takes seconds per ``SessionUpdate`` value (see test_roundtrip_property).
GENERATED = {
    "ContentBlock": 10,
    "ToolCallContent": 10,
    "McpServer": 10,
    "AuthMethod": 10,
    "RequestPermissionOutcome": 5,
    "ElicitationPropertySchema": 10,
    "EmbeddedResource": 10,
    "ToolCall": 6,
}

#: Session updates drawn variant by variant (the ``SessionUpdate`` union's own strategy is the slow one).
UPDATES = {
    "agent_message_chunk": "ContentChunk",
    "user_message_chunk": "ContentChunk",
    "tool_call": "ToolCall",
    "tool_call_update": "ToolCallUpdate",
    "plan": "Plan",
}


@pytest.mark.parametrize(("name", "examples"), GENERATED.items())
def test_generated_values_serialize_as_before(
    name: str, examples: int, unstable_schema: dict[str, Any], reference: types.ModuleType
) -> None:
    strategy = strategy_for(name, _bound_integer_formats(unstable_schema["$defs"]))

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    @given(st.data())
    def same(data: st.DataObject) -> None:
        instance = data.draw(strategy, label=name)
        now, before = parse_both(name, instance, reference)
        assert_same_output(now, before)

    same()


def test_generated_notifications_serialize_as_before(
    unstable_schema: dict[str, Any], reference: types.ModuleType
) -> None:
    defs = _bound_integer_formats(unstable_schema["$defs"])
    updates = st.one_of(
        *(
            st.builds(lambda fields, tag=tag: {**fields, "sessionUpdate": tag}, strategy_for(name, defs))
            for tag, name in UPDATES.items()
        )
    )

    @settings(
        max_examples=15,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
    )
    @given(updates)
    def same(update: dict[str, Any]) -> None:
        now, before = parse_both("SessionNotification", {"sessionId": "s", "update": update}, reference)
        assert type(now.update).__name__ != "UnknownSessionUpdate"  # schema-valid: a known variant
        assert_same_output(now, before)

    same()
