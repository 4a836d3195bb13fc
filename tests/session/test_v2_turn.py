"""A v2 session from the client side: the turn ends at the idle state, upserts merge into one view."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from acpio.errors import RequestError
from acpio.jsonrpc import Connection
from acpio.roles import Client
from acpio.schema import McpServerStdio, SelectedPermissionOutcome
from acpio.session import (
    ActiveSession,
    DiffView,
    FileChange,
    McpServerList,
    PlanEntryView,
    RequestPermissionV2Message,
    SessionConnection,
    StateChanged,
    TerminalChanged,
    TerminalRef,
    TextAdded,
    ToolCallChanged,
    TurnEnded,
    build_session,
)

from ._support import TIMEOUT, EchoAgent, WirePeer, initialized, wire_connection

SESSION = "v2-session"


def update(body: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": SESSION, "update": body}}


def state(name: str, **extra: Any) -> dict[str, Any]:
    return update({"sessionUpdate": "state_update", "state": name, **extra})


def say(message_id: str, text: str, kind: str = "agent_message_chunk") -> dict[str, Any]:
    return update({"sessionUpdate": kind, "messageId": message_id, "content": {"type": "text", "text": text}})


@asynccontextmanager
async def v2_session(tmp_path: Path) -> AsyncIterator[tuple[ActiveSession, WirePeer]]:
    """A client connection negotiated to v2 with a raw agent, and a session on it."""
    async with wire_connection(Client.builder()) as (cx, peer):
        assert isinstance(cx, SessionConnection)
        answering = asyncio.ensure_future(cx.initialize())
        request = await peer.expect("initialize")
        peer.respond(
            request,
            {"protocolVersion": 2, "info": {"name": "raw", "version": "1"}, "capabilities": {"session": {}}},
        )
        async with asyncio.timeout(TIMEOUT):
            await answering
        starting = asyncio.ensure_future(build_session(cx, tmp_path).start_session())
        new = await peer.expect("session/new")
        peer.respond(new, {"sessionId": SESSION})
        async with asyncio.timeout(TIMEOUT):
            session = await starting
        assert session.protocol_version == 2
        try:
            yield session, peer
        finally:
            session.close()


async def test_a_v2_turn_read_to_string_answers_the_permission_and_ends_at_idle(tmp_path: Path) -> None:
    async with v2_session(tmp_path) as (session, peer):
        session.send_prompt("go")
        prompt = await peer.expect("session/prompt")
        assert prompt["params"] == {"sessionId": SESSION, "prompt": [{"type": "text", "text": "go"}]}
        peer.respond(prompt, {"messageId": "u1"})  # accepted: the turn is not over
        peer.send(
            update(
                {
                    "sessionUpdate": "user_message",
                    "messageId": "u1",
                    "content": [{"type": "text", "text": "go"}],
                }
            )
        )
        peer.send(state("running"))
        peer.send(say("t1", "hmm", "agent_thought_chunk"))
        peer.send(say("a1", "Hello "))
        peer.send(
            update(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "c1",
                    "title": "Edit",
                    "status": "pending",
                }
            )
        )
        peer.send(state("requires_action"))
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "session/request_permission",
                "params": {
                    "sessionId": SESSION,
                    "title": "Edit the file?",
                    "subject": {"type": "tool_call", "toolCall": {"toolCallId": "c1"}},
                    "options": [
                        {"optionId": "no", "name": "No", "kind": "reject_once"},
                        {"optionId": "yes", "name": "Yes", "kind": "allow_once"},
                    ],
                },
            }
        )
        reading = asyncio.ensure_future(session.read_to_string(permissions="allow"))
        answer = await peer.response_to(7)
        assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": "yes"}}
        peer.send(state("running"))
        peer.send(update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"}))
        peer.send(say("a1", "world"))
        assert not reading.done()
        peer.send(state("idle", stopReason="end_turn"))
        async with asyncio.timeout(TIMEOUT):
            assert await reading == "Hello world"
        assert session.stop_reason == "end_turn"
        assert session.last_response is None  # a v1 answer: there was none
        view = session.view
        assert [(m.message_id, m.role, m.text) for m in view.messages] == [
            ("u1", "user", "go"),
            ("t1", "thought", "hmm"),
            ("a1", "agent", "Hello world"),
        ]
        call = view.tool_calls["c1"]
        assert (call.title, call.status) == ("Edit", "completed")  # the title kept from the first update
        assert (view.state, view.stop_reason) == ("idle", "end_turn")


async def test_the_idle_state_before_the_acceptance_still_ends_the_turn_after_it(tmp_path: Path) -> None:
    async with v2_session(tmp_path) as (session, peer):
        session.send_prompt("quick")
        prompt = await peer.expect("session/prompt")
        peer.send(state("running"))
        peer.send(say("a", "done"))
        peer.send(state("idle", stopReason="end_turn"))
        events = []
        async with asyncio.timeout(TIMEOUT):
            for _ in range(3):
                item = await session.read_update()
                assert not isinstance(item, TurnEnded)
                events.append(item.event)
            reading = asyncio.ensure_future(session.read_update())
            await asyncio.sleep(0.05)
            assert not reading.done()  # idle was read, but the prompt is not accepted yet
            peer.respond(prompt, {"messageId": "u"})
            end = await reading
        assert events == [
            StateChanged("running"),
            TextAdded(session.view.messages[0], "done"),
            StateChanged("idle", "end_turn"),
        ]
        assert isinstance(end, TurnEnded)
        assert (end.stop_reason, end.response) == ("end_turn", None)
        assert end.accepted is not None
        assert end.accepted.message_id == "u"


async def test_terminals_diffs_plans_and_whole_messages_in_the_view(tmp_path: Path) -> None:
    path = str(tmp_path / "f.txt")
    async with v2_session(tmp_path) as (session, peer):
        session.send_prompt("work")
        peer.respond(await peer.expect("session/prompt"), {"messageId": "u"})
        frames = [
            update(
                {
                    "sessionUpdate": "terminal_update",
                    "terminalId": "t",
                    "command": "ls",
                    "cwd": str(tmp_path),
                    "output": {"data": base64.b64encode(b"caf\xc3").decode()},
                }
            ),
            update(
                {
                    "sessionUpdate": "terminal_output_chunk",
                    "terminalId": "t",
                    "data": base64.b64encode(b"\xa9\n").decode(),
                }
            ),
            update({"sessionUpdate": "terminal_update", "terminalId": "t", "exitStatus": {"exitCode": 3}}),
            update(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": "e",
                    "content": [
                        {
                            "type": "diff",
                            "changes": [{"operation": "modify", "path": path}],
                            "patch": {"format": "git_patch", "text": "@@"},
                        }
                    ],
                }
            ),
            update(
                {
                    "sessionUpdate": "tool_call_content_chunk",
                    "toolCallId": "e",
                    "content": {"type": "terminal", "terminalId": "t"},
                }
            ),
            update(
                {
                    "sessionUpdate": "plan_update",
                    "plan": {
                        "type": "items",
                        "planId": "p",
                        "entries": [{"content": "x", "priority": "high", "status": "pending"}],
                    },
                }
            ),
            say("m", "draft"),
            update(
                {
                    "sessionUpdate": "agent_message",
                    "messageId": "m",
                    "content": [{"type": "text", "text": "final"}],
                }
            ),
            state("idle", stopReason="cancelled"),
        ]
        for frame in frames:
            peer.send(frame)
        async with asyncio.timeout(TIMEOUT):
            events = [message.event async for message in session]
        view = session.view
        terminal = view.terminals["t"]
        assert (terminal.command, bytes(terminal.output), terminal.exit_code, terminal.exited) == (
            "ls",
            "café\n".encode(),
            3,
            True,
        )
        assert isinstance(events[1], TerminalChanged)
        assert events[1].appended == b"\xa9\n"  # half a character in each message: bytes are appended
        assert view.tool_calls["e"].content == [
            DiffView((FileChange("modify", path),), "@@"),
            TerminalRef("t"),
        ]
        assert isinstance(events[4], ToolCallChanged)
        assert view.plans == {"p": (PlanEntryView("x", "high", "pending"),)}
        assert events[7] == TextAdded(view.messages[0], "final", replaced=True)
        assert view.text == "final"
        assert session.stop_reason == "cancelled"


async def test_a_v2_permission_request_is_typed_with_its_subject(tmp_path: Path) -> None:
    async with v2_session(tmp_path) as (session, peer):
        peer.send(
            {
                "jsonrpc": "2.0",
                "id": "p",
                "method": "session/request_permission",
                "params": {
                    "sessionId": SESSION,
                    "title": "Run ls?",
                    "subject": {"type": "command", "command": "ls", "cwd": str(tmp_path)},
                    "options": [{"optionId": "ok", "name": "OK", "kind": "allow_once"}],
                },
            }
        )
        async with asyncio.timeout(TIMEOUT):
            item = await session.read_update()
        assert isinstance(item, RequestPermissionV2Message)
        assert item.request.title == "Run ls?"
        assert getattr(item.request.subject, "command", None) == "ls"
        assert item.as_v1().tool_call.title == "Run ls?"
        item.respond_outcome(SelectedPermissionOutcome(option_id="ok"))
        answer = await peer.response_to("p")
        assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": "ok"}}


async def test_mcp_stdio_servers_declare_their_type_on_v2_and_not_on_v1(tmp_path: Path) -> None:
    server = McpServerStdio(name="notes", command="/usr/bin/notes", args=[], env=[])
    for version in (2, 1):
        async with wire_connection(Client.builder()) as (cx, peer):
            assert isinstance(cx, SessionConnection)
            answering = asyncio.ensure_future(cx.initialize())
            answer: dict[str, Any] = {"protocolVersion": version}
            if version == 2:
                answer.update(info={"name": "raw", "version": "1"}, capabilities={"session": {}})
            peer.respond(await peer.expect("initialize"), answer)
            async with asyncio.timeout(TIMEOUT):
                await answering
            builder = build_session(cx, tmp_path).with_mcp_server(McpServerList([server]))
            starting = asyncio.ensure_future(builder.start_session())
            new = await peer.expect("session/new")
            peer.respond(new, {"sessionId": SESSION})
            async with asyncio.timeout(TIMEOUT):
                (await starting).close()
            expected = {"name": "notes", "command": "/usr/bin/notes", "args": [], "env": []}
            if version == 2:
                expected = {"type": "stdio", **expected}
            assert new["params"]["mcpServers"] == [expected]


async def test_on_v1_the_view_is_kept_from_its_first_use(tmp_path: Path) -> None:
    """Reading a v1 turn without the view parses nothing more than before; asked for, it is kept."""

    async def main(cx: Connection) -> None:
        async with asyncio.timeout(TIMEOUT), build_session(cx, tmp_path).start_session() as session:
            session.send_prompt("one two")
            assert [message.event async for message in session] == [None, None]
            view = session.view
            session.send_prompt("three")
            events = [message.event async for message in session]
            assert events == [TextAdded(view.messages[0], "three ")]
            assert (view.text, view.state, view.stop_reason) == ("three ", "idle", "end_turn")

    await Client.builder().connect_with(EchoAgent().builder(), initialized(main))


async def test_an_idle_snapshot_read_before_the_prompt_is_taken_up_does_not_end_the_turn(
    tmp_path: Path,
) -> None:
    """An idle ``state_update`` sent before the agent took the prompt up (a background-work snapshot
    between turns) is not the turn's end: the turn ends at the idle that follows its work."""
    async with v2_session(tmp_path) as (session, peer):
        session.send_prompt("go")
        prompt = await peer.expect("session/prompt")
        peer.send(state("idle", background=[]))  # a snapshot sent while the prompt was in flight
        peer.respond(prompt, {"messageId": "u"})
        peer.send(state("running"))
        peer.send(say("a", "the answer"))
        peer.send(state("idle", stopReason="end_turn"))
        async with asyncio.timeout(TIMEOUT):
            text = await session.read_to_string()
        assert text == "the answer"
        assert session.view.stop_reason == "end_turn"


async def test_a_turn_cancelled_before_it_started_ends_at_the_cancelled_idle_whatever_the_order(
    tmp_path: Path,
) -> None:
    """The agent confirms the cancel with an idle ``cancelled`` before it acknowledged the prompt,
    and without reporting ``running``: the turn still ends, as cancelled."""
    async with v2_session(tmp_path) as (session, peer):
        session.send_prompt("go")
        prompt = await peer.expect("session/prompt")
        session.cancel()
        await peer.expect("session/cancel")
        peer.send(state("idle", stopReason="cancelled"))
        peer.respond(prompt, {"messageId": "u"})
        async with asyncio.timeout(TIMEOUT):
            assert await session.read_to_string() == ""
        assert session.stop_reason == "cancelled"


async def test_after_a_refused_prompt_an_idle_snapshot_still_does_not_end_the_next_turn(
    tmp_path: Path,
) -> None:
    async with v2_session(tmp_path) as (session, peer):
        session.send_prompt("refused")
        refused = await peer.expect("session/prompt")
        peer.send({"jsonrpc": "2.0", "id": refused["id"], "error": {"code": -32602, "message": "no"}})
        with pytest.raises(RequestError, match="no"):
            async with asyncio.timeout(TIMEOUT):
                await session.read_update()
        session.send_prompt("go")
        prompt = await peer.expect("session/prompt")
        peer.send(state("idle", background=[]))
        peer.respond(prompt, {"messageId": "u"})
        peer.send(state("running"))
        peer.send(say("a", "the answer"))
        peer.send(state("idle", stopReason="end_turn"))
        async with asyncio.timeout(TIMEOUT):
            assert await session.read_to_string() == "the answer"
