"""``acpio testy`` in a real subprocess, driven by an acpio client: every command and session method,
checked on the wire.

One testy process serves most tests (each test opens its own sessions); the capability flags,
``--auth`` and a client without file or terminal support each get a process of their own.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from acpio.agents.testy import TestyOptions, testy_agent
from acpio.schema import (
    AuthenticateRequest,
    CancelNotification,
    ClientCapabilities,
    CloseSessionRequest,
    DeleteSessionRequest,
    ImageContent,
    ListSessionsRequest,
    LoadSessionRequest,
    LogoutRequest,
    NewSessionRequest,
    PromptRequest,
    ResourceLink,
    ResumeSessionRequest,
    SetSessionConfigOptionRequest,
    SetSessionModeRequest,
    TextContent,
)
from acpio.testing import serving

from ._testy_support import TIMEOUT, Testy, start_testy

pytestmark = pytest.mark.asyncio(loop_scope="module")

ALL_OFF = [
    "--no-load-session",
    "--no-session-list",
    "--no-session-resume",
    "--no-session-close",
    "--no-session-delete",
    "--no-image",
    "--no-audio",
    "--no-embedded-context",
    "--no-mcp-http",
]


@pytest.fixture(scope="module")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("testy").resolve()


@pytest_asyncio.fixture(loop_scope="module", scope="module")
async def shared(shared_root: Path) -> AsyncIterator[Testy]:
    async with start_testy(shared_root) as testy:
        yield testy


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A directory of this test's own, for a testy process of its own."""
    return tmp_path.resolve()


@pytest.fixture
def t(shared: Testy) -> Testy:
    shared.client.reset()
    return shared


@pytest.fixture
def project(t: Testy, request: pytest.FixtureRequest) -> Path:
    """A directory of this test's own under the client's root, used as a session cwd."""
    path = t.client.root / re.sub(r"[^\w.-]+", "-", request.node.name)
    path.mkdir()
    return path


def kinds(updates: list[dict[str, Any]]) -> list[str]:
    return [u["sessionUpdate"] for u in updates]


def chunks(updates: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [
        (u["sessionUpdate"], u["content"]["text"])
        for u in updates
        if "content" in u and "text" in u["content"]
    ]


def answer_to(t: Testy, request_id: Any, since: int = 0) -> dict[str, Any]:
    answers = [m for m in t.wire.received(since) if "method" not in m and m.get("id") == request_id]
    assert len(answers) == 1, answers
    return answers[0]


# --- initialize -----------------------------------------------------------------------------------


async def test_initialize_advertises_every_capability_by_default(t: Testy) -> None:
    init = next(m for m in t.wire.received() if "result" in m and "protocolVersion" in m["result"])
    assert init["result"]["protocolVersion"] == 1
    assert init["result"]["agentCapabilities"] == {
        "loadSession": True,
        "promptCapabilities": {"image": True, "audio": True, "embeddedContext": True},
        "mcpCapabilities": {"http": True, "sse": False},
        "sessionCapabilities": {"list": {}, "delete": {}, "resume": {}, "close": {}},
        # its sessions are in memory: acpio prompt offers no --session hint
        "_meta": {"acpio": {"sessionsEndWithProcess": True}},
    }
    assert init["result"]["authMethods"] == []
    assert init["result"]["agentInfo"]["name"] == "acpio-testy"


# --- echo mode and messages -----------------------------------------------------------------------


async def test_a_prompt_that_is_not_a_script_is_echoed_one_chunk_per_word(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "Hello,  agent!\nHow are you?")
    assert reason == "end_turn"
    assert chunks(t.wire.updates(mark)) == [
        ("agent_message_chunk", "Hello,  "),
        ("agent_message_chunk", "agent!\n"),
        ("agent_message_chunk", "How "),
        ("agent_message_chunk", "are "),
        ("agent_message_chunk", "you?"),
    ]


async def test_the_prompt_text_is_its_text_blocks_joined_with_newlines(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    mark = t.wire.mark()
    prompt = [
        TextContent(text="echo one"),
        ResourceLink(name="spec", uri="file:///spec.md"),
        TextContent(text="echo two"),
    ]
    response = await t.request(PromptRequest(session_id=sid, prompt=prompt))
    assert response.stop_reason == "end_turn"
    assert t.wire.text(mark) == "one\ntwo\n"


async def test_echo_stream_and_think_send_their_chunks_in_order(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "echo hello  world\nstream 3 ab\nthink pondering it\nstream 2")
    assert reason == "end_turn"
    assert chunks(t.wire.updates(mark)) == [
        ("agent_message_chunk", "hello  "),
        ("agent_message_chunk", "world"),
        ("agent_message_chunk", "\n"),
        ("agent_message_chunk", "ab"),
        ("agent_message_chunk", "ab"),
        ("agent_message_chunk", "ab"),
        ("agent_thought_chunk", "pondering it"),
        ("agent_message_chunk", "."),
        ("agent_message_chunk", "."),
    ]


async def test_a_long_stream_arrives_whole(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "stream 2000 x")
    assert reason == "end_turn"
    assert t.wire.text(mark) == "x" * 2000


async def test_a_script_with_bad_lines_runs_nothing_and_says_what_is_wrong(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "echo first\nprogress x\nfail abc\nsleep -1\nbogus words")
    assert reason == "end_turn"
    updates = t.wire.updates(mark)
    assert len(updates) == 1
    text = updates[0]["content"]["text"]
    assert text.startswith("testy: this script has errors, so nothing was run:\n")
    assert "line 2: `progress x`: progress N must be a whole number" in text
    assert "line 3: `fail abc`: fail CODE must be an integer" in text
    assert "line 4: `sleep -1`: sleep SECONDS must be a number, 0 or more" in text
    assert "line 5: `bogus words`: unknown command 'bogus'" in text
    assert "first" not in text


# --- plans and tool calls -------------------------------------------------------------------------


async def test_plan_then_progress_resend_the_whole_plan_with_statuses(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "plan read it; write it ;test it\nprogress 1\nprogress 3")
    assert reason == "end_turn"
    plans = t.wire.updates(mark)
    assert kinds(plans) == ["plan", "plan", "plan"]
    assert [[e["content"] for e in p["entries"]] for p in plans] == [["read it", "write it", "test it"]] * 3
    assert {e["priority"] for p in plans for e in p["entries"]} == {"medium"}
    assert [[e["status"] for e in p["entries"]] for p in plans] == [
        ["pending", "pending", "pending"],
        ["completed", "in_progress", "pending"],
        ["completed", "completed", "completed"],
    ]


async def test_progress_without_a_plan_says_so_and_goes_on(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "progress 1\necho after")
    assert reason == "end_turn"
    assert t.wire.text(mark) == (
        "progress: there is no plan in this session yet; send `plan STEP; STEP; ...` first\nafter\n"
    )


async def test_tool_goes_pending_in_progress_completed(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    _, mark = await t.prompt(sid, "tool Search the web\ntool Again")
    updates = t.wire.updates(mark)
    assert updates[:3] == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "tool-1",
            "title": "Search the web",
            "kind": "other",
            "status": "pending",
        },
        {"sessionUpdate": "tool_call_update", "toolCallId": "tool-1", "status": "in_progress"},
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "tool-1",
            "status": "completed",
            "content": [{"type": "content", "content": {"type": "text", "text": "Search the web: done"}}],
        },
    ]
    assert updates[3]["toolCallId"] == "tool-2"  # fresh ids within the session


# --- files ----------------------------------------------------------------------------------------


async def test_read_asks_the_client_for_the_absolute_path_and_shows_the_text(t: Testy, project: Path) -> None:
    (project / "sub").mkdir()
    (project / "sub" / "notes.txt").write_text("line 1\nline 2\n")
    sid = await t.new_session(project)
    _, mark = await t.prompt(sid, "read sub/../sub/notes.txt")
    path = str(project / "sub" / "notes.txt")
    [request] = t.wire.requests(mark)
    assert request["method"] == "fs/read_text_file"
    assert request["params"] == {"sessionId": sid, "path": path}
    call, done = t.wire.updates(mark)
    assert call == {
        "sessionUpdate": "tool_call",
        "toolCallId": "tool-1",
        "title": "Read sub/../sub/notes.txt",
        "kind": "read",
        "status": "in_progress",
        "locations": [{"path": path}],
        "rawInput": {"path": path},
    }
    assert done["status"] == "completed"
    assert done["content"] == [{"type": "content", "content": {"type": "text", "text": "line 1\nline 2\n"}}]


async def test_a_refused_read_fails_the_tool_call_and_the_script_goes_on(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "read /etc/hostname\nread missing.txt\necho after")
    assert reason == "end_turn"
    failed = [u for u in t.wire.updates(mark) if u.get("status") == "failed"]
    assert [f["content"][0]["content"]["text"] for f in failed] == [
        f"/etc/hostname is outside the allowed directory {t.client.root}",
        f"{project / 'missing.txt'}: no such file",
    ]
    assert t.wire.text(mark) == "after\n"


async def test_write_shows_a_diff_against_the_old_text(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    _, mark = await t.prompt(sid, r"write new.txt hello\nworld")
    path = str(project / "new.txt")
    assert (project / "new.txt").read_text() == "hello\nworld"
    assert [(r["method"], r["params"]) for r in t.wire.requests(mark)] == [
        ("fs/read_text_file", {"sessionId": sid, "path": path}),
        ("fs/write_text_file", {"sessionId": sid, "path": path, "content": "hello\nworld"}),
    ]
    call, done = t.wire.updates(mark)
    assert (call["kind"], call["locations"], call["title"]) == ("edit", [{"path": path}], "Write new.txt")
    assert done["status"] == "completed"
    assert done["content"] == [{"type": "diff", "path": path, "oldText": None, "newText": "hello\nworld"}]

    _, mark = await t.prompt(sid, "write new.txt v2")
    assert t.wire.updates(mark)[-1]["content"] == [
        {"type": "diff", "path": path, "oldText": "hello\nworld", "newText": "v2"}
    ]
    assert (project / "new.txt").read_text() == "v2"


async def test_a_refused_write_fails_the_tool_call_and_the_script_goes_on(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "write /etc/testy.txt nope\necho after")
    assert reason == "end_turn"
    done = t.wire.updates(mark)[1]
    assert done["status"] == "failed"
    assert done["content"][0]["content"]["text"] == (
        f"/etc/testy.txt is outside the allowed directory {t.client.root}"
    )
    assert t.wire.text(mark) == "after\n"


# --- permission -----------------------------------------------------------------------------------


@pytest.mark.parametrize("option", ["allow-once", "allow-always"])
async def test_an_allowed_permission_goes_on(t: Testy, project: Path, option: str) -> None:
    t.client.permission = option
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "permission Deploy to prod?\necho after")
    assert reason == "end_turn"
    [request] = t.wire.requests(mark)
    assert request["method"] == "session/request_permission"
    assert request["params"] == {
        "sessionId": sid,
        "toolCall": {"toolCallId": "tool-1", "title": "Deploy to prod?", "kind": "edit", "status": "pending"},
        "options": [
            {"optionId": "allow-once", "name": "Allow once", "kind": "allow_once"},
            {"optionId": "allow-always", "name": "Allow always", "kind": "allow_always"},
            {"optionId": "reject-once", "name": "Reject", "kind": "reject_once"},
        ],
    }
    assert t.wire.updates(mark)[0] == {
        "sessionUpdate": "tool_call_update",
        "toolCallId": "tool-1",
        "status": "completed",
    }
    assert t.wire.text(mark) == f"permission: {option}\nafter\n"


@pytest.mark.parametrize("answer", ["reject-once", "cancelled"])
async def test_a_refused_permission_stops_the_script(t: Testy, project: Path, answer: str) -> None:
    t.client.permission = answer
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "permission\necho never")
    assert reason == "end_turn"
    assert t.wire.requests(mark)[0]["params"]["toolCall"]["title"] == "testy asks for permission"
    assert t.wire.updates(mark)[0]["status"] == "failed"
    assert t.wire.text(mark) == f"permission: {answer}\nPermission denied: stopping.\n"


# --- terminals ------------------------------------------------------------------------------------


async def test_run_creates_waits_reads_and_releases_a_terminal(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    reason, mark = await t.prompt(sid, "run ls -l 'a b'")
    assert reason == "end_turn"
    requests = t.wire.requests(mark)
    assert [r["method"] for r in requests] == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/output",
        "terminal/release",
    ]
    assert requests[0]["params"] == {
        "sessionId": sid,
        "command": "ls",
        "args": ["-l", "a b"],
        "cwd": str(project),
    }
    assert all(r["params"] == {"sessionId": sid, "terminalId": "term-1"} for r in requests[1:])
    call, content, message, done = t.wire.updates(mark)
    assert (call["kind"], call["title"], call["status"]) == ("execute", "ls -l 'a b'", "in_progress")
    assert content["content"] == [{"type": "terminal", "terminalId": "term-1"}]
    assert message["content"]["text"] == "ls -l a b\nexit status 0\n"
    assert done == {"sessionUpdate": "tool_call_update", "toolCallId": "tool-1", "status": "completed"}


@pytest.mark.parametrize(("command", "report"), [("false", "exit status 1"), ("die", "signal SIGKILL")])
async def test_a_command_that_fails_fails_its_tool_call(
    t: Testy, project: Path, command: str, report: str
) -> None:
    sid = await t.new_session(project)
    _, mark = await t.prompt(sid, f"run {command}\necho after")
    assert t.wire.text(mark) == f"{command}\n{report}\nafter\n"
    assert t.wire.updates(mark)[3]["status"] == "failed"


# --- notify, fail, stop ---------------------------------------------------------------------------


async def test_notify_sends_the_extension_notification(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    _, mark = await t.prompt(sid, 'notify _acpio/test {"x": [1, 2]}\nnotify _ping')
    notes = [m for m in t.wire.received(mark) if m.get("method", "").startswith("_")]
    assert notes == [
        {"jsonrpc": "2.0", "method": "_acpio/test", "params": {"x": [1, 2]}},
        {"jsonrpc": "2.0", "method": "_ping", "params": {}},
    ]


async def test_fail_answers_the_prompt_with_that_error(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    mark = t.wire.mark()
    error = await t.error(
        PromptRequest(session_id=sid, prompt=[TextContent(text="echo before\nfail -32042 Custom")])
    )
    assert (error.code, error.message) == (-32042, "Custom")
    assert t.wire.text(mark) == "before\n"
    error = await t.error(PromptRequest(session_id=sid, prompt=[TextContent(text="fail 7")]))
    assert (error.code, error.message) == (7, "testy failure")


@pytest.mark.parametrize("reason", ["end_turn", "max_tokens", "max_turn_requests", "refusal"])
async def test_stop_ends_the_turn_with_that_reason(t: Testy, project: Path, reason: str) -> None:
    sid = await t.new_session(project)
    stop_reason, mark = await t.prompt(sid, f"echo before\nstop {reason}\necho never")
    assert stop_reason == reason
    assert t.wire.text(mark) == "before\n"


# --- session updates ------------------------------------------------------------------------------


async def test_mode_and_title_change_the_session(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    _, mark = await t.prompt(sid, "mode plan\ntitle Fixing the bug")
    assert t.wire.updates(mark) == [
        {"sessionUpdate": "current_mode_update", "currentModeId": "plan"},
        {"sessionUpdate": "session_info_update", "title": "Fixing the bug"},
    ]
    listed = await t.request(ListSessionsRequest(cwd=str(project)))
    assert [(s.session_id, s.title) for s in listed.sessions] == [(sid, "Fixing the bug")]
    loaded = await t.request(LoadSessionRequest(session_id=sid, cwd=str(project), mcp_servers=[]))
    assert loaded.modes.current_mode_id == "plan"


async def test_commands_usage_and_help(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    _, mark = await t.prompt(sid, "echo one two three\ncommands\nusage\nhelp")
    message, advertised, usage, help_message = t.wire.updates(mark)[3:]
    assert message["content"]["text"] == "\n"
    commands = {c["name"]: c for c in advertised["availableCommands"]}
    assert list(commands) == [
        "echo", "stream", "think", "plan", "progress", "tool", "read", "write", "permission",
        "run", "timeout", "notify", "mcp", "sleep", "hang", "exit", "fail", "stop", "mode", "title",
        "option", "notice", "compact", "elicit", "elicit-url", "commands", "usage", "help",
    ]  # fmt: skip
    assert commands["read"]["input"] == {"hint": "PATH"}
    assert "input" not in commands["help"]
    # the words of the history so far: the prompt (7) and "one two three" (3)
    assert usage == {"sessionUpdate": "usage_update", "used": 10, "size": 200_000}
    text = help_message["content"]["text"]
    for line in ("echo TEXT", "read PATH", "run COMMAND [ARGS...]", "permission [TITLE]", "stop REASON"):
        assert f"  {line}" in text


async def test_verbosity_changes_what_testy_says(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    answer = await t.request(
        SetSessionConfigOptionRequest(session_id=sid, config_id="verbosity", value="verbose")
    )
    assert [(o.id, o.current_value) for o in answer.config_options] == [("verbosity", "verbose")]
    _, mark = await t.prompt(sid, "echo hi")
    assert chunks(t.wire.updates(mark)) == [
        ("agent_thought_chunk", "running `echo hi`\n"),
        ("agent_message_chunk", "hi"),
        ("agent_message_chunk", "\n"),
    ]
    await t.request(SetSessionConfigOptionRequest(session_id=sid, config_id="verbosity", value="brief"))
    _, mark = await t.prompt(sid, "help")
    assert t.wire.text(mark).startswith("testy commands: echo, stream, think,")


# --- cancellation ---------------------------------------------------------------------------------


async def _started(t: Testy, mark: int, text: str) -> None:
    await t.wire.wait_for(
        lambda m: (
            m.get("method") == "session/update"
            and m["params"]["update"].get("content", {}).get("text") == text
        ),
        mark,
    )


async def test_cancel_during_sleep_ends_the_turn_cancelled_at_once(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    mark = t.wire.mark()
    sent = t.send_prompt(sid, "echo sleeping\nsleep 60\necho never")
    await _started(t, mark, "sleeping")
    began = time.monotonic()
    t.cx.send_notification(CancelNotification(session_id=sid))
    async with asyncio.timeout(TIMEOUT):
        response = await sent
    assert response.stop_reason == "cancelled"
    assert time.monotonic() - began < 10  # the sleep was 60 s
    assert "never" not in t.wire.text(mark)


async def test_hang_ignores_cancel_until_its_time_is_up_then_ends_cancelled(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    mark = t.wire.mark()
    sent = t.send_prompt(sid, "echo hanging\nhang 0.6\necho never")
    await _started(t, mark, "hanging")
    began = time.monotonic()
    t.cx.send_notification(CancelNotification(session_id=sid))
    async with asyncio.timeout(TIMEOUT):
        response = await sent
    assert response.stop_reason == "cancelled"
    assert time.monotonic() - began >= 0.5  # deaf to the cancel while it hung
    assert "never" not in t.wire.text(mark)


async def test_cancel_abandons_the_client_request_in_flight(t: Testy, project: Path) -> None:
    (project / "notes.txt").write_text("notes")
    t.client.hold.add("fs/read_text_file")
    sid = await t.new_session(project)
    mark = t.wire.mark()
    sent = t.send_prompt(sid, "read notes.txt\necho never")
    read = await t.wire.wait_for(lambda m: m.get("method") == "fs/read_text_file", mark)
    t.cx.send_notification(CancelNotification(session_id=sid))
    async with asyncio.timeout(TIMEOUT):
        response = await sent
    assert response.stop_reason == "cancelled"
    # The cancel may follow the turn's answer on the wire (they are separate writes).
    await t.wire.wait_for(lambda m: m.get("method") == "$/cancel_request", mark)
    cancels = [m for m in t.wire.received(mark) if m.get("method") == "$/cancel_request"]
    assert cancels == [{"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": read["id"]}}]
    # the late answer is ignored, and the session goes on
    t.client.held.pop("fs/read_text_file").respond({"content": "late"})
    reason, mark = await t.prompt(sid, "echo still here")
    assert (reason, t.wire.text(mark)) == ("end_turn", "still here\n")


async def test_cancel_while_permission_is_pending(t: Testy, project: Path) -> None:
    t.client.hold.add("session/request_permission")
    sid = await t.new_session(project)
    mark = t.wire.mark()
    sent = t.send_prompt(sid, "permission\necho never")
    await t.wire.wait_for(lambda m: m.get("method") == "session/request_permission", mark)
    t.cx.send_notification(CancelNotification(session_id=sid))
    async with asyncio.timeout(TIMEOUT):
        response = await sent
    assert response.stop_reason == "cancelled"
    # the client answers pending permission requests `cancelled`, as the spec asks: testy ignores it
    t.client.held.pop("session/request_permission").respond({"outcome": {"outcome": "cancelled"}})
    assert "never" not in t.wire.text(mark)
    reason, _ = await t.prompt(sid, "echo ok")
    assert reason == "end_turn"


async def test_cancel_during_run_releases_the_terminal(t: Testy, project: Path) -> None:
    t.client.hold.add("terminal/wait_for_exit")
    sid = await t.new_session(project)
    mark = t.wire.mark()
    sent = t.send_prompt(sid, "run sleep 100")
    await t.wire.wait_for(lambda m: m.get("method") == "terminal/wait_for_exit", mark)
    t.cx.send_notification(CancelNotification(session_id=sid))
    async with asyncio.timeout(TIMEOUT):
        response = await sent
        assert response.stop_reason == "cancelled"
        await t.wire.wait_for(lambda m: m.get("method") == "terminal/release", mark)
    assert [r["method"] for r in t.wire.requests(mark)] == [
        "terminal/create",
        "terminal/wait_for_exit",
        "terminal/release",
    ]


async def test_cancel_request_for_the_prompt_cancels_the_turn(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    mark = t.wire.mark()
    sent = t.send_prompt(sid, "echo waiting\nsleep 60")
    await _started(t, mark, "waiting")
    sent.cancel()  # $/cancel_request for the session/prompt request itself
    async with asyncio.timeout(TIMEOUT):
        response = await sent
    assert response.stop_reason == "cancelled"


async def test_a_second_prompt_while_one_runs_is_refused(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    mark = t.wire.mark()
    first = t.send_prompt(sid, "echo busy\nsleep 60")
    await _started(t, mark, "busy")
    error = await t.error(PromptRequest(session_id=sid, prompt=[TextContent(text="echo hi")]))
    assert error.code == -32600
    assert "already running a prompt turn" in error.message
    t.cx.send_notification(CancelNotification(session_id=sid))
    async with asyncio.timeout(TIMEOUT):
        assert (await first).stop_reason == "cancelled"


# --- sessions -------------------------------------------------------------------------------------


async def test_new_sessions_get_consecutive_ids_modes_and_a_verbosity_option(t: Testy, project: Path) -> None:
    first = await t.request(NewSessionRequest(cwd=str(project), mcp_servers=[]))
    second = await t.request(NewSessionRequest(cwd=str(project), mcp_servers=[]))
    number = int(first.session_id.removeprefix("testy-"))
    assert second.session_id == f"testy-{number + 1}"
    assert first.modes.current_mode_id == "chat"
    assert [m.id for m in first.modes.available_modes] == ["chat", "plan"]
    [option] = first.config_options
    assert (option.id, option.type, option.current_value) == ("verbosity", "select", "normal")
    assert [o.value for o in option.options] == ["brief", "normal", "verbose"]


async def test_load_replays_the_history_before_answering(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    await t.prompt(sid, "Hello there")
    await t.prompt(sid, "echo done\nthink quietly\nstream 2")
    mark = t.wire.mark()
    loaded = await t.request(LoadSessionRequest(session_id=sid, cwd=str(project), mcp_servers=[]))
    assert loaded.modes.current_mode_id == "chat"
    received = t.wire.received(mark)
    assert "result" in received[-1]  # the answer comes after the replay
    assert chunks(t.wire.updates(mark)) == [
        ("user_message_chunk", "Hello there"),
        ("agent_message_chunk", "Hello there"),
        ("user_message_chunk", "echo done\nthink quietly\nstream 2"),
        ("agent_message_chunk", "done\n.."),
    ]


async def test_resume_answers_without_replaying(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    await t.prompt(sid, "echo hi")
    mark = t.wire.mark()
    resumed = await t.request(ResumeSessionRequest(session_id=sid, cwd=str(project)))
    assert resumed.config_options[0].current_value == "normal"
    assert t.wire.updates(mark) == []


async def test_list_filters_by_cwd_and_refuses_cursors(t: Testy, project: Path) -> None:
    other = project / "other"
    other.mkdir()
    here = [await t.new_session(project), await t.new_session(project)]
    there = await t.new_session(other)
    listed = await t.request(ListSessionsRequest(cwd=str(project)))
    # newest first, as the session store lists them
    assert [(s.session_id, s.cwd) for s in listed.sessions] == [(sid, str(project)) for sid in here[::-1]]
    everything = await t.request(ListSessionsRequest())
    assert {*here, there} <= {s.session_id for s in everything.sessions}
    error = await t.error(ListSessionsRequest(cursor="page-2"))
    assert error.code == -32602
    assert "never gives out a cursor" in error.message


async def test_close_keeps_the_session_listed_but_refuses_prompts_until_resumed(
    t: Testy, project: Path
) -> None:
    sid = await t.new_session(project)
    assert (await t.request(CloseSessionRequest(session_id=sid))).to_wire() == {}
    error = await t.error(PromptRequest(session_id=sid, prompt=[TextContent(text="echo hi")]))
    assert error.code == -32602
    assert f"Session '{sid}' is closed" in error.message
    error = await t.error(SetSessionModeRequest(session_id=sid, mode_id="plan"))
    assert error.code == -32602
    assert [s.session_id for s in (await t.request(ListSessionsRequest(cwd=str(project)))).sessions] == [sid]
    await t.request(ResumeSessionRequest(session_id=sid, cwd=str(project)))
    assert (await t.prompt(sid, "echo hi"))[0] == "end_turn"


@pytest.mark.parametrize("method", ["session/close", "session/delete"])
async def test_close_and_delete_cancel_the_running_turn_and_answer_after_it(
    t: Testy, project: Path, method: str
) -> None:
    sid = await t.new_session(project)
    mark = t.wire.mark()
    prompt = t.send_prompt(sid, "echo working\nsleep 60")
    await _started(t, mark, "working")
    closing = t.cx.send_request(method, {"sessionId": sid})
    async with asyncio.timeout(TIMEOUT):
        assert (await prompt).stop_reason == "cancelled"
        assert await closing == {}
    answers = [m["id"] for m in t.wire.received(mark) if "method" not in m]
    assert answers == [prompt.id, closing.id]


async def test_delete_forgets_the_session(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    await t.request(DeleteSessionRequest(session_id=sid))
    assert (await t.request(ListSessionsRequest(cwd=str(project)))).sessions == []
    error = await t.error(LoadSessionRequest(session_id=sid, cwd=str(project), mcp_servers=[]))
    assert error.code == -32602
    # deleting what does not exist succeeds, as the spec asks
    assert (await t.request(DeleteSessionRequest(session_id=sid))).to_wire() == {}


async def test_set_mode_and_config_option_check_their_values(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    assert (await t.request(SetSessionModeRequest(session_id=sid, mode_id="plan"))).to_wire() == {}
    error = await t.error(SetSessionModeRequest(session_id=sid, mode_id="yolo"))
    assert (error.code, error.message) == (-32602, "Unknown mode 'yolo': testy's modes are chat, plan")
    error = await t.error(SetSessionConfigOptionRequest(session_id=sid, config_id="speed", value="fast"))
    assert (error.code, error.message) == (
        -32602,
        "Unknown config option 'speed': testy's options are 'verbosity'",
    )
    error = await t.error(SetSessionConfigOptionRequest(session_id=sid, config_id="verbosity", value="loud"))
    assert (error.code, error.message) == (
        -32602,
        "verbosity takes one of brief, normal, verbose, not 'loud'",
    )


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("session/prompt", {"prompt": [{"type": "text", "text": "echo hi"}]}),
        ("session/load", {"cwd": "/tmp", "mcpServers": []}),
        ("session/resume", {"cwd": "/tmp"}),
        ("session/close", {}),
        ("session/set_mode", {"modeId": "plan"}),
        ("session/set_config_option", {"configId": "verbosity", "value": "brief"}),
    ],
)
async def test_an_unknown_session_id_gets_invalid_params(
    t: Testy, method: str, params: dict[str, Any]
) -> None:
    t.cx.send_notification(CancelNotification(session_id="nope"))  # ignored: nothing to cancel
    error = await t.error(method, {"sessionId": "nope", **params})
    assert error.code == -32602
    assert error.message.startswith("Unknown session 'nope': ")
    assert "session/new" in error.message


async def test_session_setup_checks_cwd_and_mcp_servers(t: Testy, project: Path) -> None:
    error = await t.error("session/new", {"cwd": "relative/dir", "mcpServers": []})
    assert (error.code, error.message) == (
        -32602,
        "session/new: cwd must be an absolute path, not 'relative/dir'",
    )
    sse = {"type": "sse", "name": "events", "url": "http://localhost:1/sse", "headers": []}
    error = await t.error("session/new", {"cwd": str(project), "mcpServers": [sse]})
    assert error.code == -32602
    assert "does not accept sse MCP servers" in error.message
    http = {"type": "http", "name": "web", "url": "http://localhost:1/mcp", "headers": []}
    stdio = {"name": "local", "command": "/bin/true", "args": [], "env": []}
    result = await t.request("session/new", {"cwd": str(project), "mcpServers": [http, stdio]})
    assert result["sessionId"].startswith("testy-")


async def test_without_auth_there_is_nothing_to_authenticate_with(t: Testy) -> None:
    error = await t.error(AuthenticateRequest(method_id="testy-login"))
    assert (error.code, error.message) == (
        -32602,
        "Unknown auth method 'testy-login': it offers none (see authMethods in the initialize answer)",
    )
    assert (await t.error("logout", {})).code == -32601


# --- processes of their own: flags, auth, a client without files or terminals -----------------------


async def test_the_flags_turn_capabilities_off(root: Path) -> None:
    async with start_testy(root, *ALL_OFF) as testy:
        assert testy.initialized is not None
        assert testy.initialized.to_wire()["agentCapabilities"] == {
            "loadSession": False,
            "promptCapabilities": {"image": False, "audio": False, "embeddedContext": False},
            "mcpCapabilities": {"http": False, "sse": False},
            "sessionCapabilities": {},
            "_meta": {"acpio": {"sessionsEndWithProcess": True}},
        }
        sid = await testy.new_session()
        for method, params in [
            ("session/load", {"sessionId": sid, "cwd": str(root), "mcpServers": []}),
            ("session/list", {}),
            ("session/resume", {"sessionId": sid, "cwd": str(root)}),
            ("session/close", {"sessionId": sid}),
            ("session/delete", {"sessionId": sid}),
        ]:
            assert (await testy.error(method, params)).code == -32601, method
        image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
        audio = {"type": "audio", "data": "aGk=", "mimeType": "audio/wav"}
        resource = {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "a"}}
        for block, capability in [(image, "image"), (audio, "audio"), (resource, "embeddedContext")]:
            error = await testy.error("session/prompt", {"sessionId": sid, "prompt": [block]})
            assert error.code == -32602
            assert f"does not advertise promptCapabilities.{capability}" in error.message
        http = {"type": "http", "name": "web", "url": "http://localhost:1/mcp", "headers": []}
        error = await testy.error("session/new", {"cwd": str(root), "mcpServers": [http]})
        assert "does not accept http MCP servers" in error.message
        # what is still on works
        assert (await testy.prompt(sid, "echo fine"))[0] == "end_turn"


async def test_with_default_capabilities_images_are_accepted(t: Testy, project: Path) -> None:
    sid = await t.new_session(project)
    prompt = [ImageContent(data="aGk=", mime_type="image/png"), TextContent(text="echo seen")]
    response = await t.request(PromptRequest(session_id=sid, prompt=prompt))
    assert response.stop_reason == "end_turn"


async def test_auth_requires_authenticate_before_sessions(root: Path) -> None:
    async with start_testy(root, "--auth") as testy:
        assert testy.initialized is not None
        init = testy.initialized.to_wire()
        assert init["authMethods"] == [
            {
                "id": "testy-login",
                "name": "Log in to testy",
                "description": "testy's test login: authenticate with this method always succeeds",
            }
        ]
        assert init["agentCapabilities"]["auth"] == {"logout": {}}
        error = await testy.error(NewSessionRequest(cwd=str(root), mcp_servers=[]))
        assert error.code == -32000
        assert "call authenticate with methodId 'testy-login' before session/new" in error.message
        error = await testy.error(AuthenticateRequest(method_id="password"))
        assert error.code == -32602
        assert (await testy.request(AuthenticateRequest(method_id="testy-login"))).to_wire() == {}
        sid = await testy.new_session()
        assert (await testy.request(LogoutRequest())).to_wire() == {}
        assert (await testy.error(NewSessionRequest(cwd=str(root), mcp_servers=[]))).code == -32000
        assert (await testy.prompt(sid, "echo still mine"))[0] == "end_turn"  # existing sessions go on


async def test_without_client_capabilities_testy_sends_no_fs_or_terminal_request(root: Path) -> None:
    async with start_testy(root, capabilities=ClientCapabilities()) as testy:
        sid = await testy.new_session()
        reason, mark = await testy.prompt(sid, "read a.txt\nwrite b.txt x\nrun ls\necho after")
        assert reason == "end_turn"
        assert testy.wire.requests(mark) == []
        failed = [
            u["content"][0]["content"]["text"]
            for u in testy.wire.updates(mark)
            if u.get("status") == "failed"
        ]
        assert failed == [
            f"testy cannot read {root / 'a.txt'}: the client did not advertise "
            "clientCapabilities.fs.readTextFile at initialize",
            f"testy cannot write {root / 'b.txt'}: the client did not advertise "
            "clientCapabilities.fs.writeTextFile at initialize",
            "testy cannot run ls: the client did not advertise clientCapabilities.terminal at initialize",
        ]
        assert testy.wire.text(mark) == "after\n"


# --- the library form and the command line --------------------------------------------------------


async def test_testy_agent_serves_in_process() -> None:
    async with serving(testy_agent(TestyOptions(load_session=False))) as peer:
        peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}})
        assert (await peer.recv())["result"]["agentCapabilities"]["loadSession"] is False
        peer.send(
            {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}
        )
        assert (await peer.recv())["result"]["sessionId"] == "testy-1"
        prompt = {"sessionId": "testy-1", "prompt": [{"type": "text", "text": "fail -32001 nope"}]}
        peer.send({"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt})
        assert await peer.recv() == {"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "nope"}}
