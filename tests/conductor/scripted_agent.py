"""A small scripted agent for the conductor tests; in-process (``ScriptedAgent().builder()``) or a program.

It records every request and notification it receives (:attr:`ScriptedAgent.seen`) and answers a
prompt by its text:

* ``greet``: one chunk ``Hello, world!``;
* ``echo a b c``: the words as chunks ``a``, `` b``, `` c``;
* ``stream N``: ``N`` chunks ``0``, ``1``, ... ``N-1``;
* ``sleep S``: one chunk ``zzz``, then waits ``S`` seconds unless cancelled (``$/cancel_request``:
  answers -32800; ``session/cancel``: stop reason ``cancelled``);
* ``ask``: asks the client ``session/request_permission`` and streams the chosen option id;
* ``ask-withdraw``: asks, then cancels its own request once the client has it, streams what it got.

Every response and chunk carries ``_meta: {"agent": "scripted"}`` plus the prompt's own ``_meta``.
Run as a program (``python scripted_agent.py``) it serves stdin/stdout.
"""

from __future__ import annotations

import asyncio
from typing import Any

from acpio import Agent, RequestCancelled, RequestError
from acpio.jsonrpc import Connection, Dispatch, RequestDispatch, Responder, ResponseDispatch, Unhandled
from acpio.transports import Stdio

PERMISSION = {
    "toolCall": {"toolCallId": "call-1", "title": "Write a file"},
    "options": [
        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ],
}


class ScriptedAgent:
    """The agent's state: what it received, and the events tests wait on."""

    def __init__(self) -> None:
        #: Every request and notification received: ``{"method", "id"?, "params"}``.
        self.seen: list[dict[str, Any]] = []
        self.sleeping = asyncio.Event()
        self.asked = asyncio.Event()
        self.turn_cancelled = asyncio.Event()
        self.sessions = 0

    def methods(self) -> list[str]:
        return [m["method"] for m in self.seen]

    def builder(self, name: str = "scripted-agent") -> Any:
        app = Agent.builder(name=name)

        @app.on_dispatch
        async def record(message: Dispatch, cx: Connection) -> Unhandled | None:
            if isinstance(message, ResponseDispatch):
                return Unhandled(message)
            entry: dict[str, Any] = {"method": message.method, "params": message.params}
            if isinstance(message, RequestDispatch):
                entry["id"] = message.id
            self.seen.append(entry)
            if not isinstance(message, RequestDispatch):
                if message.method == "session/cancel":
                    self.turn_cancelled.set()
                return None
            return await self._answer(message, cx)

        return app

    async def _answer(self, message: RequestDispatch, cx: Connection) -> None:
        responder = message.responder
        params = message.params if isinstance(message.params, dict) else {}
        if message.method == "initialize":
            responder.respond(
                {
                    "protocolVersion": 1,
                    "agentCapabilities": {"loadSession": False},
                    "agentInfo": {"name": "scripted", "version": "1.0"},
                    "_meta": {"agent": "scripted"},
                }
            )
        elif message.method == "session/new":
            self.sessions += 1
            responder.respond({"sessionId": f"s-{self.sessions}", "_meta": {"agent": "scripted"}})
        elif message.method == "session/prompt":
            cx.spawn(self._prompt, cx, responder, params)
        else:
            raise RequestError(-32601, "Method not found", message.method)

    async def _prompt(self, cx: Connection, responder: Responder[Any], params: dict[str, Any]) -> None:
        session = params["sessionId"]
        text = "".join(b.get("text", "") for b in params.get("prompt", []) if isinstance(b, dict))
        meta = {"agent": "scripted", **(params.get("_meta") or {})}
        words = text.split()
        command, args = (words[0], words[1:]) if words else ("greet", [])

        def chunk(piece: str) -> None:
            update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": piece}}
            cx.send_notification("session/update", {"sessionId": session, "update": update, "_meta": meta})

        stop = "end_turn"
        if command == "greet":
            chunk("Hello, world!")
        elif command == "echo":
            for i, word in enumerate(args):
                chunk(word if i == 0 else f" {word}")
        elif command == "stream":
            for i in range(int(args[0])):
                chunk(str(i))
        elif command == "sleep":
            chunk("zzz")
            self.sleeping.set()
            waits = [
                asyncio.ensure_future(responder.wait_cancelled()),
                asyncio.ensure_future(self.turn_cancelled.wait()),
            ]
            done, pending = await asyncio.wait(
                waits, timeout=float(args[0]), return_when=asyncio.FIRST_COMPLETED
            )
            for task in pending:
                task.cancel()
            if responder.cancelled:
                responder.respond_with_error(RequestCancelled())
                return
            if done:
                stop = "cancelled"
        elif command in ("ask", "ask-withdraw"):
            sent = cx.send_request("session/request_permission", {"sessionId": session, **PERMISSION})
            self.asked.set()
            if command == "ask-withdraw":
                await asyncio.sleep(0.05)
                sent.cancel()
            try:
                answer = await sent
                chunk(str(answer["outcome"].get("optionId", answer["outcome"]["outcome"])))
            except RequestError as exc:
                chunk(f"error {exc.code}")
        else:
            chunk(f"unknown command {command!r}")
        responder.respond({"stopReason": stop, "_meta": meta})


if __name__ == "__main__":
    asyncio.run(ScriptedAgent().builder().serve(Stdio()))
