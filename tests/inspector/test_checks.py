"""The warning engine fed frames directly: the cases a real agent process does not easily produce."""

from __future__ import annotations

from typing import Any

import orjson

from acpio.inspector.checks import FrameChecker, Side
from acpio.transports.base import OversizedFrame


def frame(**message: Any) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", **message})


def rules(checker: FrameChecker, sender: Side, data: bytes | OversizedFrame) -> list[str]:
    return [finding.rule.id for finding in checker.observe(sender, data)]


def initialized(agent_capabilities: Any = None) -> FrameChecker:
    checker = FrameChecker()
    params = {"protocolVersion": 1, "clientCapabilities": {}}
    assert rules(checker, "client", frame(id=0, method="initialize", params=params)) == []
    result = {"protocolVersion": 1, "agentCapabilities": agent_capabilities or {}}
    assert rules(checker, "agent", frame(id=0, result=result)) == []
    return checker


def test_json_that_is_not_json_rpc() -> None:
    checker = FrameChecker()
    assert rules(checker, "agent", b'{"id": 1, "result": {}}') == ["not-json-rpc"]
    assert rules(checker, "agent", b"[1, 2]") == ["not-json-rpc", "not-json-rpc"]
    assert rules(checker, "client", b"not json") == ["not-json-rpc"]  # noise from the client is no stdout


def test_a_line_too_long_to_read() -> None:
    (finding,) = FrameChecker().observe("agent", OversizedFrame(size=200_000_000, head=b'{"jsonrpc"'))
    assert finding.rule.id == "long-line"
    assert "200000000 bytes" in finding.message


def test_the_client_answering_nothing_and_twice() -> None:
    checker = initialized()
    assert rules(checker, "client", frame(id=5, result={})) == ["response-to-nothing"]
    read = {"sessionId": "s", "path": "/a"}
    rules(checker, "agent", frame(id=9, method="fs/read_text_file", params=read))
    assert rules(checker, "client", frame(id=9, result={"content": ""})) == []
    assert rules(checker, "client", frame(id=9, result={"content": ""})) == ["response-to-nothing"]


def test_the_client_loading_without_load_session() -> None:
    load = {"sessionId": "s-1", "cwd": "/", "mcpServers": []}
    (finding,) = initialized().observe("client", frame(id=1, method="session/load", params=load))
    assert finding.rule.id == "unadvertised-capability"
    assert (
        finding.message
        == "the client called session/load, but the agent did not advertise agentCapabilities.loadSession"
    )
    assert (
        rules(initialized({"loadSession": True}), "client", frame(id=1, method="session/load", params=load))
        == []
    )


def test_a_replay_after_the_load_answer_is_flagged_until_the_next_prompt() -> None:
    checker = initialized({"loadSession": True})
    rules(
        checker,
        "client",
        frame(id=1, method="session/load", params={"sessionId": "s-1", "cwd": "/", "mcpServers": []}),
    )
    replayed = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "earlier"}}
    update = frame(method="session/update", params={"sessionId": "s-1", "update": replayed})
    assert rules(checker, "agent", update) == []  # before the answer: the replay
    rules(checker, "agent", frame(id=1, result={}))
    assert rules(checker, "agent", update) == ["update-after-load"]
    commands = {"sessionUpdate": "available_commands_update", "availableCommands": []}
    assert (
        rules(
            checker, "agent", frame(method="session/update", params={"sessionId": "s-1", "update": commands})
        )
        == []
    )
    rules(checker, "client", frame(id=2, method="session/prompt", params={"sessionId": "s-1", "prompt": []}))
    assert rules(checker, "agent", update) == []  # a turn's own text


def test_a_result_breaking_the_schema() -> None:
    checker = initialized()
    rules(checker, "client", frame(id=1, method="session/new", params={"cwd": "/", "mcpServers": []}))
    (finding,) = checker.observe("agent", frame(id=1, result={"session": "s-1"}))
    assert finding.rule.id == "schema"
    assert finding.message == "the answer to session/new breaks the schema: sessionId: Field required"


def test_an_update_kind_from_a_newer_schema_is_no_error() -> None:
    checker = initialized()
    rules(checker, "client", frame(id=1, method="session/new", params={"cwd": "/", "mcpServers": []}))
    rules(checker, "agent", frame(id=1, result={"sessionId": "s-1"}))
    newer = {"sessionId": "s-1", "update": {"sessionUpdate": "hologram", "depth": 3}}
    assert rules(checker, "agent", frame(method="session/update", params=newer)) == []


def test_a_v2_connection_is_not_held_to_v1_schema_and_capabilities() -> None:
    checker = FrameChecker()
    rules(checker, "client", frame(id=0, method="initialize", params={"protocolVersion": 2}))
    assert rules(checker, "agent", frame(id=0, result={"protocolVersion": 2, "agentCapabilities": {}})) == []
    assert rules(checker, "client", frame(id=1, method="session/load", params={"sessionId": "s"})) == []
    assert rules(checker, "agent", b"noise") == ["stdout-noise"]
