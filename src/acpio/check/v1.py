"""The v1 conversation of ``acpio check``: one connection that exercises every ``V1-*`` requirement.

:class:`V1Script` initializes as a client advertising nothing (so any ``fs/*`` or ``terminal/*``
request is one the agent must not send), sends a bad request, an unknown method and notifications
that must go unanswered, opens two sessions, runs a turn, cancels a busy turn and a turn waiting on
a permission, loads and resumes a session where the agent advertises it, closes stdin and judges the
whole transcript. :func:`check_version_answer` is the second, short connection that asks for a
version the agent cannot speak.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acpio.check.options import CheckOptions
from acpio.check.transcript import clip, judge_envelopes, judge_requests, judge_stdout, updates_of
from acpio.check.verdicts import Verdicts
from acpio.check.wire import AgentUnderTest, JsonObject, NoAnswer

__all__ = ["CLIENT_INFO", "V1Script", "check_version_answer"]

STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
CLIENT_INFO = {"name": "acpio-check", "version": "1.0"}
#: Updates that tell a session's state, not its conversation: a resume may send them.
_SESSION_STATE = frozenset(
    {
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "session_info_update",
        "usage_update",
    }
)
#: How long the check listens after an answer for what must not follow it.
SETTLE = 0.3


class V1Script:
    """The scripted v1 connection (see the module docstring); ``v`` holds the verdicts."""

    def __init__(self, cx: AgentUnderTest, options: CheckOptions, v: Verdicts, root: Path) -> None:
        self.cx = cx
        self.options = options
        self.v = v
        self.root = root
        self.capabilities: JsonObject = {}
        #: (session id, frame index of the prompt, of its answer) of each turn.
        self.turns: list[tuple[str, int, int]] = []
        self.step = "V1-INIT-001"

    async def run(self) -> None:
        """Run the steps, close the connection, judge the transcript."""
        try:
            await self._steps()
        except NoAnswer as exc:
            self.v.check(self.step, False, f"stopped: {exc}")
        await self.cx.finish(self.options.timeout)
        self.v.check(
            "V1-SHUTDOWN-001", self.cx.exit_code is not None, "still running after stdin closed: killed"
        )
        judge_stdout(self.cx, self.v, "V1-STDOUT-001")
        judge_envelopes(self.cx, self.v, "V1-JSONRPC-002", "V1-JSONRPC-004", "V1-ERROR-001")
        judge_requests(self.cx, self.v, "V1-CLIENTCAP-001", self.cx.client.advertises)
        self._judge_turns()

    async def _steps(self) -> None:
        if not await self._initialize():
            return
        self.step = "V1-PARAMS-001"
        answer = await self.cx.call("session/new", {"mcpServers": []}, "no-cwd")
        code = (answer.get("error") or {}).get("code")
        self.v.check("V1-PARAMS-001", code == -32602, f"session/new without cwd: {clip(answer)}")
        self.step = "V1-JSONRPC-003"
        answer = await self.cx.call("session/no_such_method", {})
        code = (answer.get("error") or {}).get("code")
        self.v.check("V1-JSONRPC-003", code == -32601, f"session/no_such_method: {clip(answer)}")
        self.cx.notify("_acpio_check/no_such_notification", {})  # no answer may come (V1-JSONRPC-004)
        self.step = "V1-SESSION-001"
        first = await self._new_session("new-1")
        second = await self._new_session("new-2")
        if first is None or second is None:
            return
        self.v.check("V1-SESSION-002", first != second, f"two session/new both answered {first!r}")
        self.cx.notify("session/cancel", {"sessionId": first})  # nothing to cancel: nothing may answer it
        self.step = "V1-PROMPT-001"
        answer = await self._prompt(first, self.options.prompt)
        self._stopped("V1-PROMPT-001", f"the prompt {self.options.prompt!r}", answer, STOP_REASONS)
        self.step = "V1-CANCEL-001"
        await self._cancel_busy(second)
        self.step = "V1-CANCEL-002"
        third = await self._new_session("new-3")  # the busy turn may still run if the cancel was ignored
        if third is not None:
            await self._cancel_at_permission(third)
        self.step = "V1-LOAD-001"
        await self._load(first)
        self.step = "V1-RESUME-001"
        await self._resume(first)

    async def _initialize(self) -> bool:
        params = {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": CLIENT_INFO}
        answer = await self.cx.call("initialize", params, 424242, within=self.options.start_timeout)
        self.v.check("V1-JSONRPC-001", answer.get("id") == 424242, f"initialize id 424242: {clip(answer)}")
        result = answer.get("result")
        agreed = result.get("protocolVersion") if isinstance(result, dict) else None
        capabilities = result.get("agentCapabilities", {}) if isinstance(result, dict) else None
        ok = type(agreed) is int and isinstance(capabilities, dict)
        self.v.check("V1-INIT-001", ok, f"initialize answered {clip(answer)}")
        if not ok or not isinstance(result, dict) or not isinstance(capabilities, dict):
            return False
        self.v.check("V1-INIT-002", agreed == 1, f"asked for 1, got {agreed!r}")
        info = result.get("agentInfo") or {}
        named = isinstance(info, dict) and bool(info.get("name")) and bool(info.get("version"))
        self.v.check("V1-INIT-004", named, f"agentInfo {clip(info)}")
        self.capabilities = capabilities
        return True

    async def _new_session(self, request_id: str) -> str | None:
        answer = await self.cx.call("session/new", {"cwd": str(self.root), "mcpServers": []}, request_id)
        self.v.check(
            "V1-JSONRPC-001", answer.get("id") == request_id, f"session/new id {request_id!r}: {clip(answer)}"
        )
        session_id = (
            (answer.get("result") or {}).get("sessionId") if isinstance(answer.get("result"), dict) else None
        )
        ok = isinstance(session_id, str) and bool(session_id)
        self.v.check("V1-SESSION-001", ok, f"session/new answered {clip(answer)}")
        return session_id if ok else None

    async def _prompt(self, session_id: str, text: str) -> JsonObject:
        rid = self._send_prompt(session_id, text)
        return await self._turn_answer(session_id, rid, len(self.cx.frames) - 1)

    def _send_prompt(self, session_id: str, text: str) -> int | str:
        return self.cx.request(
            "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        )

    async def _turn_answer(
        self, session_id: str, rid: int | str, start: int, *, after: str = ""
    ) -> JsonObject:
        answer = await self.cx.response_to(rid, f"session/prompt{after}")
        self.turns.append((session_id, start, self.cx.index(answer)))
        await self.cx.until(SETTLE)  # an update that follows the answer is read now (V1-PROMPT-002)
        return answer

    def _stopped(self, requirement: str, what: str, answer: JsonObject, wanted: frozenset[str]) -> None:
        result = answer.get("result")
        reason = result.get("stopReason") if isinstance(result, dict) else None
        self.v.check(
            requirement,
            reason in wanted,
            f"{what}: wanted stopReason in {sorted(wanted)}, got {clip(answer)}",
        )

    def _answered(self, rid: int | str) -> bool:
        return any(
            f.direction == "in"
            and isinstance(f.message, dict)
            and f.message.get("id") == rid
            and "method" not in f.message
            for f in self.cx.frames
        )

    async def _cancel_busy(self, session_id: str) -> None:
        rid = self._send_prompt(session_id, self.options.busy_prompt)
        start = len(self.cx.frames) - 1
        # the turn is under way once the agent says anything (an update, a request), or after a second;
        # a turn that still ends on its own soon after is a quick one, not one to cancel
        await self.cx.until(min(1.0, self.options.timeout), stop=lambda f: f.direction == "in")
        await self.cx.until(SETTLE, stop=lambda f: self._answered(rid))
        if self._answered(rid):
            ended = await self._turn_answer(session_id, rid, start)
            self.v.skip(
                "V1-CANCEL-001",
                f"the turn of {self.options.busy_prompt!r} ended before the cancel ({clip(ended, 120)}): "
                "give --busy-prompt a prompt that keeps the agent busy",
            )
            return
        self.cx.notify("session/cancel", {"sessionId": session_id})
        answer = await self._cancelled_turn("V1-CANCEL-001", session_id, rid, start)
        if answer is None:
            return
        self._stopped(
            "V1-CANCEL-001",
            f"session/cancel during {self.options.busy_prompt!r}",
            answer,
            frozenset({"cancelled"}),
        )

    async def _cancel_at_permission(self, session_id: str) -> None:
        client = self.cx.client
        client.hold_permissions = True
        rid = self._send_prompt(session_id, self.options.permission_prompt)
        start = len(self.cx.frames) - 1
        await self.cx.until(self.options.timeout, stop=lambda f: bool(client.held) or self._answered(rid))
        client.hold_permissions = False
        if not client.held:
            if self._answered(rid):
                await self._turn_answer(session_id, rid, start)
            why = "ended" if self._answered(rid) else f"went on for {self.options.timeout:g} s"
            self.v.skip(
                "V1-CANCEL-002",
                f"no permission request: the turn of {self.options.permission_prompt!r} {why} without one "
                "(give --permission-prompt a prompt under which the agent asks)",
            )
            if not self._answered(rid):
                self.cx.notify("session/cancel", {"sessionId": session_id})
                await self._turn_answer(session_id, rid, start)
            return
        self.cx.notify("session/cancel", {"sessionId": session_id})
        for request in client.held:  # the client's part: pending permission requests answered cancelled
            self.cx.send(
                {"jsonrpc": "2.0", "id": request.get("id"), "result": {"outcome": {"outcome": "cancelled"}}}
            )
        client.held.clear()
        answer = await self._cancelled_turn("V1-CANCEL-002", session_id, rid, start)
        if answer is None:
            return
        self._stopped(
            "V1-CANCEL-002",
            "session/cancel with a permission request pending",
            answer,
            frozenset({"cancelled"}),
        )

    async def _cancelled_turn(
        self, requirement: str, session_id: str, rid: int | str, start: int
    ) -> JsonObject | None:
        """The answer to a cancelled turn; ``None`` (``requirement`` failed) when it does not come in time."""
        try:
            return await self._turn_answer(session_id, rid, start, after=" after session/cancel")
        except NoAnswer as exc:
            if self.cx.ended:
                raise
            self.v.check(requirement, False, f"the turn was not ended: {exc}")
            return None

    async def _load(self, session_id: str) -> None:
        if self.capabilities.get("loadSession") is not True:
            self.v.skip("V1-LOAD-001", "the agent does not advertise loadSession")
            return
        rid = self.cx.request(
            "session/load", {"sessionId": session_id, "cwd": str(self.root), "mcpServers": []}
        )
        start = len(self.cx.frames) - 1
        answer = await self.cx.response_to(rid, "session/load")
        end = self.cx.index(answer)
        await self.cx.until(SETTLE)
        before = updates_of(self.cx.frames, session_id, start, end)
        after = updates_of(self.cx.frames, session_id, end, len(self.cx.frames))
        self.v.check("V1-LOAD-001", "result" in answer, f"session/load answered {clip(answer)}")
        self.v.check(
            "V1-LOAD-001",
            bool(before),
            "session/load replayed nothing before its answer, yet the session had a turn",
        )
        self.v.check("V1-LOAD-001", not after, f"after the session/load answer: {clip(after)}")

    async def _resume(self, session_id: str) -> None:
        if (self.capabilities.get("sessionCapabilities") or {}).get("resume") is None:
            self.v.skip("V1-RESUME-001", "the agent does not advertise sessionCapabilities.resume")
            return
        rid = self.cx.request(
            "session/resume", {"sessionId": session_id, "cwd": str(self.root), "mcpServers": []}
        )
        start = len(self.cx.frames) - 1
        answer = await self.cx.response_to(rid, "session/resume")
        history = [
            u
            for u in updates_of(self.cx.frames, session_id, start, self.cx.index(answer))
            if u.get("sessionUpdate") not in _SESSION_STATE
        ]
        self.v.check(
            "V1-RESUME-001",
            "result" in answer and not history,
            f"session/resume answered {clip(answer, 120)} after replaying {clip(history)}",
        )

    def _judge_turns(self) -> None:
        """No update of a turn's session between its answer and the client's next request for that session."""
        frames = self.cx.frames
        for session_id, _start, end in self.turns:
            following = next(
                (
                    i
                    for i in range(end + 1, len(frames))
                    if frames[i].direction == "out" and _names(frames[i].message, session_id)
                ),
                len(frames),
            )
            late = updates_of(frames, session_id, end + 1, following)
            self.v.check("V1-PROMPT-002", not late, f"after the session/prompt answer: {clip(late)}")


def _names(message: Any, session_id: str) -> bool:
    """Whether ``message`` is a request of the client about ``session_id`` (its next turn, a load...)."""
    return (
        isinstance(message, dict)
        and "id" in message
        and "method" in message
        and (message.get("params") or {}).get("sessionId") == session_id
    )


async def check_version_answer(cx: AgentUnderTest, options: CheckOptions, v: Verdicts) -> None:
    """``V1-INIT-003``: initialize asking for 65535 gets a version the agent supports, not 65535."""
    try:
        params = {"protocolVersion": 65535, "clientCapabilities": {}, "clientInfo": CLIENT_INFO}
        answer = await cx.call("initialize", params, within=options.start_timeout)
    except NoAnswer as exc:
        v.check("V1-INIT-003", False, f"initialize with 65535: {exc}")
        return
    finally:
        await cx.finish(options.timeout)
    agreed = (
        (answer.get("result") or {}).get("protocolVersion")
        if isinstance(answer.get("result"), dict)
        else None
    )
    ok = type(agreed) is int and 1 <= agreed < 65535
    v.check("V1-INIT-003", ok, f"asked for 65535, got {clip(answer)}")
