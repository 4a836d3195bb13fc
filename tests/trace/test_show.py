"""``acpio trace show`` and the rows behind it: labels, durations, chunk runs, the client edge,
filters, and every format acpio writes (conductor traces, ``acpio prompt --json`` logs, Tap recordings)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson

from acpio.trace import NotificationEvent, RequestEvent, ResponseEvent, StderrEvent, read_trace
from acpio.trace.index import TraceIndex
from acpio.trace.show import Filters, build_rows, format_rows

DATA = Path(__file__).parent / "data"
CHAIN = DATA / "prompt_chain.jsons"  # acpio prompt -> conductor (arrow proxy, noisy testy), with --trace
JSON_LOG = DATA / "prompt_json.jsonl"  # acpio prompt --json against testy, the same script


def chunk(session: str, text: str) -> dict[str, object]:
    """An ``agent_message_chunk`` notification of ``text``."""
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session, "update": update}}


def show(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acpio", "trace", "show", *args], capture_output=True, text=True, timeout=60
    )


def test_labels_say_what_happened() -> None:
    rows = build_rows(read_trace(CHAIN))
    labels = {(row.method, row.label) for row in rows}
    assert ("terminal/create", "$ echo built ok") in labels  # the command, not the cwd
    assert ("fs/write_text_file", "/home/dev/notes-project/notes.txt") in labels
    assert ("session/update", "tool_call Read notes.txt in_progress") in labels
    # An update that names its tool call by id only gets the title of the call.
    assert ("session/update", "tool_call_update Write notes.txt completed") in labels
    assert ("session/update", "tool_call_update Rewrite notes.txt? completed") in labels
    assert ("terminal/wait_for_exit", "exit 0") in labels
    assert ("stderr", "noisy agent starting") in labels


def test_requests_and_answers_carry_how_long_the_request_waited() -> None:
    rows = build_rows(read_trace(CHAIN))
    prompt = [row for row in rows if row.method == "session/prompt" and row.from_lane == "Client"]
    answer = [row for row in rows if row.method == "session/prompt" and row.to_lane == "Client"]
    assert prompt[0].duration == answer[0].duration
    assert answer[0].duration is not None
    assert abs(answer[0].duration - (3.11995 - 2.541929)) < 1e-6


def test_a_run_of_chunks_is_one_row_with_the_text_joined() -> None:
    rows = build_rows(read_trace(CHAIN))
    runs = [row for row in rows if row.count > 1]
    assert [(r.from_lane, r.to_lane, r.count) for r in runs] == [
        ("Agent", "Proxy(0)", 7),
        ("Proxy(0)", "Client", 7),
    ]
    assert runs[1].text == "> All done, the notes are rewritten.\n"
    assert runs[1].label == 'agent_message_chunk ×7 "> All done, the notes are rewritten.\\n"'  # noqa: RUF001
    # Expanded, each chunk follows its run; not collapsed, there is no run at all.
    expanded = build_rows(read_trace(CHAIN), expand=True)
    assert len([r for r in expanded if r.member]) == 12
    flat = build_rows(read_trace(CHAIN), collapse=False)
    assert len(flat) == len(rows) + 12


def test_the_client_edge_shows_each_logical_message_once() -> None:
    events = read_trace(CHAIN)
    every_hop = build_rows(events)
    edge = build_rows(events, Filters(edge="client"))
    prompts = [row for row in edge if row.method == "session/prompt"]
    assert [(r.kind, r.from_lane, r.to_lane) for r in prompts] == [
        ("request", "Client", "Agent"),
        ("response", "Agent", "Client"),
    ]
    assert len([r for r in every_hop if r.method == "session/prompt"]) == 4
    assert edge[0].method == "initialize"  # what the client sent (the proxy received proxy/initialize)
    assert all("Client" in (r.from_lane, r.to_lane) for r in edge if r.kind != "stderr")


def test_filters_session_method_words_kinds_and_full_text_search() -> None:
    events = read_trace(CHAIN)
    assert {r.method for r in build_rows(events, Filters(methods=["terminal"]))} == {
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    }
    no_updates = build_rows(events, Filters(methods=["-session/update"]))
    assert "session/update" not in {r.method for r in no_updates}
    assert {r.kind for r in build_rows(events, Filters(kinds=frozenset({"stderr"})))} == {"stderr"}
    found = build_rows(events, Filters(search="BUILT OK"))  # in params, results and chunks, any case
    assert {r.method for r in found} == {"session/prompt", "session/update", "terminal/output"}
    assert {r.session for r in build_rows(events, Filters(session=""))} == {None}


def test_prompt_json_logs_are_read_as_traces_without_times() -> None:
    events = read_trace(JSON_LOG)
    assert len(events) == 36
    assert isinstance(events[0], RequestEvent)
    assert (events[0].from_lane, events[0].to_lane, events[0].method) == ("Client", "Agent", "initialize")
    assert isinstance(events[1], ResponseEvent)
    assert events[1].raw["untimed"] is True
    rows = build_rows(events)
    assert all(row.duration is None for row in rows)  # no times, no durations
    assert any(row.label == "$ echo built ok" for row in rows)
    assert format_rows(rows)[0] == "      —  Client → Agent   initialize  protocol v1 acpio"


def test_tap_recordings_with_times_batches_and_invalid_lines(tmp_path: Path) -> None:
    log = tmp_path / "tap.jsonl"
    lines = [
        {
            "direction": "outgoing",
            "ts": 0.5,
            "message": {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/w"}},
        },
        {
            "direction": "incoming",
            "ts": 0.75,
            "message": {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}},
        },
        {
            "direction": "incoming",
            "ts": 1.0,
            "message": [chunk("s", "a"), chunk("s", "b")],
        },
        {"direction": "recv", "invalid": "Loading model..."},
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    events = read_trace(log)
    assert [e.type for e in events] == ["request", "response", "notification", "notification", "stderr"]
    assert isinstance(events[2], NotificationEvent)
    assert events[2].session == "s"
    assert isinstance(events[4], StderrEvent)
    assert (events[4].line, events[4].stream) == ("Loading model...", "stdout")
    rows = build_rows(events)
    assert rows[1].duration == 0.25
    assert rows[2].label == 'agent_message_chunk ×2 "ab"'  # noqa: RUF001
    # The viewer's index serves each message of the batch as an event of its own.
    index = TraceIndex(log)
    index.refresh(1.0)
    window = index.window(0, 100, 1 << 20)
    assert window.total == 5
    assert [orjson.loads(e)["type"] for e in window.events] == [e.type for e in events]
    assert [orjson.loads(e)["type"] for e in index.window(3, 100, 1 << 20).events] == [
        "notification",
        "stderr",
    ]


def test_trace_show_prints_plain_lines_when_piped() -> None:
    done = show(str(CHAIN))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "\x1b[" not in done.stdout  # piped: no colours, for CI logs
    assert lines[0] == "   0.055    Client → Proxy(0)  proxy/initialize  protocol v1 acpio  [2.34 s]"
    assert "   0.230     Agent !           stderr  noisy agent starting" in lines
    assert any("terminal/create  $ echo built ok  [34.0 ms]" in line for line in lines)
    chunks = 'agent_message_chunk ×7 "> All done, the notes are rewritten.\\n"'  # noqa: RUF001
    assert any(chunks in line for line in lines)


def test_trace_show_options_and_colours() -> None:
    done = show("--edge", "client", "--method", "prompt", "--color", "always", str(CHAIN))
    assert done.returncode == 0, done.stderr
    assert "\x1b[" in done.stdout
    assert done.stdout.count("session/prompt") == 2
    plain = show("--kind", "stderr", "--search", "noisy", str(CHAIN)).stdout.splitlines()
    assert plain == ["   0.230  Agent !        stderr  noisy agent starting"]


def test_trace_show_says_what_is_wrong_with_its_file(tmp_path: Path) -> None:
    missing = show(str(tmp_path / "nope.jsons"))
    assert missing.returncode == 2
    assert "trace file not found" in missing.stderr
    empty = tmp_path / "empty.jsons"
    empty.write_text("not a trace\n")
    done = show(str(empty))
    assert done.returncode == 0
    assert done.stdout == ""
    assert "no events" in done.stderr


def test_deeply_nested_events_are_shown_and_searched(tmp_path: Path) -> None:
    """An event nested deeper than orjson writes (254 levels) is read, labelled and searched all the same."""
    deep: object = {"leaf": "needle"}
    for _ in range(400):
        deep = {"a": deep}
    trace = tmp_path / "deep.jsons"
    event = {
        "type": "request",
        "ts": 1.0,
        "from": "Client",
        "to": "Agent",
        "id": 1,
        "method": "x/deep",
        "params": deep,
    }
    trace.write_text(json.dumps(event) + "\n")
    rows = build_rows(read_trace(trace), Filters(search="NEEDLE"))
    assert [row.method for row in rows] == ["x/deep"]
    done = show("--search", "needle", str(trace))
    assert done.returncode == 0, done.stderr
    assert "x/deep" in done.stdout


def test_a_deep_message_of_a_prompt_json_log_is_served_to_the_viewer(tmp_path: Path) -> None:
    deep: object = "needle"
    for _ in range(400):
        deep = [deep]
    log = tmp_path / "deep.jsonl"
    message = {"jsonrpc": "2.0", "method": "x/deep", "params": {"d": deep}}
    log.write_text(json.dumps({"direction": "recv", "message": message}) + "\n")
    index = TraceIndex(log)
    index.refresh(1.0)
    [served] = index.window(0, 10, 1 << 20).events
    event = json.loads(served)
    assert (event["type"], event["method"], event["from"]) == ("notification", "x/deep", "Agent")
    assert event["params"] == {"d": deep}


def v2_update(ts: float, update: dict[str, object]) -> str:
    """A conductor trace line: a v2 ``session/update`` from the agent to the client."""
    params = {"sessionId": "testy-1", "update": update}
    event = {"type": "notification", "ts": ts, "from": "Agent", "to": "Client", "method": "session/update"}
    return json.dumps(event | {"params": params, "session": "testy-1"})


def test_v2_messages_are_labelled_by_their_ids_states_and_terminals(tmp_path: Path) -> None:
    lines = [
        '{"type":"request","ts":0,"from":"Client","to":"Agent","id":1,"method":"initialize",'
        '"params":{"protocolVersion":2,"info":{"name":"acpio","version":"1"}}}',
        '{"type":"response","ts":0.1,"from":"Agent","to":"Client","id":1,"method":"initialize","is_error":false,'
        '"payload":{"protocolVersion":2,"info":{"name":"acpio-testy","version":"0.1.0"}}}',
        '{"type":"response","ts":0.2,"from":"Agent","to":"Client","id":2,"method":"session/prompt",'
        '"is_error":false,"payload":{"messageId":"user-0"}}',
        v2_update(0.3, {"sessionUpdate": "state_update", "state": "running"}),
        v2_update(
            0.4,
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "agent-1",
                "content": {"type": "text", "text": "a "},
            },
        ),
        v2_update(
            0.5,
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "agent-1",
                "content": {"type": "text", "text": "b"},
            },
        ),
        v2_update(
            0.6,
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "agent-2",
                "content": {"type": "text", "text": "c"},
            },
        ),
        v2_update(
            0.7,
            {
                "sessionUpdate": "agent_message",
                "messageId": "agent-1",
                "content": [{"type": "text", "text": "new"}],
            },
        ),
        v2_update(0.8, {"sessionUpdate": "agent_message", "messageId": "agent-2", "content": []}),
        v2_update(
            0.9,
            {
                "sessionUpdate": "tool_call_update",
                "toolCallId": "tool-1",
                "title": "slow thing",
                "status": "in_progress",
            },
        ),
        '{"type":"request","ts":1.0,"from":"Client","to":"Agent","id":3,"method":"tool_call/cancel",'
        '"params":{"sessionId":"testy-1","toolCallId":"tool-1"}}',
        v2_update(1.1, {"sessionUpdate": "tool_call_update", "toolCallId": "tool-1", "status": "cancelled"}),
        v2_update(
            1.2, {"sessionUpdate": "terminal_update", "terminalId": "terminal-1", "command": "make all"}
        ),
        v2_update(
            1.3, {"sessionUpdate": "terminal_output_chunk", "terminalId": "terminal-1", "data": "b2sK"}
        ),
        v2_update(
            1.4,
            {"sessionUpdate": "terminal_update", "terminalId": "terminal-1", "exitStatus": {"exitCode": 2}},
        ),
        v2_update(
            1.5,
            {
                "sessionUpdate": "plan_update",
                "plan": {
                    "type": "items",
                    "planId": "plan",
                    "entries": [
                        {"content": "a", "priority": "medium", "status": "completed"},
                        {"content": "b", "priority": "medium", "status": "pending"},
                    ],
                },
            },
        ),
        v2_update(1.6, {"sessionUpdate": "state_update", "state": "idle", "stopReason": "cancelled"}),
    ]
    trace = tmp_path / "v2.jsons"
    trace.write_text("\n".join(lines) + "\n")
    labels = [row.label for row in build_rows(read_trace(trace))]
    assert labels == [
        "protocol v2 acpio",
        "protocol v2 acpio-testy 0.1.0",  # the negotiated version, and who answered
        "accepted user-0",  # session/prompt acknowledges the user message
        "state_update running",
        'agent_message_chunk agent-1 ×2 "a b"',  # noqa: RUF001 - a run: chunks of one message
        'agent_message_chunk "c"',  # another message's chunk is its own row
        'agent_message agent-1 "new"',
        "agent_message agent-2 cleared",
        "tool_call_update slow thing in_progress",
        "tool-1 slow thing",
        "tool_call_update slow thing cancelled",
        "terminal_update terminal-1 $ make all",
        'terminal_output_chunk terminal-1 $ make all "ok\\n"',
        "terminal_update terminal-1 $ make all exit 2",
        "plan_update plan 1/2 done",
        "state_update idle cancelled",
    ]
