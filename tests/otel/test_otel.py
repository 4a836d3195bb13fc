"""OpenTelemetry: one trace from a client through two proxies to an agent, and across a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

import acpio.otel
from acpio import AgentApp, Client, StopReasonName, Turn
from acpio import schema as acp
from acpio.conductor import Chain
from acpio.errors import MethodNotFound
from acpio.transports import AcpAgent

from ..conductor._support import Recorded, arrow_proxy, prompt_text, run_client

HERE = Path(__file__).resolve().parent


def _agent() -> AgentApp:
    app = AgentApp("traced", version="1.0")

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call("count", kind="other") as call:
            await call.update(text=str(len(turn.text.split())))
        await turn.say("counted")
        return "end_turn"

    return app


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    acpio.otel.instrument(provider)
    try:
        yield exporter
    finally:
        acpio.otel.uninstrument()
        provider.shutdown()


def _ancestry(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[ReadableSpan]:
    """``span`` and its parents up to the root, nearest first."""
    line = [span]
    while line[-1].parent is not None and line[-1].parent.span_id in by_id:
        line.append(by_id[line[-1].parent.span_id])
    return line


async def test_a_client_through_two_proxies_to_an_agent_gives_one_trace(spans: InMemorySpanExporter) -> None:
    async def main(cx: Any) -> str:
        text = await prompt_text(cx, "three little words")
        with pytest.raises(MethodNotFound):
            await cx.send_request("_example/unknown", {"x": 1})
        return text

    chain = Chain.agent("conductor", [arrow_proxy(), arrow_proxy(), _agent().builder()])
    client = Client.builder(name="the-client")
    assert await run_client(chain, main, client) == "> > counted"
    finished = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in finished}

    # the agent's session/prompt: twelve spans up to the client, a CLIENT and a SERVER per hop
    (served,) = [
        s
        for s in finished
        if s.name == "session/prompt"
        and s.kind is SpanKind.SERVER
        and s.attributes["acpio.connection"] == "traced"
    ]
    line = _ancestry(served, by_id)
    assert [s.name for s in line] == ["session/prompt"] * 12
    assert [s.kind for s in line] == [SpanKind.SERVER, SpanKind.CLIENT] * 6
    assert line[-1].attributes["acpio.connection"] == "the-client"
    assert line[-1].parent is None
    assert {s.context.trace_id for s in line} == {served.context.trace_id}
    session_id = served.attributes["gen_ai.conversation.id"]
    assert all(s.attributes["gen_ai.conversation.id"] == session_id for s in line)
    assert all(s.attributes["gen_ai.operation.name"] == "invoke_agent" for s in line)
    assert all("jsonrpc.request.id" in s.attributes for s in line)

    # the prompt turn under it, the tool call under the turn
    (turn,) = [s for s in finished if s.name == "invoke_agent traced"]
    assert turn.parent is not None
    assert turn.parent.span_id == served.context.span_id
    assert turn.attributes["gen_ai.conversation.id"] == session_id
    (tool,) = [s for s in finished if s.name == "execute_tool count"]
    assert tool.parent is not None
    assert tool.parent.span_id == turn.context.span_id
    assert tool.attributes["gen_ai.tool.name"] == "count"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"

    # the tool call's update reaches the client in the same trace, through every hop
    updates = [
        s
        for s in finished
        if s.name == "session/update"
        and s.kind is SpanKind.SERVER
        and s.attributes["acpio.connection"] == "the-client"
    ]
    assert updates
    assert {s.context.trace_id for s in updates} == {served.context.trace_id}
    from_tool = [_ancestry(u, by_id) for u in updates if tool in _ancestry(u, by_id)]
    assert from_tool, "no update of the client descends from the tool call"
    up = from_tool[0]
    assert [s.name for s in up[:12]] == ["session/update"] * 12
    assert [s.kind for s in up[:12]] == [SpanKind.SERVER, SpanKind.CLIENT] * 6
    assert up[12:15] == [tool, turn, served]
    assert up[14:] == line

    # a failed request: error status on both ends, with the JSON-RPC code
    failed = [s for s in finished if s.name == "_example/unknown"]
    assert {s.attributes["acpio.connection"] for s in failed if s.kind is SpanKind.CLIENT} >= {"the-client"}
    for span in failed:
        assert span.status.status_code is StatusCode.ERROR
        assert span.attributes["error.type"] == "-32601"


async def test_the_wire_carries_the_trace_context_in_meta(spans: InMemorySpanExporter) -> None:
    agent = Recorded(_agent().builder(), "agent")

    async def main(cx: Any) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))

    await Client.builder(name="the-client").connect_with(agent, main)
    (client_span,) = [
        s for s in spans.get_finished_spans() if s.kind is SpanKind.CLIENT and s.name == "initialize"
    ]
    (sent,) = agent.frames_to("initialize")
    traceparent = sent["params"]["_meta"]["traceparent"]
    version, trace_id, parent_id, _flags = traceparent.split("-")
    assert (version, trace_id, parent_id) == (
        "00",
        f"{client_span.context.trace_id:032x}",
        f"{client_span.context.span_id:016x}",
    )


def _exported(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def test_an_agent_process_continues_the_client_trace(
    spans: InMemorySpanExporter, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "agent-spans.jsonl"
    monkeypatch.setenv("ACPIO_TEST_SPANS", str(out))

    async def main(cx: Any) -> str:
        return await prompt_text(cx, "two words")

    agent = AcpAgent([sys.executable, str(HERE / "traced_agent.py")], env={**os.environ})
    assert await Client.builder(name="the-client").connect_with(agent, main) == "counted"
    ours = {
        s.name: s
        for s in spans.get_finished_spans()
        if s.kind is SpanKind.CLIENT and s.name == "session/prompt"
    }["session/prompt"]
    theirs = _exported(out)
    (served,) = [s for s in theirs if s["name"] == "session/prompt" and s["kind"] == "SpanKind.SERVER"]
    assert served["context"]["trace_id"] == f"0x{ours.context.trace_id:032x}"
    assert served["parent_id"] == f"0x{ours.context.span_id:016x}"
    (tool,) = [s for s in theirs if s["name"] == "execute_tool count"]
    assert tool["context"]["trace_id"] == served["context"]["trace_id"]


async def test_without_an_sdk_instrumenting_changes_nothing_on_the_wire() -> None:
    agent = Recorded(_agent().builder(), "agent")

    async def main(cx: Any) -> str:
        return await prompt_text(cx, "one")

    acpio.otel.instrument()  # the global provider: the API's no-op one, no SDK set up in this process
    try:
        assert await Client.builder().connect_with(agent, main) == "counted"
    finally:
        acpio.otel.uninstrument()
    sent = [frame for frame in agent.to if "method" in frame]
    assert [frame["method"] for frame in sent] == ["initialize", "session/new", "session/prompt"]
    assert all("_meta" not in frame["params"] for frame in sent)


def test_importing_acpio_otel_loads_no_opentelemetry_module() -> None:
    code = "import sys, acpio.otel; print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
