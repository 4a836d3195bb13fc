"""A raw-frame v2 client for testy (in-process, or any transport): the v2 wire as a client sees it.

:class:`V2Peer` is a :class:`~acpio.testing.WirePeer` with the steps of a v2 conversation:
``initialize`` with ``info`` and ``capabilities``, ``session/new``, and :meth:`V2Peer.turn`, which
sends a prompt and collects every message until the turn's idle ``state_update`` (answering
permission requests as told on the way). :func:`v2_testy` serves :func:`testy_component` on an
in-process channel and yields a peer on the other end.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from acpio.agents.testy import TestyOptions
from acpio.agents.testy.serve import testy_component
from acpio.store import SessionStore
from acpio.testing import WirePeer
from acpio.transports import Channel

#: Seconds any single wait may take; generous, for a busy 2-core machine.
TIMEOUT = 20.0

#: What :meth:`V2Peer.turn` answers a permission request: the outcome object (``None``: do not answer).
PermissionAnswer = Callable[[dict[str, Any]], "dict[str, Any] | None"]


def allow(request: dict[str, Any]) -> dict[str, Any]:
    """Pick ``allow-once``."""
    return {"outcome": "selected", "optionId": "allow-once"}


@dataclass
class Turn:
    """What one prompt brought: the answer to ``session/prompt`` and every message until idle."""

    answer: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def updates(self) -> list[dict[str, Any]]:
        """The ``session/update`` payloads (``params.update``), in order."""
        return [m["params"]["update"] for m in self.messages if m.get("method") == "session/update"]

    def kinds(self) -> list[str]:
        """Each update's ``sessionUpdate`` (a state update as ``state_update:<state>``)."""
        return [
            f"state_update:{u['state']}" if u["sessionUpdate"] == "state_update" else u["sessionUpdate"]
            for u in self.updates
        ]

    def text(self) -> str:
        """The text of the agent message chunks, joined."""
        return "".join(
            u["content"]["text"] for u in self.updates if u["sessionUpdate"] == "agent_message_chunk"
        )

    def of(self, kind: str) -> list[dict[str, Any]]:
        """The updates of one ``sessionUpdate`` kind."""
        return [u for u in self.updates if u["sessionUpdate"] == kind]


class V2Peer(WirePeer):
    """A v2 client on raw frames (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ids = itertools.count(1000)
        #: Messages read while waiting for something else (kept for later waits).
        self.backlog: list[dict[str, Any]] = []

    async def call(self, method: str, params: Any) -> dict[str, Any]:
        """Send a request; its response (result or error), other messages kept in the backlog."""
        request_id = next(self.ids)
        self.request(method, params, request_id)
        answer: dict[str, Any] = await self.response_to(request_id, self.backlog)
        return answer

    async def next_message(self) -> dict[str, Any]:
        """The next message: from the backlog first, else from the wire."""
        if self.backlog:
            return self.backlog.pop(0)
        message: dict[str, Any] = await self.recv()
        return message

    async def initialize(
        self, capabilities: dict[str, Any] | None = None, version: int = 2
    ) -> dict[str, Any]:
        """``initialize`` as a v2 client; the result."""
        params = {"protocolVersion": version, "info": {"name": "v2-test-client", "version": "1.0"}}
        answer = await self.call("initialize", params | {"capabilities": capabilities or {}})
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    async def new_session(self, cwd: str) -> str:
        """``session/new``; the session id."""
        answer = await self.call("session/new", {"cwd": cwd})
        assert "result" in answer, answer
        session_id: str = answer["result"]["sessionId"]
        return session_id

    async def turn(
        self,
        session_id: str,
        text: str,
        *,
        permission: PermissionAnswer = allow,
        on_message: Callable[[dict[str, Any]], None] | None = None,
        blocks: Sequence[dict[str, Any]] = (),
    ) -> Turn:
        """Prompt ``text`` and read until the turn's idle ``state_update`` (or an error answer)."""
        request_id = next(self.ids)
        prompt = [{"type": "text", "text": text}, *blocks]
        self.request("session/prompt", {"sessionId": session_id, "prompt": prompt}, request_id)
        turn = Turn(answer={})
        async with asyncio.timeout(TIMEOUT):
            while True:
                message = await self.next_message()
                if message.get("id") == request_id and "method" not in message:
                    turn.answer = message
                    if "error" in message:
                        return turn
                    continue
                turn.messages.append(message)
                if on_message is not None:
                    on_message(message)
                if message.get("method") == "session/request_permission":
                    outcome = permission(message)
                    if outcome is not None:
                        self.respond(message, {"outcome": outcome})
                update = message.get("params", {}).get("update", {}) if "method" in message else {}
                if update.get("sessionUpdate") == "state_update" and update.get("state") == "idle":
                    return turn


@asynccontextmanager
async def v2_testy(
    options: TestyOptions | None = None, store: SessionStore | None = None, protocols: tuple[int, ...] = (2,)
) -> AsyncIterator[V2Peer]:
    """testy for ``protocols`` served in-process; a :class:`V2Peer` on the client's end."""
    ours, theirs = Channel.duplex()
    served = asyncio.create_task(testy_component(options, store, protocols).serve(ours))
    peer = V2Peer(theirs, timeout=TIMEOUT)
    try:
        yield peer
    finally:
        await peer.close()
        async with asyncio.timeout(TIMEOUT):
            await served
