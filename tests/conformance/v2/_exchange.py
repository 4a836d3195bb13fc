"""One scripted v2 conversation with an agent command, judged requirement by requirement.

:func:`run_exchange` starts the agent twice at most (once more for auth), drives it through
everything the registry (:mod:`._requirements`) asks about and returns a :class:`Verdicts`: per
requirement id, passed, failed (with what was seen) or not applicable (the agent does not offer
the feature, with the reason). Each requirement's test then reads its verdict.
"""

from __future__ import annotations

import asyncio
import base64
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conformance.v2._agent import AgentCommand, AgentProcess, Turn
from tests.conformance.v2._requirements import BY_ID
from tests.conformance.v2._schema import V2Schema

#: Methods and updates v1 has and v2 does not.
_V1_METHODS = frozenset(
    {"fs/read_text_file", "fs/write_text_file", "authenticate", "logout", "session/load", "session/set_mode"}
)
_V1_UPDATES = frozenset({"tool_call", "plan", "current_mode_update"})
#: Updates that tell a session's state rather than its conversation (a resume may send them).
_SESSION_STATE = frozenset({"available_commands_update", "config_option_update"})
_CHUNKS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})
_CLIENT = {"name": "acpio-v2-conformance", "version": "1.0"}


@dataclass
class Verdicts:
    """Per requirement id: ``None`` (passed), a failure text, or ``("n/a", reason)``."""

    agent: AgentCommand
    results: dict[str, str | tuple[str, str] | None] = field(default_factory=dict)

    def check(self, requirement: str, ok: bool, detail: str) -> None:
        """Record ``requirement`` passed, or failed with ``detail`` (a failure is never overwritten)."""
        assert requirement in BY_ID, requirement
        if isinstance(self.results.get(requirement), str):
            return
        self.results[requirement] = None if ok else detail

    def not_applicable(self, requirement: str, reason: str) -> None:
        """Record that the agent does not offer what ``requirement`` is about."""
        assert requirement in BY_ID, requirement
        self.results.setdefault(requirement, ("n/a", reason))


async def run_exchange(agent: AgentCommand, schema: V2Schema, work: Path) -> Verdicts:
    """Drive ``agent`` through the whole script in ``work``; the verdicts."""
    verdicts = Verdicts(agent)
    process = await AgentProcess.start(agent.argv, work)
    try:
        await _handshake(process, verdicts)
        await _conversation(process, agent, verdicts, work)
    finally:
        await process.stop()
    _whole_wire(process, schema, verdicts)
    if agent.auth_argv is None:
        verdicts.not_applicable("ACP2-AUTH-001", f"{agent.name} is run without auth methods")
    else:
        auth = await AgentProcess.start((*agent.argv, *agent.auth_argv), work)
        try:
            await _auth(auth, verdicts, work)
        finally:
            await auth.stop()
        _whole_wire(auth, schema, verdicts)
    return verdicts


async def _handshake(agent: AgentProcess, verdicts: Verdicts) -> None:
    early, _ = await agent.call("session/new", {"cwd": str(agent.cwd)})
    verdicts.check(
        "ACP2-INIT-004", early.get("error", {}).get("code") == -32600, f"before initialize: {early}"
    )
    agent.send(b'[{"jsonrpc":"2.0","id":90,"method":"initialize","params":{"protocolVersion":2}}]')
    batch = await agent.next()
    verdicts.check(
        "ACP2-JSONRPC-004",
        isinstance(batch, dict) and batch.get("id") is None and batch.get("error", {}).get("code") == -32600,
        f"an array got {batch}",
    )
    refused, _ = await agent.call("initialize", {"protocolVersion": 0, "info": _CLIENT})
    data = refused.get("error", {}).get("data") or {}
    verdicts.check(
        "ACP2-INIT-002",
        refused.get("error", {}).get("code") == -32022
        and data.get("requested") == 0
        and 2 in data.get("supported", []),
        f"initialize with version 0 got {refused}",
    )
    answer, _ = await agent.call(
        "initialize", {"protocolVersion": 65535, "info": _CLIENT, "capabilities": {}}, "init-1"
    )
    verdicts.check(
        "ACP2-JSONRPC-001", answer.get("id") == "init-1", f"a string id came back as {answer.get('id')!r}"
    )
    result = answer.get("result") or {}
    verdicts.check("ACP2-INIT-003", result.get("protocolVersion") == 2, f"version 65535 got {answer}")
    info = result.get("info") or {}
    verdicts.check(
        "ACP2-INIT-001",
        result.get("protocolVersion") == 2
        and isinstance(result.get("capabilities"), dict)
        and "name" in info,
        f"the initialize answer: {result}",
    )
    verdicts.check(
        "ACP2-INFO-001",
        all(isinstance(info.get(k), str) and info[k] for k in ("name", "version"))
        and isinstance(info.get("title", ""), str),
        f"info: {info}",
    )
    booleans = _booleans(result.get("capabilities"), "capabilities")
    verdicts.check("ACP2-CAPS-001", not booleans, f"boolean markers: {booleans}")
    agent.capabilities = result.get("capabilities") or {}


async def _conversation(agent: AgentProcess, command: AgentCommand, verdicts: Verdicts, work: Path) -> None:
    unknown, _ = await agent.call("nonexistent/method", {})
    verdicts.check("ACP2-JSONRPC-003", unknown.get("error", {}).get("code") == -32601, f"got {unknown}")
    extension, _ = await agent.call("_acpio_conformance/unknown", {})
    verdicts.check("ACP2-JSONRPC-005", "result" in extension or "error" in extension, f"got {extension}")
    first, _ = await agent.call("session/new", {"cwd": str(work)})
    second, _ = await agent.call("session/new", {"cwd": str(work)})
    ids = [(a.get("result") or {}).get("sessionId") for a in (first, second)]
    verdicts.check(
        "ACP2-SESSION-001", all(isinstance(i, str) and i for i in ids) and ids[0] != ids[1], f"ids {ids}"
    )
    session = ids[0]
    turn = await agent.turn(session, command.simple)
    _prompt_checks(turn, verdicts)
    await _resume_checks(agent, session, turn, verdicts, work)
    await _cancel_checks(agent, command, verdicts, work)
    await _feature_checks(agent, command, verdicts, work)
    listed, _ = await agent.call("session/list", {})
    sessions = [s.get("sessionId") for s in (listed.get("result") or {}).get("sessions", [])]
    verdicts.check("ACP2-LIST-001", session in sessions, f"session/list: {listed}")
    closed, _ = await agent.call("session/close", {"sessionId": ids[1]})
    verdicts.check("ACP2-CLOSE-001", closed.get("result") == {}, f"session/close: {closed}")
    if (agent.capabilities.get("session") or {}).get("delete") is None:
        verdicts.not_applicable("ACP2-DELETE-001", "the agent does not advertise capabilities.session.delete")
    else:
        deleted, _ = await agent.call("session/delete", {"sessionId": session})
        verdicts.check("ACP2-DELETE-001", deleted.get("result") == {}, f"session/delete: {deleted}")


def _prompt_checks(turn: Turn, verdicts: Verdicts) -> None:
    message_id = (turn.answer.get("result") or {}).get("messageId")
    verdicts.check(
        "ACP2-PROMPT-001", isinstance(message_id, str) and message_id, f"the prompt's answer: {turn.answer}"
    )
    users = [u for u in turn.updates if u.get("sessionUpdate") in ("user_message", "user_message_chunk")]
    verdicts.check(
        "ACP2-PROMPT-002", any(u.get("messageId") == message_id for u in users), f"user messages: {users}"
    )
    states = [u.get("state") for u in turn.of("state_update")]
    idle = turn.of("state_update")[-1] if states else {}
    verdicts.check(
        "ACP2-PROMPT-003",
        states[:1] == ["running"]
        and states[-1:] == ["idle"]
        and isinstance(idle.get("stopReason"), str)
        and turn.updates[-1] is idle,
        f"state updates {states}, last update {turn.updates[-1:]}",
    )


async def _resume_checks(
    agent: AgentProcess, session: str, turn: Turn, verdicts: Verdicts, work: Path
) -> None:
    plain, before = await agent.call("session/resume", {"sessionId": session, "cwd": str(work)})
    quiet = before + await agent.quiet(0.3)
    replayed_plain = [  # the session's state (its commands, its options) is not conversation history
        m
        for m in quiet
        if m.get("method") == "session/update"
        and m["params"]["update"].get("sessionUpdate") not in _SESSION_STATE
    ]
    verdicts.check(
        "ACP2-RESUME-001", "result" in plain and not replayed_plain, f"{plain}, then {replayed_plain}"
    )
    replay, before = await agent.call(
        "session/resume", {"sessionId": session, "cwd": str(work), "replayFrom": {"type": "start"}}
    )
    replayed = [m["params"]["update"] for m in before if m.get("method") == "session/update"]
    user_id = (turn.answer.get("result") or {}).get("messageId")
    verdicts.check(
        "ACP2-RESUME-002",
        "result" in replay and any(u.get("messageId") == user_id for u in replayed),
        f"replayed before the answer: {replayed}; answer {replay}",
    )


async def _cancel_checks(agent: AgentProcess, command: AgentCommand, verdicts: Verdicts, work: Path) -> None:
    if command.busy is None:
        verdicts.check("ACP2-CANCEL-001", False, f"{command.name} has no busy prompt to cancel")
    else:
        session = (await agent.call("session/new", {"cwd": str(work)}))[0]["result"]["sessionId"]

        def cancel() -> None:
            if session not in agent.cancelled:
                agent.cancelled.add(session)
                agent.notify("session/cancel", {"sessionId": session})

        def cancel_at_permission(message: dict[str, Any]) -> bool:
            if message.get("method") == "session/request_permission":
                cancel()  # blocked on the user: cancel now (the request is then answered cancelled)
            return False

        def cancel_once_running(message: dict[str, Any]) -> None:
            update = (message.get("params") or {}).get("update") or {}
            if update.get("state") == "running":
                # a moment into the foreground work: the turn is under way, not just accepted
                asyncio.get_running_loop().call_later(0.5, cancel)

        agent.on_request = cancel_at_permission
        try:
            turn = await agent.turn(session, command.busy, cancel_once_running)
        finally:
            agent.on_request = None
        last = turn.updates[-1] if turn.updates else {}
        verdicts.check(
            "ACP2-CANCEL-001",
            last.get("state") == "idle" and last.get("stopReason") == "cancelled",
            f"the cancelled turn ended with {last}",
        )
    if command.permission is None:
        verdicts.not_applicable("ACP2-CANCEL-002", f"{command.name} has no prompt that asks permission")
        return
    session = (await agent.call("session/new", {"cwd": str(work)}))[0]["result"]["sessionId"]

    def cancel_at_permission(message: dict[str, Any]) -> bool:
        if message.get("method") == "session/request_permission":
            agent.cancelled.add(session)
            agent.notify("session/cancel", {"sessionId": session})
        return False  # the default answer: cancelled, now that the session is cancelled

    agent.on_request = cancel_at_permission
    try:
        turn = await agent.turn(session, command.permission)
    finally:
        agent.on_request = None
    last = turn.updates[-1] if turn.updates else {}
    verdicts.check(
        "ACP2-CANCEL-002",
        bool(turn.requests("session/request_permission")) and last.get("stopReason") == "cancelled",
        f"cancelled at its permission request, the turn ended with {last}",
    )


async def _feature_checks(agent: AgentProcess, command: AgentCommand, verdicts: Verdicts, work: Path) -> None:
    turns: list[Turn] = []

    async def run(prompt: str, on_message: Any = None) -> Turn:
        session = (await agent.call("session/new", {"cwd": str(work)}))[0]["result"]["sessionId"]
        turn = await agent.turn(session, prompt, on_message)
        turns.append(turn)
        return turn

    if command.permission is None:
        for requirement in ("ACP2-PERMISSION-001", "ACP2-PERMISSION-002"):
            verdicts.not_applicable(requirement, f"{command.name} has no prompt that asks permission")
    else:
        turn = await run(command.permission)
        [request] = turn.requests("session/request_permission")
        params = request.get("params") or {}
        verdicts.check(
            "ACP2-PERMISSION-001",
            isinstance(params.get("title"), str) and bool(params.get("options")),
            f"the permission request: {params}",
        )
        states = [u.get("state") for u in turn.of("state_update")]
        verdicts.check("ACP2-PERMISSION-002", "requires_action" in states, f"state updates: {states}")
    await _tool_cancel(agent, command, verdicts, run)
    await _terminal(agent, command, verdicts, run)
    if command.edit is None:
        verdicts.not_applicable("ACP2-DIFF-001", f"{command.name} has no prompt that edits a file")
    else:
        diffs = [
            c
            for t in [await run(command.edit)]
            for u in t.of("tool_call_update")
            for c in u.get("content") or []
            if c.get("type") == "diff"
        ]
        verdicts.check("ACP2-DIFF-001", bool(diffs) and all(_diff_ok(d) for d in diffs), f"diffs: {diffs}")
    if command.upsert is None:
        verdicts.not_applicable("ACP2-UPSERT-001", f"{command.name} has no prompt that replaces its message")
    else:
        turn = await run(command.upsert)
        chunk_ids = {u.get("messageId") for u in turn.of("agent_message_chunk")}
        upserts = turn.of("agent_message")
        verdicts.check(
            "ACP2-UPSERT-001",
            bool(upserts)
            and all(isinstance(u.get("content"), list) and u["messageId"] in chunk_ids for u in upserts),
            f"upserts {upserts}, chunk ids {chunk_ids}",
        )
    if command.plan is None:
        verdicts.not_applicable("ACP2-PLAN-001", f"{command.name} has no prompt that sends a plan")
    else:
        plans = [u.get("plan") or {} for u in (await run(command.plan)).of("plan_update")]
        verdicts.check(
            "ACP2-PLAN-001",
            bool(plans)
            and all(
                p.get("type") == "items"
                and isinstance(p.get("planId"), str)
                and isinstance(p.get("entries"), list)
                for p in plans
            ),
            f"plan updates: {plans}",
        )
    if command.background is None:
        verdicts.not_applicable(
            "ACP2-BACKGROUND-001", f"{command.name} has no prompt that leaves background work"
        )
    else:
        await run(command.background)
        later = [m["params"]["update"] for m in await agent.quiet(2.0) if m.get("method") == "session/update"]
        verdicts.check(
            "ACP2-BACKGROUND-001",
            bool(later)
            and all(u.get("sessionUpdate") != "state_update" for u in later)
            and all("messageId" in u for u in later if u.get("sessionUpdate") in _CHUNKS),
            f"after the idle update: {later}",
        )
    calls = [call for turn in turns for call in _tool_call_reports(turn)]
    firsts: dict[Any, dict[str, Any]] = {}
    for call in calls:
        firsts.setdefault(call.get("toolCallId"), call)
    if not calls:
        for requirement in ("ACP2-TOOL-001", "ACP2-TOOL-002"):
            verdicts.not_applicable(requirement, f"{command.name} reported no tool call in any turn")
        return
    verdicts.check(
        "ACP2-TOOL-001", all(isinstance(c.get("toolCallId"), str) for c in calls), f"tool calls: {calls[:3]}"
    )
    verdicts.check(
        "ACP2-TOOL-002", all("title" in c for c in firsts.values()), f"first reports: {list(firsts.values())}"
    )


def _tool_call_reports(turn: Turn) -> list[dict[str, Any]]:
    """A turn's reports of tool calls in order: its ``tool_call_update``s and its permission subjects.

    A permission request's ``tool_call`` subject is applied "exactly like a ``tool_call_update``".
    """
    reports = []
    for message in turn.messages:
        params = message.get("params") or {}
        update = params.get("update") or {}
        subject = params.get("subject") or {}
        if message.get("method") == "session/update" and update.get("sessionUpdate") == "tool_call_update":
            reports.append(update)
        elif message.get("method") == "session/request_permission" and subject.get("type") == "tool_call":
            reports.append(subject.get("toolCall") or {})
    return reports


async def _tool_cancel(agent: AgentProcess, command: AgentCommand, verdicts: Verdicts, run: Any) -> None:
    if command.cancellable_tool is None:
        for requirement in ("ACP2-TOOL-003", "ACP2-TOOL-004"):
            verdicts.not_applicable(requirement, f"{command.name} has no cancellable tool call")
        return
    sent: dict[str, Any] = {}

    def cancel(message: dict[str, Any]) -> None:
        update = (message.get("params") or {}).get("update") or {}
        if (update.get("capabilities") or {}).get("cancel") is not None and "id" not in sent:
            session = message["params"]["sessionId"]
            sent.update(
                id=agent.request(
                    "tool_call/cancel", {"sessionId": session, "toolCallId": update["toolCallId"]}
                ),
                call=update["toolCallId"],
                session=session,
            )

    turn = await run(command.cancellable_tool, cancel)
    accepted = [m for m in turn.messages if "method" not in m and m.get("id") == sent.get("id")]
    final = [
        u
        for u in turn.of("tool_call_update")
        if u.get("toolCallId") == sent.get("call") and u.get("status") in ("cancelled", "completed", "failed")
    ]
    verdicts.check(
        "ACP2-TOOL-003",
        bool(accepted) and accepted[0].get("result") == {} and bool(final),
        f"tool_call/cancel answered {accepted}; final updates {final}",
    )
    again, _ = await agent.call(
        "tool_call/cancel", {"sessionId": sent.get("session"), "toolCallId": sent.get("call")}
    )
    unknown, _ = await agent.call(
        "tool_call/cancel", {"sessionId": sent.get("session"), "toolCallId": "no-such-call"}
    )
    verdicts.check(
        "ACP2-TOOL-004",
        again.get("error", {}).get("code") == -32602 and unknown.get("error", {}).get("code") == -32602,
        f"a finished call: {again}; an unknown one: {unknown}",
    )


async def _terminal(agent: AgentProcess, command: AgentCommand, verdicts: Verdicts, run: Any) -> None:
    if command.terminal is None:
        for requirement in ("ACP2-TERMINAL-001", "ACP2-TERMINAL-002"):
            verdicts.not_applicable(requirement, f"{command.name} has no prompt that runs an agent terminal")
        return
    sent: dict[str, Any] = {}

    def cancel(message: dict[str, Any]) -> None:
        update = (message.get("params") or {}).get("update") or {}
        if (
            update.get("sessionUpdate") == "terminal_update"
            and (update.get("capabilities") or {}).get("cancel") is not None
            and "id" not in sent
        ):
            params = {"sessionId": message["params"]["sessionId"], "terminalId": update["terminalId"]}
            sent.update(id=agent.request("terminal/cancel", params), terminal=update["terminalId"])

    turn = await run(command.terminal, cancel)
    updates = turn.of("terminal_update")
    chunks = turn.of("terminal_output_chunk")
    verdicts.check(
        "ACP2-TERMINAL-001",
        bool(updates)
        and all(os.path.isabs(u["cwd"]) for u in updates if isinstance(u.get("cwd"), str))
        and all(_base64(c.get("data")) for c in chunks)
        and isinstance(updates[-1].get("exitStatus"), dict),
        f"terminal updates {updates}, chunks {chunks}",
    )
    accepted = [m for m in turn.messages if "method" not in m and m.get("id") == sent.get("id")]
    exited = [
        u
        for u in updates
        if u.get("terminalId") == sent.get("terminal") and isinstance(u.get("exitStatus"), dict)
    ]
    verdicts.check(
        "ACP2-TERMINAL-002",
        bool(accepted) and accepted[0].get("result") == {} and bool(exited),
        f"terminal/cancel answered {accepted}; exits {exited}",
    )


async def _auth(agent: AgentProcess, verdicts: Verdicts, work: Path) -> None:
    answer, _ = await agent.call("initialize", {"protocolVersion": 2, "info": _CLIENT, "capabilities": {}})
    methods = (answer.get("result") or {}).get("authMethods") or []
    if not methods:
        verdicts.check("ACP2-AUTH-001", False, f"run with auth, the agent offers no auth method: {answer}")
        return
    shaped = all(isinstance(m.get("methodId"), str) and isinstance(m.get("type"), str) for m in methods)
    agent_method = next(
        (m["methodId"] for m in methods if m.get("type") == "agent"), methods[0].get("methodId")
    )
    login, _ = await agent.call("auth/login", {"methodId": agent_method})
    created, _ = await agent.call("session/new", {"cwd": str(work)})
    logout, _ = await agent.call("auth/logout", {})
    verdicts.check(
        "ACP2-AUTH-001",
        shaped and login.get("result") == {} and "result" in created and "result" in logout,
        f"methods {methods}; auth/login {login}; session/new {created}; auth/logout {logout}",
    )


def _whole_wire(agent: AgentProcess, schema: V2Schema, verdicts: Verdicts) -> None:
    bad_lines = [f"{line.raw[:120]!r}: {line.problem}" for line in agent.lines if line.problem]
    verdicts.check("ACP2-TRANSPORT-001", not bad_lines, "; ".join(bad_lines))
    messages = [line.message for line in agent.lines if line.problem is None]
    null_ids = [m for m in messages if "method" in m and "id" in m and m["id"] is None]
    verdicts.check("ACP2-JSONRPC-002", not null_ids, f"requests with a null id: {null_ids}")
    problems = schema.problems_of(messages)
    verdicts.check("ACP2-SCHEMA-001", not problems, "\n".join(problems[:5]))
    v1 = [
        m
        for m in messages
        if m.get("method") in _V1_METHODS
        or str(m.get("method", "")).startswith("terminal/")
        or ((m.get("params") or {}).get("update") or {}).get("sessionUpdate") in _V1_UPDATES
        or "modes" in (m.get("result") or {} if isinstance(m.get("result"), dict) else {})
    ]
    verdicts.check("ACP2-V1GONE-001", not v1, f"v1 shapes: {v1[:3]}")
    chunks = [
        u
        for m in messages
        if m.get("method") == "session/update"
        for u in [(m.get("params") or {}).get("update") or {}]
        if u.get("sessionUpdate") in _CHUNKS
    ]
    verdicts.check(
        "ACP2-PROMPT-004",
        all(isinstance(c.get("messageId"), str) for c in chunks),
        f"chunks without messageId: {[c for c in chunks if 'messageId' not in c][:3]}",
    )
    messages_of_errors = [m["error"].get("message") for m in messages if isinstance(m.get("error"), dict)]
    verdicts.check(
        "ACP2-ERROR-001",
        all(isinstance(t, str) and t.strip() and "\n" not in t for t in messages_of_errors),
        f"error messages: {messages_of_errors}",
    )


def _booleans(node: Any, path: str) -> list[str]:
    """The paths of boolean values under a capabilities object (``_meta`` aside)."""
    if isinstance(node, bool):
        return [path]
    if not isinstance(node, dict):
        return []
    return [
        found for key, value in node.items() if key != "_meta" for found in _booleans(value, f"{path}.{key}")
    ]


def _base64(data: Any) -> bool:
    try:
        base64.b64decode(data, validate=True)
    except (TypeError, ValueError):
        return False
    return isinstance(data, str)


def _diff_ok(diff: dict[str, Any]) -> bool:
    changes = diff.get("changes") or []
    paths = {c.get("path") for c in changes}
    patch = diff.get("patch")
    return (
        bool(changes)
        and all(isinstance(p, str) and os.path.isabs(p) for p in paths)
        and all(isinstance(c.get("operation"), str) for c in changes)
        and (
            patch is None
            or (patch.get("format") == "git_patch" and all(p in patch.get("text", "") for p in paths))
        )
    )


def run(agent: AgentCommand, schema: V2Schema, work: Path) -> Verdicts:
    """:func:`run_exchange` from synchronous code (a module-scoped fixture)."""
    return asyncio.run(run_exchange(agent, schema, work))
