"""The conductor's trace: lanes first, every logical message on every hop, ids paired, sessions filled in."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from acpio import MethodNotFound, Proxy
from acpio.conductor import Chain, MemorySink, Named
from acpio.conductor.tracing import FileSink
from acpio.jsonrpc import Connection, UntypedMessage

from ._support import (
    ARROW,
    SCRIPTED_AGENT,
    RawComponent,
    answer_initialize,
    arrow_proxy,
    nested,
    notification_frame,
    prompt_text,
    raw_client,
    request_frame,
    run_client,
    successor,
)
from .scripted_agent import ScriptedAgent

DEEP = nested(300)

TURN = [
    ("request", "initialize"),
    ("response", "initialize"),
    ("request", "session/new"),
    ("response", "session/new"),
    ("request", "session/prompt"),
    ("notification", "session/update"),
    ("response", "session/prompt"),
]


def read_trace(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def hop(events: list[dict[str, Any]], a: str, b: str) -> list[tuple[str, str]]:
    """The (type, method) of the events between lanes ``a`` and ``b``, both ways, in order."""
    return [(e["type"], e["method"]) for e in events if {e.get("from"), e.get("to")} == {a, b}]


def check_pairing(events: list[dict[str, Any]]) -> None:
    """Every response answers an earlier request on the same hop: same id and method, lanes swapped."""
    open_requests: dict[tuple[str, str, Any], str] = {}
    for event in events:
        if event["type"] == "request":
            open_requests[(event["from"], event["to"], event["id"])] = event["method"]
        elif event["type"] == "response":
            key = (event["to"], event["from"], event["id"])
            assert open_requests.pop(key) == event["method"], event
    assert open_requests == {}


async def greet(cx: Any) -> str:
    return await prompt_text(cx, "greet")


async def test_a_trace_file_records_the_turn_on_every_hop(tmp_path: Path) -> None:
    path = tmp_path / "run.jsons"
    path.write_text("left over from an earlier run\n")
    chain = Chain.agent("conductor", [arrow_proxy(), ScriptedAgent().builder()]).trace_to(path)
    assert await run_client(chain, greet) == "> Hello, world!"

    events = read_trace(path)
    assert events[0]["type"] == "lanes"  # first, and the old content is gone
    assert events[0]["lanes"] == [
        {"lane": "Client", "name": "client"},
        {"lane": "Proxy(0)", "name": "arrow"},
        {"lane": "Agent", "name": "scripted-agent"},
    ]
    events = events[1:]
    proxy_side = [(kind, "proxy/initialize" if m == "initialize" else m) for kind, m in TURN]
    assert hop(events, "Client", "Proxy(0)") == proxy_side
    assert hop(events, "Proxy(0)", "Agent") == TURN
    assert len(events) == 2 * len(TURN)
    check_pairing(events)
    # Causality across hops: a request goes in before it goes on; the update comes back before the answer.
    order = [(e["type"], e["from"], e["to"], e["method"]) for e in events]
    assert order.index(("request", "Client", "Proxy(0)", "session/prompt")) < order.index(
        ("request", "Proxy(0)", "Agent", "session/prompt")
    )
    assert order.index(("notification", "Agent", "Proxy(0)", "session/update")) < order.index(
        ("notification", "Proxy(0)", "Client", "session/update")
    )
    assert order.index(("notification", "Proxy(0)", "Client", "session/update")) < order.index(
        ("response", "Proxy(0)", "Client", "session/prompt")
    )
    # The logical messages, unwrapped, as each receiver saw them.
    updates = [e for e in events if e["type"] == "notification"]
    assert [u["params"]["update"]["content"]["text"] for u in updates] == ["Hello, world!", "> Hello, world!"]
    # Sessions: known from the session/new result on, absent before.
    for event in events:
        if event["method"] in ("session/prompt", "session/update") or (
            event["method"] == "session/new" and event["type"] == "response"
        ):
            assert event["session"] == "s-1", event
        else:
            assert "session" not in event, event
    assert all(e["protocol"] == "acp" for e in events if e["type"] != "response")
    timestamps = [e["ts"] for e in read_trace(path)]
    assert timestamps == sorted(timestamps)
    assert all(isinstance(ts, float) for ts in timestamps)


async def test_an_error_response_carries_the_error_object(tmp_path: Path) -> None:
    sink = MemorySink()

    async def main(cx: Connection) -> None:
        await cx.send_request(UntypedMessage("initialize", {"protocolVersion": 1}))
        with pytest.raises(MethodNotFound):
            await cx.send_request(UntypedMessage("_x/unknown", {"sessionId": "s-9"}))

    await run_client(Chain.agent("conductor", [ScriptedAgent().builder()]).trace_to(sink), main)
    [answer] = [e for e in sink.events if e["type"] == "response" and e["method"] == "_x/unknown"]
    assert answer["is_error"] is True
    assert answer["payload"] == {"code": -32601, "message": "Method not found", "data": "_x/unknown"}
    assert answer["session"] == "s-9"
    assert (answer["from"], answer["to"]) == ("Agent", "Client")


async def test_subprocess_components_are_named_by_their_commands(tmp_path: Path) -> None:
    path = tmp_path / "run.jsons"
    chain = Chain.agent("conductor", [ARROW, Proxy.builder(name="plain"), SCRIPTED_AGENT]).trace_to(str(path))
    assert await run_client(chain, greet) == "> Hello, world!"
    events = read_trace(path)
    assert events[0]["lanes"][1:] == [
        {"lane": "Proxy(0)", "name": ARROW},
        {"lane": "Proxy(1)", "name": "plain"},
        {"lane": "Agent", "name": SCRIPTED_AGENT},
    ]
    assert hop(events[1:], "Proxy(1)", "Agent") == TURN
    check_pairing(events[1:])


@pytest.mark.parametrize("prefix", ["", "_"], ids=["current names", "legacy names"])
async def test_a_proxy_mode_trace_names_the_successor_lane(prefix: str) -> None:
    sink = MemorySink()
    chain = Chain.proxy("inner", [Named("arrow", arrow_proxy())]).trace_to(sink)
    async with raw_client(chain) as outer:
        outer.request(f"{prefix}proxy/initialize", {"protocolVersion": 1}, request_id=1)
        up = await outer.message_for(f"{prefix}proxy/successor")
        outer.respond(up["id"], {"protocolVersion": 1})
        await outer.response_to(1)
        update = {"sessionUpdate": "plan", "entries": []}
        outer.notify(
            f"{prefix}proxy/successor", successor("session/update", {"sessionId": "s", "update": update})
        )
        await outer.message_for("session/update")
    assert sink.events[0]["lanes"] == [
        {"lane": "Client", "name": "client"},
        {"lane": "Proxy(0)", "name": "arrow"},
        {"lane": "Successor", "name": "successor"},
    ]
    assert [(e["type"], e["from"], e["to"], e["method"], e.get("id")) for e in sink.events[1:]] == [
        ("request", "Client", "Proxy(0)", "proxy/initialize", 1),
        ("request", "Proxy(0)", "Successor", "initialize", up["id"]),
        ("response", "Successor", "Proxy(0)", "initialize", up["id"]),
        ("response", "Proxy(0)", "Client", "proxy/initialize", 1),
        ("notification", "Successor", "Proxy(0)", "session/update", None),
        ("notification", "Proxy(0)", "Client", "session/update", None),
    ]


async def test_a_failing_sink_is_reported_once_and_never_breaks_the_conductor(
    capsys: pytest.CaptureFixture[str],
) -> None:
    calls: list[str] = []

    def sink(event: dict[str, Any]) -> None:
        calls.append(event["type"])
        raise OSError("disk full")

    chain = Chain.agent("conductor", [arrow_proxy(), ScriptedAgent().builder()]).trace_to(sink)
    assert await run_client(chain, greet) == "> Hello, world!"
    assert calls == ["lanes"]
    err = capsys.readouterr().err
    assert err.count("tracing stopped") == 1
    assert "disk full" in err


def test_trace_to_refuses_what_is_not_a_sink() -> None:
    with pytest.raises(TypeError, match="a path, a TraceSink, a function"):
        Chain.agent("conductor", ["agent"]).trace_to(42)


# --- messages nested deeper than orjson writes ----------------------------------------------------


async def test_a_message_nested_300_levels_is_traced_and_tracing_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsons"
    agent = RawComponent("agent")
    async with raw_client(Chain.agent("conductor", [agent]).trace_to(path)) as client:
        client.request("initialize", {"protocolVersion": 1}, request_id=1)
        me = await answer_initialize(agent)
        await client.response_to(1)
        client.send(notification_frame("x/deep_note", DEEP))
        client.send(request_frame(2, "x/deep", DEEP))
        deep = await me.message_for("x/deep")
        me.respond(deep["id"], {"ok": True})
        await client.response_to(2)
        client.request("x/after", {"n": 1}, request_id=3)
        after = await me.message_for("x/after")
        me.respond(after["id"], {"ok": True})
        await client.response_to(3)
    assert "tracing stopped" not in capsys.readouterr().err
    events = read_trace(path)
    value = json.loads(DEEP)
    traced = {(e["type"], e["method"]): e for e in events[1:]}
    assert traced[("notification", "x/deep_note")]["params"] == value
    assert traced[("request", "x/deep")]["params"] == value
    assert traced[("response", "x/deep")]["payload"] == {"ok": True}
    assert traced[("response", "x/after")]["payload"] == {"ok": True}  # the trace went on


def test_a_message_too_deep_for_any_encoder_is_written_as_null_saying_why(tmp_path: Path) -> None:
    path = tmp_path / "run.jsons"
    sink = FileSink(path)
    too_deep = orjson.loads(nested(1020))  # orjson reads 1024 levels; the standard library writes fewer
    event = {"type": "request", "ts": 0.5, "from": "Client", "to": "Agent", "id": 1, "method": "x/deep"}
    sink.write(event | {"params": too_deep})
    sink.write(event | {"id": 2, "params": {"n": 2}})
    sink.close()
    first, second = read_trace(path)
    assert first == event | {"params": None, "omitted": "params nested too deeply to write; written as null"}
    assert second["params"] == {"n": 2}
