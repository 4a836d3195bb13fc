"""A small raw-stdio ACP agent that keeps every rule but one: ``--fault NAME`` breaks that one.

Without a fault it meets every requirement of ``acpio check`` (``test_broken_agents.py`` checks
that too). It is a raw script, not an :class:`acpio.AgentApp`, because AgentApp prevents most of
these faults. Prompts: ``sleep 60`` waits for ``session/cancel``; ``permission ...`` asks
permission and waits for the answer; anything else is answered with one chunk and ``end_turn``.
``--v2`` makes it an ACP v2 agent (the prompt acknowledged at once, the turn reported by
``state_update``), with the faults of :data:`V2_FAULTS`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

FAULTS = (
    "stdout-noise",  # a banner on stdout
    "version-echo",  # answers the protocol version asked for, 65535 included
    "reused-session-id",  # every session/new answers the same id
    "empty-session-id",  # session/new answers sessionId ""
    "no-cancelled",  # a cancelled busy turn ends end_turn
    "permission-cancel-ignored",  # a permission answered cancelled ends the turn end_turn
    "hang-on-cancel",  # session/cancel is ignored: the busy turn goes on
    "late-update",  # an update after the prompt's answer
    "fs-without-capability",  # fs/read_text_file to a client that advertised no fs
    "wrong-unknown-code",  # an unknown method is answered -32600
    "malformed-error",  # an error response that also carries a result
    "answers-notification",  # notifications are answered (id null)
    "early-update",  # available_commands_update before the session/new answer
    "load-after-answer",  # session/load replays after its answer
    "resume-replays",  # session/resume replays the history
    "terminal-assumed",  # terminal/create to a client that advertised fs but no terminal
    "no-exit",  # keeps running after stdin closed
)
#: With ``--v2`` (an ACP v2 agent): the faults of a v2 turn.
V2_FAULTS = (
    "v2-no-cancelled",  # a cancelled turn goes idle with end_turn
    "v2-fs-request",  # fs/read_text_file, a v1-only request, on a v2 connection
)


class Agent:
    def __init__(self, fault: str | None, v2: bool = False) -> None:
        self.fault = fault
        self.v2 = v2
        self.sessions = 0
        self.history: dict[str, list[str]] = {}
        self.cancels: dict[str, asyncio.Event] = {}
        self.waiting: dict[Any, asyncio.Future[Any]] = {}
        self.capabilities: dict[str, Any] = {}
        self.ids = 0

    def send(self, message: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", **message}) + "\n")
        sys.stdout.flush()

    def update(self, session_id: str, update: dict[str, Any]) -> None:
        self.send({"method": "session/update", "params": {"sessionId": session_id, "update": update}})

    def chunk(self, session_id: str, kind: str, text: str) -> None:
        self.update(session_id, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})

    async def ask(self, method: str, params: dict[str, Any]) -> Any:
        self.ids += 1
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.waiting[self.ids] = future
        self.send({"id": self.ids, "method": method, "params": params})
        return await future

    async def handle(self, message: dict[str, Any]) -> None:
        if "method" not in message:
            future = self.waiting.pop(message.get("id"), None)
            if future is not None and not future.done():
                future.set_result(message.get("result"))
            return
        method, params = message["method"], message.get("params") or {}
        if "id" not in message:
            if self.fault == "answers-notification":
                self.send({"id": None, "result": {}})
            if method == "session/cancel" and self.fault != "hang-on-cancel":
                self.cancels.setdefault(params.get("sessionId"), asyncio.Event()).set()
            return
        rid = message["id"]
        if self.v2 and method == "session/prompt":
            self.sessions += 1
            self.send({"id": rid, "result": {"messageId": f"m-{self.sessions}"}})
            await self.turn_v2(params["sessionId"], params["prompt"][0].get("text", ""), f"a-{self.sessions}")
            return
        try:
            result = await self.answer(method, params)
        except LookupError:
            if self.fault == "wrong-unknown-code":
                self.send({"id": rid, "error": {"code": -32600, "message": "Invalid request"}})
            elif self.fault == "malformed-error":
                self.send(
                    {"id": rid, "result": None, "error": {"code": -32601, "message": "Method not found"}}
                )
            else:
                self.send({"id": rid, "error": {"code": -32601, "message": f"Method not found: {method}"}})
            return
        except ValueError as exc:
            self.send({"id": rid, "error": {"code": -32602, "message": f"Invalid params: {exc}"}})
            return
        self.send({"id": rid, "result": result})
        if method == "session/prompt" and self.fault == "late-update":
            self.chunk(params["sessionId"], "agent_message_chunk", "one more thing")
        if method == "session/load" and self.fault == "load-after-answer":
            self.replay(params["sessionId"])

    async def answer(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize" and self.v2:
            info = {"name": "broken-agent", "version": "1.0"}
            return {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}}
        if method == "initialize":
            self.capabilities = params.get("clientCapabilities") or {}
            asked = params.get("protocolVersion")
            return {
                "protocolVersion": asked if self.fault == "version-echo" else 1,
                "agentCapabilities": {"loadSession": True, "sessionCapabilities": {"resume": {}}},
                "agentInfo": {"name": "broken-agent", "version": "1.0"},
            }
        if method == "session/new":
            if not isinstance(params.get("cwd"), str):
                raise ValueError("session/new needs cwd")
            self.sessions += 1
            session_id = {"reused-session-id": "s-1", "empty-session-id": ""}.get(
                self.fault or "", f"s-{self.sessions}"
            )
            self.history.setdefault(session_id, [])
            if self.fault == "early-update":
                self.update(
                    session_id, {"sessionUpdate": "available_commands_update", "availableCommands": []}
                )
            return {"sessionId": session_id}
        if method == "session/prompt":
            return {"stopReason": await self.turn(params["sessionId"], params["prompt"][0].get("text", ""))}
        if method == "session/load":
            if self.fault != "load-after-answer":
                self.replay(params["sessionId"])
            return {}
        if method == "session/resume":
            if self.fault == "resume-replays":
                self.replay(params["sessionId"])
            return {}
        raise LookupError(method)

    async def turn_v2(self, session_id: str, text: str, message_id: str) -> None:
        cancel = self.cancels[session_id] = asyncio.Event()
        self.update(session_id, {"sessionUpdate": "state_update", "state": "running"})
        reason = "end_turn"
        if text.startswith("sleep"):
            try:
                await asyncio.wait_for(cancel.wait(), 60)
                reason = "end_turn" if self.fault == "v2-no-cancelled" else "cancelled"
            except TimeoutError:
                pass
        else:
            if self.fault == "v2-fs-request":
                await self.ask("fs/read_text_file", {"sessionId": session_id, "path": "/etc/hostname"})
            chunk = {"sessionUpdate": "agent_message_chunk", "messageId": message_id}
            self.update(session_id, {**chunk, "content": {"type": "text", "text": "hello"}})
        self.update(session_id, {"sessionUpdate": "state_update", "state": "idle", "stopReason": reason})

    def replay(self, session_id: str) -> None:
        for text in self.history.get(session_id, []):
            self.chunk(session_id, "user_message_chunk", text)

    async def turn(self, session_id: str, text: str) -> str:
        self.history.setdefault(session_id, []).append(text)
        cancel = self.cancels[session_id] = asyncio.Event()
        if text.startswith("sleep"):
            self.chunk(session_id, "agent_message_chunk", "sleeping")
            try:
                await asyncio.wait_for(cancel.wait(), 60)
            except TimeoutError:
                return "end_turn"
            return "end_turn" if self.fault == "no-cancelled" else "cancelled"
        if text.startswith("permission"):
            call = {"toolCallId": "call-1", "title": "Edit", "kind": "edit", "status": "pending"}
            self.update(session_id, {"sessionUpdate": "tool_call", **call})
            options = [
                {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
            ]
            answer = await self.ask(
                "session/request_permission", {"sessionId": session_id, "toolCall": call, "options": options}
            )
            if (answer or {}).get("outcome", {}).get("outcome") == "cancelled":
                return "end_turn" if self.fault == "permission-cancel-ignored" else "cancelled"
            return "end_turn"
        if self.fault == "fs-without-capability":
            await self.ask("fs/read_text_file", {"sessionId": session_id, "path": "/etc/hostname"})
        if self.fault == "terminal-assumed" and self.capabilities.get("fs"):
            await self.ask("terminal/create", {"sessionId": session_id, "command": "true"})
        self.chunk(session_id, "agent_message_chunk", "hello")
        return "end_turn"


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fault", choices=FAULTS + V2_FAULTS)
    parser.add_argument("--v2", action="store_true")
    args = parser.parse_args()
    agent = Agent(args.fault, args.v2)
    if agent.fault == "stdout-noise":
        print("broken agent 1.0 starting")
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    tasks = set()
    while line := await reader.readline():
        task = asyncio.create_task(agent.handle(json.loads(line)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    if agent.fault == "no-exit":
        await asyncio.sleep(60)


if __name__ == "__main__":
    asyncio.run(main())
