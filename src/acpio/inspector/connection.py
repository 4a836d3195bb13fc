"""The inspected connection: the agent's transport, the client's side, and the page's commands.

An :class:`InspectedConnection` moves frames between the agent and the client, recording each one in
its :class:`~acpio.inspector.record.Inspection`. The client is either

* **the page** (``acpio inspect -- AGENT``): the page sends requests and notifications
  (:meth:`~InspectedConnection.send`), and the agent's requests are answered by the
  :class:`~acpio.inspector.answers.Answers` policies or, when they hold one, by the person
  (:meth:`~InspectedConnection.answer`); or
* **an editor** (``acpio inspect --proxy -- AGENT``, the editor's agent command): every frame is passed
  on unchanged, both ways; the page watches, may pause the traffic (:meth:`~InspectedConnection.pause`)
  and may send requests of its own, whose answers stay in the inspector.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
from typing import Any

import orjson

from acpio.errors import InternalError
from acpio.inspector.answers import Answer, Answers
from acpio.inspector.record import Inspection
from acpio.transports.base import OversizedFrame, Transport

__all__ = ["InspectedConnection"]

_log = logging.getLogger("acpio.inspector")


class InspectedConnection:
    """The agent's ``agent`` transport, driven by the page (``answers``) or by an ``editor`` transport.

    Give exactly one of ``answers`` (the page is the client) and ``editor`` (proxy mode).
    """

    def __init__(
        self,
        inspection: Inspection,
        agent: Transport,
        *,
        answers: Answers | None = None,
        editor: Transport | None = None,
    ) -> None:
        if (answers is None) == (editor is None):
            raise ValueError("give answers (the page drives the agent) or editor (proxy mode), not both")
        self.inspection = inspection
        self.answers = answers
        self._agent = agent
        self._editor = editor
        self._ids = itertools.count()
        #: Requests the page sent (their answers stay here, in proxy mode).
        self._own: set[bytes] = set()
        #: The agent's requests waiting for the person: id (as JSON) -> (frame number, method, params).
        self._held: dict[bytes, tuple[int, str, Any]] = {}
        self._running = asyncio.Event()
        self._running.set()
        self._tasks: set[asyncio.Task[None]] = set()
        self.ended = asyncio.Event()

    @property
    def proxy(self) -> bool:
        """Whether an editor drives the agent (proxy mode)."""
        return self._editor is not None

    @property
    def paused(self) -> bool:
        """Whether the traffic is held (proxy mode: nothing passes either way until resumed)."""
        return not self._running.is_set()

    async def run(self) -> None:
        """Move frames until the agent's output ends (or, in proxy mode, the editor's does)."""
        pumps = [asyncio.create_task(self._from_agent())]
        if self._editor is not None:
            pumps.append(asyncio.create_task(self._from_editor()))
        try:
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for pump in pumps:
                pump.cancel()
            for pump in pumps:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await pump
            self.ended.set()

    # --- the page's commands ------------------------------------------------------------------

    def send(self, method: str, params: Any, *, notification: bool = False) -> Any:
        """Send a request (its id is returned) or a notification to the agent, as the client."""
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        id: Any = None
        if not notification:
            number = next(self._ids)
            id = f"inspect-{number}" if self.proxy else number
            message["id"] = id
            self._own.add(orjson.dumps(id))
        if params is not None:
            message["params"] = params
        self._to_agent(orjson.dumps(message))
        return id

    def send_raw(self, text: str) -> None:
        """Send ``text`` to the agent as it is (one line), to see how the agent takes it."""
        self._to_agent(text.replace("\n", " ").encode())

    async def answer(self, id: Any, *, result: Any = None, error: Any = None, perform: bool = False) -> None:
        """Answer the held agent request ``id``: with ``result``, ``error``, or by doing it (``perform``)."""
        key = orjson.dumps(id)
        held = self._held.pop(key, None)
        if held is None:
            raise LookupError(f"no request {id!r} of the agent is waiting for an answer")
        seq, method, params = held
        if perform:
            assert self.answers is not None
            reply = await self.answers.perform(method, params)
        else:
            reply = Answer(result=result, error=error)
        self.inspection.answered(seq)
        self._reply(id, reply)

    def pause(self, paused: bool) -> None:
        """Hold the traffic (``True``) or let it pass again (``False``)."""
        if paused:
            self._running.clear()
        else:
            self._running.set()
        self.inspection.announce("paused", paused=paused)

    def held(self) -> list[Any]:
        """The ids of the agent's requests waiting for the person."""
        return [orjson.loads(key) for key in self._held]

    # --- moving frames ------------------------------------------------------------------------

    def _to_agent(self, frame: bytes) -> None:
        self.inspection.record("client", frame)
        self._agent.send(frame)

    def _reply(self, id: Any, reply: Answer) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": id}
        if reply.error is not None:
            message["error"] = reply.error
        else:
            message["result"] = reply.result
        self._to_agent(orjson.dumps(message))

    async def _from_agent(self) -> None:
        while (frame := await self._agent.receive()) is not None:
            await self._running.wait()
            message = _decoded(frame)
            id_key = orjson.dumps(message["id"]) if message is not None and "id" in message else None
            if self._editor is not None:
                own = id_key in self._own and "method" not in (message or {})
                self.inspection.record("agent", frame)
                if own:
                    self._own.discard(id_key)
                elif not isinstance(frame, OversizedFrame):
                    self._editor.send(frame)
                continue
            if message is None or "method" not in message or id_key is None:
                self.inspection.record("agent", frame)
                continue
            self._agent_request(frame, id_key, message)

    def _agent_request(self, frame: bytes | OversizedFrame, id_key: bytes, message: dict[str, Any]) -> None:
        assert self.answers is not None
        method, params = message["method"], message.get("params")
        if not isinstance(method, str):
            self.inspection.record("agent", frame)
            return
        if self.answers.holds(method):
            seq = self.inspection.record("agent", frame, held=True)
            self._held[id_key] = (seq, method, params)
            return
        self.inspection.record("agent", frame)
        task = asyncio.create_task(self._by_policy(message["id"], method, params))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _by_policy(self, id: Any, method: str, params: Any) -> None:
        assert self.answers is not None
        try:
            reply = await self.answers.by_policy(method, params)
        except Exception:
            _log.exception("Answering %s failed", method)
            reply = Answer.failed(InternalError(message=f"the inspector failed to answer {method}"))
        self._reply(id, reply)

    async def _from_editor(self) -> None:
        assert self._editor is not None
        while (frame := await self._editor.receive()) is not None:
            await self._running.wait()
            self.inspection.record("client", frame)
            if not isinstance(frame, OversizedFrame):
                self._agent.send(frame)

    async def aclose(self) -> None:
        """Stop answering: end the policy tasks and the commands the agent started."""
        for task in list(self._tasks):
            task.cancel()
        if self.answers is not None:
            await self.answers.aclose()


def _decoded(frame: bytes | OversizedFrame) -> dict[str, Any] | None:
    if isinstance(frame, OversizedFrame):
        return None
    try:
        message = orjson.loads(frame)
    except orjson.JSONDecodeError:
        return None
    return message if isinstance(message, dict) else None
