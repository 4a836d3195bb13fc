"""The v2 conversation of ``acpio check``: one connection that exercises every ``V2-*`` requirement.

v2 acknowledges a prompt at once and reports the turn with ``state_update`` (``running``, then
``idle`` with a stop reason); cancellation is confirmed by an ``idle`` ``cancelled``. The client
advertises nothing, asks for version 65535 (a v2 agent answers 2), sends an unknown method, opens
two sessions, runs a turn and cancels a busy one.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from acpio.check.options import CheckOptions
from acpio.check.transcript import clip, judge_envelopes, judge_requests, judge_stdout
from acpio.check.v1 import CLIENT_INFO
from acpio.check.verdicts import Verdicts
from acpio.check.wire import AgentUnderTest, Frame, NoAnswer

__all__ = ["V2Script"]

_V1_ONLY = ("fs/", "terminal/")


class V2Script:
    """The scripted v2 connection (see the module docstring)."""

    def __init__(self, cx: AgentUnderTest, options: CheckOptions, v: Verdicts, root: Path) -> None:
        self.cx = cx
        self.options = options
        self.v = v
        self.root = root
        self.step = "V2-INIT-001"

    async def run(self) -> None:
        """Run the steps, close the connection, judge the transcript."""
        try:
            await self._steps()
        except NoAnswer as exc:
            self.v.check(self.step, False, f"stopped: {exc}")
        await self.cx.finish(self.options.timeout)
        judge_stdout(self.cx, self.v, "V2-STDOUT-001")
        judge_envelopes(self.cx, self.v, "V2-JSONRPC-002", None, None)
        judge_requests(self.cx, self.v, "V2-V1GONE-001", lambda method: not method.startswith(_V1_ONLY))

    async def _steps(self) -> None:
        params = {"protocolVersion": 65535, "info": CLIENT_INFO, "capabilities": {}}
        answer = await self.cx.call("initialize", params, "init-1", within=self.options.start_timeout)
        result: dict[str, Any] = answer["result"] if isinstance(answer.get("result"), dict) else {}
        agreed = result.get("protocolVersion")
        self.v.check("V2-INIT-002", agreed == 2, f"asked for 65535, got {clip(answer)}")
        info = result.get("info") or {}
        named = isinstance(info, dict) and all(
            isinstance(info.get(k), str) and info[k] for k in ("name", "version")
        )
        ok = agreed == 2 and named and isinstance(result.get("capabilities"), dict)
        self.v.check("V2-INIT-001", ok, f"initialize answered {clip(answer)}")
        if agreed != 2:
            return
        self.step = "V2-JSONRPC-001"
        answer = await self.cx.call("session/no_such_method", {})
        self.v.check(
            "V2-JSONRPC-001",
            (answer.get("error") or {}).get("code") == -32601,
            f"session/no_such_method: {clip(answer)}",
        )
        self.step = "V2-SESSION-001"
        ids = []
        for _ in range(2):
            answer = await self.cx.call("session/new", {"cwd": str(self.root), "mcpServers": []})
            ids.append(
                (answer.get("result") or {}).get("sessionId")
                if isinstance(answer.get("result"), dict)
                else None
            )
        ok = all(isinstance(i, str) and i for i in ids) and ids[0] != ids[1]
        self.v.check("V2-SESSION-001", ok, f"two session/new answered {ids}")
        if not ok:
            return
        self.step = "V2-PROMPT-001"
        states, _ = await self._turn(str(ids[0]), self.options.prompt, cancel=False)
        kinds = [s.get("state") for s in states]
        idle = states[-1] if states else {}
        ok = "running" in kinds and idle.get("state") == "idle" and isinstance(idle.get("stopReason"), str)
        self.v.check("V2-PROMPT-001", ok, f"state updates {clip(states)}")
        self.step = "V2-CANCEL-001"
        states, cancelled = await self._turn(str(ids[1]), self.options.busy_prompt, cancel=True)
        if not cancelled:
            self.v.skip(
                "V2-CANCEL-001",
                f"the turn of {self.options.busy_prompt!r} ended before the cancel: give --busy-prompt a "
                "prompt that keeps the agent busy",
            )
            return
        last = states[-1] if states else {}
        ok = last.get("state") == "idle" and last.get("stopReason") == "cancelled"
        self.v.check("V2-CANCEL-001", ok, f"after session/cancel: {clip(states)}")

    async def _turn(self, session_id: str, text: str, *, cancel: bool) -> tuple[list[dict[str, Any]], bool]:
        """Prompt ``text``: the session's state updates until it is idle, and whether a cancel was sent.

        With ``cancel``, ``session/cancel`` goes out once the turn runs (or after a second) unless it
        is already idle.
        """
        states: list[dict[str, Any]] = []

        def idle_now(frame: Frame) -> bool:
            message = frame.message
            if (
                frame.direction != "in"
                or not isinstance(message, dict)
                or message.get("method") != "session/update"
            ):
                return False
            params = message.get("params") or {}
            update = params.get("update") or {}
            if params.get("sessionId") != session_id or update.get("sessionUpdate") != "state_update":
                return False
            states.append(update)
            return update.get("state") == "idle"

        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
        rid = self.cx.request("session/prompt", prompt)
        start = len(self.cx.frames)
        answer = await self.cx.response_to(rid, "session/prompt")
        if "result" not in answer:
            return [{"error": answer.get("error")}], False
        done = any([idle_now(frame) for frame in self.cx.frames[start:]])
        cancelled = False
        if cancel and not done:
            done = await self._read_until(idle_now, min(1.0, self.options.timeout))
            if not done:
                self.cx.notify("session/cancel", {"sessionId": session_id})
                cancelled = True
        if not done:
            await self._read_until(idle_now, self.options.timeout)
        return states, cancelled

    async def _read_until(self, stop: Callable[[Frame], bool], seconds: float) -> bool:
        """Read for ``seconds`` or until ``stop(frame)``; whether it stopped."""
        stopped = False

        def watching(frame: Frame) -> bool:
            nonlocal stopped
            stopped = bool(stop(frame))
            return stopped

        await self.cx.until(seconds, stop=watching)
        return stopped
