"""The templates of a turn's verbs write the bytes pydantic writes for the models they stand for.

Each verb that fills in its update itself (``say``, ``think``, ``plan``, ``report_usage``, the tool
calls) sends a :class:`~acpio.app.update_templates.Template` instead of a model. Here each kind goes
through a turn's real update writer on a real connection twice, as the template and as the model the
verb built before templates (written out below, as the verbs build them), and the frames must be the
same bytes: on v1, and on v2 (its shapes, message ids, and the neutral update it records). Awkward
text comes from hypothesis and from a list of known troublemakers; when pydantic's output changes
(key order, escapes, numbers), these fail.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import math
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpio import Agent
from acpio import schema as acp
from acpio.app.tool_calls import SessionUpdates
from acpio.app.update_templates import (
    MESSAGE,
    THOUGHT,
    PlanTemplate,
    Template,
    TextChunk,
    ToolCallChange,
    ToolCallStart,
    UsageTemplate,
)
from acpio.app.updates_v2 import V2Updates
from acpio.transports import Channel

from .._awkward_text import AWKWARD

SESSION = 'sess "1" \\ ü'  # the session id is written into every frame: make it awkward too
CWD = Path("/work")

texts = st.one_of(st.sampled_from(AWKWARD), st.text())
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats()
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


def cases(text: str, raw: Any = None) -> list[tuple[Template, acp.SessionUpdate]]:
    """Each template kind with ``text`` in every text field, beside the model its verb built."""
    said = acp.TextContent(text=text)
    return [
        (TextChunk(MESSAGE, text), acp.AgentMessageChunk(content=said)),
        (TextChunk(THOUGHT, text), acp.AgentThoughtChunk(content=said)),
        (
            PlanTemplate([text, "second"]),
            acp.Plan(
                entries=[
                    acp.PlanEntry(content=text, priority="medium", status="pending"),
                    acp.PlanEntry(content="second", priority="medium", status="pending"),
                ]
            ),
        ),
        (PlanTemplate([]), acp.Plan(entries=[])),
        (UsageTemplate(0, 2**64 - 1, None, "USD"), acp.UsageUpdate(used=0, size=2**64 - 1)),
        (
            UsageTemplate(1_200, 200_000, 0.1 + 0.2, text),
            acp.UsageUpdate(used=1_200, size=200_000, cost=acp.Cost(amount=0.1 + 0.2, currency=text)),
        ),
        (
            UsageTemplate(1, 2, 3, "EUR"),
            acp.UsageUpdate(used=1, size=2, cost=acp.Cost(amount=3, currency="EUR")),
        ),
        (
            ToolCallStart("call_1", text, None, [], None, None),
            acp.ToolCall(tool_call_id="call_1", title=text, status="pending"),
        ),
        (
            ToolCallStart("call_2", text, "edit", [CWD / text, Path("/b")], raw, {"why": text, "n": 1}),
            acp.ToolCall(
                tool_call_id="call_2",
                title=text,
                status="pending",
                kind="edit",
                locations=[acp.ToolCallLocation(path=str(CWD / text)), acp.ToolCallLocation(path="/b")],
                **({"raw_input": raw} if raw is not None else {}),
                meta={"why": text, "n": 1},
            ),
        ),
        (
            ToolCallChange("call_1", status="completed"),
            acp.ToolCallUpdate(tool_call_id="call_1", status="completed"),
        ),
        (
            ToolCallChange(
                "call_1",
                status="in_progress",
                title=text,
                text=text,
                diff=("/p", text, text + "\nnew\n"),
                raw_output=raw,
            ),
            acp.ToolCallUpdate(
                tool_call_id="call_1",
                status="in_progress",
                title=text,
                content=[
                    acp.Content(content=said),
                    acp.Diff(path="/p", old_text=text, new_text=text + "\nnew\n"),
                ],
                **({"raw_output": raw} if raw is not None else {}),
            ),
        ),
        (
            ToolCallChange("call_1", diff=("/new file", None, text)),
            acp.ToolCallUpdate(
                tool_call_id="call_1", content=[acp.Diff(path="/new file", old_text=None, new_text=text)]
            ),
        ),
        (
            ToolCallChange("call_1", terminal_id=text),
            acp.ToolCallUpdate(tool_call_id="call_1", content=[acp.Terminal(terminal_id=text)]),
        ),
        (
            ToolCallChange("call_1", status="failed", text=text),
            acp.ToolCallUpdate(tool_call_id="call_1", status="failed", content=[acp.Content(content=said)]),
        ),
    ]


@contextmanager
def message_ids() -> Iterator[None]:
    """Message ids ``msg_0``, ``msg_1``... for the writers made inside: two runs can be compared."""
    numbers = itertools.count()
    with mock.patch("acpio.app.v2_shapes.new_message_id", side_effect=lambda: f"msg_{next(numbers)}"):
        yield


async def _written(
    version: int, updates: Sequence[Template | acp.SessionUpdate]
) -> tuple[list[bytes], list[bytes]]:
    ours, theirs = Channel.duplex()
    cx = await Agent.builder().open_connection(ours)
    recorded: list[bytes] = []
    with message_ids():
        writer = (
            SessionUpdates(cx, SESSION, CWD)
            if version == 1
            else V2Updates(cx, SESSION, CWD, lambda _, params: recorded.append(params))
        )
        for update in updates:
            if isinstance(update, TextChunk):  # as say and think send them
                await writer.send_text(update.kind, update.text)
            elif isinstance(update, Template):
                writer.send_template_now(update)
            else:
                await writer.send(update)
    frames = [await theirs.receive() for _ in updates]
    assert all(isinstance(frame, bytes) for frame in frames)
    await ours.aclose()
    return frames, recorded  # type: ignore[return-value]


def written(version: int, updates: Sequence[Template | acp.SessionUpdate]) -> tuple[list[bytes], list[bytes]]:
    """The frames a turn's writer of ``version`` sends for ``updates``, and what it records (v2).

    Text chunks go out as ``say`` and ``think`` send them (``send_text``).
    """
    return asyncio.run(_written(version, updates))


def outcome(version: int, updates: Sequence[Template | acp.SessionUpdate]) -> object:
    """:func:`written`, or the error it raised (its type and message)."""
    try:
        return written(version, updates)
    except Exception as exc:
        return type(exc), str(exc)


def assert_same_bytes(templates: Sequence[Template], models: Sequence[acp.SessionUpdate]) -> None:
    for version in (1, 2):
        assert outcome(version, templates) == outcome(version, models), f"v{version}"


def test_each_kind_writes_the_bytes_of_its_model_on_both_versions() -> None:
    for text in AWKWARD:
        pairs = cases(text, {"query": text, "n": [1, -2.5e-7, None, True, 1e300]})
        templates = [template for template, _ in pairs]
        for template in templates:  # the templates write these: no model was needed
            template.update_json()
            template.v2_json()
        assert [template.model() for template in templates] == [model for _, model in pairs]
        assert_same_bytes(templates, [model for _, model in pairs])


@settings(max_examples=40, deadline=None)
@given(text=texts, raw=json_values)
def test_any_text_and_json_value_give_the_same_bytes(text: str, raw: Any) -> None:
    pairs = cases(text, raw)
    assert_same_bytes([template for template, _ in pairs], [model for _, model in pairs])


def test_chunks_of_one_message_share_its_id_on_v2_and_other_updates_end_it() -> None:
    say, think = TextChunk(MESSAGE, "a"), TextChunk(THOUGHT, "b")
    usage = UsageTemplate(1, 2, None, "USD")
    sequence: list[Template] = [say, say, think, say, usage, say]
    assert_same_bytes(sequence, [template.model() for template in sequence])
    frames, recorded = written(2, sequence)
    ids = [orjson.loads(frame)["params"]["update"].get("messageId") for frame in frames]
    assert ids == ["msg_0", "msg_0", "msg_1", "msg_2", None, "msg_3"]
    kept = [orjson.loads(params)["update"].get("_meta") for params in recorded]
    assert kept[0] == {"acpio": {"messageId": "msg_0"}}
    assert kept[4] is None


def _odd_values() -> list[Any]:
    class Kind(str):
        pass

    return [
        2**70,  # wider than orjson writes
        (1, "tuple"),
        {1: "not a str key"},
        datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC),
        uuid.UUID(int=7),
        Path("/a path"),
        Kind("a str subclass"),
        math.nan,
    ]


@pytest.mark.parametrize("raw", _odd_values(), ids=repr)
def test_values_the_templates_do_not_write_go_out_as_their_model_did(raw: Any) -> None:
    pairs = [
        (
            ToolCallStart("c", "t", None, [], raw, None),
            acp.ToolCall(tool_call_id="c", title="t", status="pending", raw_input=raw),
        ),
        (ToolCallChange("c", raw_output=raw), acp.ToolCallUpdate(tool_call_id="c", raw_output=raw)),
    ]
    assert_same_bytes([template for template, _ in pairs], [model for _, model in pairs])


def test_arguments_of_other_types_fall_back_to_the_model() -> None:
    entry = acp.PlanEntry(content="given", priority="high", status="in_progress", _meta={"k": 1})
    refused: list[Template] = [
        PlanTemplate(["text", entry]),  # a PlanEntry of the caller's
        UsageTemplate(1, 2, math.inf, "USD"),
        ToolCallStart("c", "t", None, [], None, {"k": datetime.date(2026, 1, 1)}),
    ]
    for template in refused:
        with pytest.raises(TypeError):
            template.update_json()
    assert_same_bytes(refused, [template.model() for template in refused])


def test_text_that_is_not_utf8_fails_as_the_model_did() -> None:
    with pytest.raises(TypeError):
        TextChunk(MESSAGE, "\ud800").update_json()
    for version in (1, 2):
        messages = []
        for update in (
            TextChunk(MESSAGE, "\ud800"),
            acp.AgentMessageChunk(content=acp.TextContent(text="\ud800")),
        ):
            with pytest.raises(TypeError) as raised:
                written(version, [update])
            messages.append(str(raised.value))
        assert messages[0] == messages[1], f"v{version}"
        # v1 writes the model with pydantic, v2 its shape with orjson: each says what it refused
        assert ("not JSON serializable" if version == 1 else "not valid UTF-8") in messages[0]


def test_the_history_builds_each_model_when_read(monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    original: Callable[..., Any] = acp.TextContent.__init__
    two = acp.AgentMessageChunk(content=acp.TextContent(text="two"))

    def counting(self: Any, **data: Any) -> None:
        built.append(data["text"])
        original(self, **data)

    frames_and_writer: dict[str, Any] = {}

    async def run() -> None:
        ours, _theirs = Channel.duplex()
        cx = await Agent.builder().open_connection(ours)
        writer = SessionUpdates(cx, SESSION, CWD)
        for word in ("one", "two", "three"):
            await writer.send_text(MESSAGE, word)
        frames_and_writer["sent"] = writer.sent.snapshot()
        await writer.send_text(MESSAGE, "later")
        await ours.aclose()

    monkeypatch.setattr(acp.TextContent, "__init__", counting)
    asyncio.run(run())
    assert built == []  # sent without a model
    snapshot = frames_and_writer["sent"]
    assert len(snapshot) == 3  # what was sent when it was taken
    assert snapshot[1] == two
    assert built == ["two"]
    assert [update.content.text for update in snapshot[::2]] == ["one", "three"]
