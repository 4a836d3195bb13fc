"""testy's commands for the stable methods and update kinds a client must handle: notices, compactions,
config options, elicitation (form and URL), terminal/kill, and the terminal login, on the wire."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from acpio.agents.testy import TestyOptions, testy_agent
from acpio.agents.testy.agent import TERMINAL_AUTH_METHOD_ID
from acpio.agents.testy.login import logged_in, terminal_login
from acpio.testing import WirePeer, serving

FILES_AND_TERMINAL: dict[str, Any] = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}


async def _open(peer: WirePeer, root: Path, capabilities: dict[str, Any]) -> str:
    """initialize with ``capabilities``, then a new session in ``root``; its id."""
    peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
    await peer.response_to(1)
    new = peer.request("session/new", {"cwd": str(root), "mcpServers": []})
    answer = await peer.response_to(new)
    return str(answer["result"]["sessionId"])


async def _prompt(peer: WirePeer, session_id: str, text: str) -> int:
    return int(
        peer.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
    )


async def _updates_until_answer(
    peer: WirePeer, prompt_id: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The session/update payloads before the answer to ``prompt_id``, and that answer."""
    seen: list[Any] = []
    answer = await peer.response_to(prompt_id, seen)
    return [f["params"]["update"] for f in seen if f.get("method") == "session/update"], answer


def _text(updates: list[dict[str, Any]]) -> str:
    return "".join(u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk")


@pytest.fixture
async def peer() -> AsyncIterator[WirePeer]:
    async with serving(testy_agent()) as wire:
        yield wire


async def test_notice_is_an_update_for_a_client_with_notices_and_a_message_otherwise(
    tmp_path: Path,
) -> None:
    async with serving(testy_agent()) as peer:
        sid = await _open(peer, tmp_path, {"session": {"notices": {}}})
        updates, _ = await _updates_until_answer(
            peer, await _prompt(peer, sid, "notice warning Disk almost full -- 3% left")
        )
        assert updates == [
            {
                "sessionUpdate": "notice",
                "severity": "warning",
                "title": "Disk almost full",
                "description": "3% left",
            }
        ]
    async with serving(testy_agent()) as peer:
        sid = await _open(peer, tmp_path, {})
        updates, _ = await _updates_until_answer(peer, await _prompt(peer, sid, "notice info Hello"))
        assert [u["sessionUpdate"] for u in updates] == ["agent_message_chunk"]
        assert _text(updates) == "notice (info): Hello\n"


async def test_compact_streams_the_summary_between_two_compaction_updates(tmp_path: Path) -> None:
    async with serving(testy_agent()) as peer:
        sid = await _open(peer, tmp_path, {"session": {"compaction": {}}})
        updates, answer = await _updates_until_answer(
            peer, await _prompt(peer, sid, "compact We fixed the parser.\ncompact Then the tests.")
        )
    assert answer["result"]["stopReason"] == "end_turn"
    assert updates[0] == {
        "sessionUpdate": "compaction_update",
        "compactionId": "compaction-1",
        "status": "in_progress",
    }
    chunks = updates[1:5]  # one per word
    assert [c["sessionUpdate"] for c in chunks] == ["compaction_summary_chunk"] * 4
    assert "".join(c["content"]["text"] for c in chunks) == "We fixed the parser."
    assert updates[5] == {
        "sessionUpdate": "compaction_update",
        "compactionId": "compaction-1",
        "status": "completed",
    }
    assert updates[6]["compactionId"] == "compaction-2"  # ids are not reused in a session


async def test_compact_without_the_capability_says_so(peer: WirePeer, tmp_path: Path) -> None:
    sid = await _open(peer, tmp_path, {})
    updates, _ = await _updates_until_answer(peer, await _prompt(peer, sid, "compact anything"))
    assert "session.compaction" in _text(updates)
    assert {u["sessionUpdate"] for u in updates} == {"agent_message_chunk"}


async def test_the_boolean_option_is_offered_to_clients_that_take_booleans(tmp_path: Path) -> None:
    async with serving(testy_agent()) as peer:
        peer.request(
            "initialize",
            {"protocolVersion": 1, "clientCapabilities": {"session": {"configOptions": {"boolean": {}}}}},
        )
        await peer.response_to(1)
        new = await peer.response_to(peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        options = {o["id"]: o for o in new["result"]["configOptions"]}
        assert options["shout"] == {
            "id": "shout", "name": "Shout", "description": "testy's messages in upper case",
            "type": "boolean", "currentValue": False,
        }  # fmt: skip
        sid = new["result"]["sessionId"]
        updates, _ = await _updates_until_answer(
            peer, await _prompt(peer, sid, "option shout true\necho quiet words")
        )
        assert updates[0]["sessionUpdate"] == "config_option_update"
        assert {o["id"]: o["currentValue"] for o in updates[0]["configOptions"]} == {
            "verbosity": "normal",
            "shout": True,
        }
        assert _text(updates) == "QUIET WORDS\n"
        # session/set_config_option with a boolean value turns it off again
        answer = await peer.response_to(
            peer.request(
                "session/set_config_option",
                {"sessionId": sid, "configId": "shout", "type": "boolean", "value": False},
            )
        )
        assert {o["id"]: o["currentValue"] for o in answer["result"]["configOptions"]}["shout"] is False
    async with serving(testy_agent()) as peer:
        sid = await _open(peer, tmp_path, {})
        updates, _ = await _updates_until_answer(
            peer, await _prompt(peer, sid, "option shout true\noption verbosity brief")
        )
        assert _text(updates).startswith(
            "option: Unknown config option 'shout': testy's options are 'verbosity'"
        )
        assert [o["currentValue"] for o in updates[-1]["configOptions"]] == ["brief"]


async def test_elicit_asks_with_a_form_of_every_field_kind_and_reports_the_answer(
    peer: WirePeer, tmp_path: Path
) -> None:
    sid = await _open(peer, tmp_path, {"elicitation": {"form": {}}})
    prompt = await _prompt(peer, sid, "elicit Who are you?")
    request = await peer.message_for("elicitation/create")
    params = request["params"]
    assert (params["sessionId"], params["mode"], params["message"]) == (sid, "form", "Who are you?")
    schema = params["requestedSchema"]
    kinds = {
        name: (field["type"], sorted(k for k in field if k not in ("type", "title", "description")))
        for name, field in schema["properties"].items()
    }
    assert kinds == {
        "name": ("string", ["minLength"]),
        "email": ("string", ["format"]),
        "age": ("integer", ["maximum", "minimum"]),
        "ratio": ("number", ["maximum", "minimum"]),
        "subscribe": ("boolean", ["default"]),
        "colour": ("string", ["default", "enum"]),
        "size": ("string", ["oneOf"]),
        "tags": ("array", ["items", "maxItems"]),
    }
    assert schema["required"] == ["name"]
    peer.respond(request, {"action": "accept", "content": {"name": "Ann", "age": 41, "tags": ["rust"]}})
    updates, answer = await _updates_until_answer(peer, prompt)
    assert _text(updates) == 'elicitation: accept {"age":41,"name":"Ann","tags":["rust"]}\n'
    assert answer["result"]["stopReason"] == "end_turn"

    prompt = await _prompt(peer, sid, "elicit")
    peer.respond(await peer.message_for("elicitation/create"), {"action": "decline"})
    updates, _ = await _updates_until_answer(peer, prompt)
    assert _text(updates) == "elicitation: decline\n"


async def test_elicit_url_completes_after_an_accept_only(peer: WirePeer, tmp_path: Path) -> None:
    sid = await _open(peer, tmp_path, {"elicitation": {"url": {}}})
    prompt = await _prompt(peer, sid, "elicit-url https://example.com/login Log in, please")
    request = await peer.message_for("elicitation/create")
    assert {k: request["params"][k] for k in ("mode", "url", "elicitationId", "message")} == {
        "mode": "url", "url": "https://example.com/login", "elicitationId": "elicitation-1",
        "message": "Log in, please",
    }  # fmt: skip
    peer.respond(request, {"action": "accept"})
    seen: list[Any] = []
    await peer.response_to(prompt, seen)
    complete = [f for f in seen if f.get("method") == "elicitation/complete"]
    assert complete == [
        {"jsonrpc": "2.0", "method": "elicitation/complete", "params": {"elicitationId": "elicitation-1"}}
    ]

    prompt = await _prompt(peer, sid, "elicit-url https://example.com/x")
    peer.respond(await peer.message_for("elicitation/create"), {"action": "cancel"})
    seen = []
    await peer.response_to(prompt, seen)
    assert not [f for f in seen if f.get("method") == "elicitation/complete"]
    assert "elicitation: cancel\n" in _text(
        [f["params"]["update"] for f in seen if f.get("method") == "session/update"]
    )


async def test_elicit_without_the_capability_sends_no_request(peer: WirePeer, tmp_path: Path) -> None:
    sid = await _open(peer, tmp_path, {"elicitation": {"url": {}}})
    updates, _ = await _updates_until_answer(peer, await _prompt(peer, sid, "elicit"))
    assert "elicitation.form" in _text(updates)


async def test_timeout_kills_the_command_then_reads_and_releases(peer: WirePeer, tmp_path: Path) -> None:
    sid = await _open(peer, tmp_path, FILES_AND_TERMINAL)
    prompt = await _prompt(peer, sid, "timeout 0.2 sleep 60")
    seen: list[Any] = []
    create = await peer.message_for("terminal/create", seen)
    peer.respond(create, {"terminalId": "term-1"})
    await peer.message_for("terminal/wait_for_exit", seen)  # not answered: the limit passes
    kill = await peer.message_for("terminal/kill", seen)
    assert kill["params"] == {"sessionId": sid, "terminalId": "term-1"}
    peer.respond(kill, {})
    wait = await peer.message_for("terminal/wait_for_exit", seen)
    peer.respond(wait, {"exitCode": None, "signal": "SIGKILL"})
    output = await peer.message_for("terminal/output", seen)
    peer.respond(output, {"output": "", "truncated": False})
    release = await peer.message_for("terminal/release", seen)
    peer.respond(release, {})
    rest, _ = await _updates_until_answer(peer, prompt)
    updates = [f["params"]["update"] for f in seen if f.get("method") == "session/update"] + rest
    assert _text(updates) == "killed after 0.2 s\nsignal SIGKILL\n"
    assert updates[-1] == {"sessionUpdate": "tool_call_update", "toolCallId": "tool-1", "status": "failed"}


async def test_the_terminal_method_is_offered_to_clients_that_can_run_it(tmp_path: Path) -> None:
    login = tmp_path / "login.json"
    async with serving(testy_agent(TestyOptions(terminal_auth=str(login)))) as peer:
        peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {"auth": {"terminal": True}}})
        answer = await peer.response_to(1)
        assert answer["result"]["authMethods"] == [
            {
                "type": "terminal", "id": TERMINAL_AUTH_METHOD_ID, "name": "Log in to testy in a terminal",
                "description": "testy asks for your name in the terminal (an empty answer fails)",
                "args": ["--login"], "env": {"ACPIO_TESTY_LOGIN": "1"},
            }
        ]  # fmt: skip
        assert answer["result"]["agentCapabilities"]["auth"] == {"logout": {}}
        refused = await peer.response_to(
            peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        )
        assert refused["error"]["code"] == -32000
        assert refused["error"]["data"] == {"authMethods": [TERMINAL_AUTH_METHOD_ID]}
        login.write_text('{"user": "Ann"}')
        created = await peer.response_to(
            peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        )
        assert created["result"]["sessionId"] == "testy-1"
        await peer.response_to(peer.request("logout", {}))
        assert not login.exists()
        again = await peer.response_to(peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []}))
        assert again["error"]["code"] == -32000
    async with serving(testy_agent(TestyOptions(terminal_auth=str(login)))) as peer:
        peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert (await peer.response_to(1))["result"]["authMethods"] == []


@pytest.mark.parametrize(
    ("env", "answer", "status", "says"),
    [
        ({"ACPIO_TESTY_LOGIN": "1"}, "Ann\n", 0, "logged in as Ann"),
        ({"ACPIO_TESTY_LOGIN": "1"}, "\n", 1, "not logged in"),
        ({}, "Ann\n", 2, "did not apply the auth method's env"),
    ],
)
def test_the_terminal_login(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: dict[str, str], answer: str, status: int, says: str
) -> None:
    login = tmp_path / "login.json"
    monkeypatch.delenv("ACPIO_TESTY_LOGIN", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    screen = io.StringIO()
    assert terminal_login(login, stdin=io.StringIO(answer), stdout=screen) == status
    assert says in screen.getvalue()
    assert logged_in(login) == ("Ann" if status == 0 else None)


def test_acpio_testy_login_is_the_terminal_login(tmp_path: Path) -> None:
    login = tmp_path / "login.json"
    environment = {k: v for k, v in os.environ.items() if k != "ACPIO_TESTY_LOGIN"} | {
        "ACPIO_TESTY_LOGIN": "1"
    }
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "testy", "--terminal-auth", str(login), "--login"],
        input="Ann\n", capture_output=True, text=True, env=environment, timeout=30, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "logged in as Ann" in done.stdout
    assert logged_in(login) == "Ann"
