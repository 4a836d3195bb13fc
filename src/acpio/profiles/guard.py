"""Watching a connection as an editor would: :class:`ProfileGuard` (sans-I/O) and :class:`GuardedTransport`.

The guard is shown every message the client sends and receives. It knows which sessions the
editor has registered (a ``session/new`` answer read, a ``session/load`` or ``session/resume``
sent), so it sees a ``session/update`` that comes too early, and it knows the capabilities the
editor advertised, so it sees a request the editor would refuse. Each such message is a problem:
kept in :attr:`ProfileGuard.problems` and issued as :class:`~acpio.AcpSpecificationWarning`. Where
the editor drops the message (Zed and an early update), :meth:`ProfileGuard.incoming` says so and
:class:`GuardedTransport` drops it too, so a client behind it sees what the editor would.
"""

from __future__ import annotations

import warnings
from typing import Any

import orjson

from acpio.profiles.profile import EditorProfile
from acpio.profiles.warning import AcpSpecificationWarning
from acpio.transports.base import OversizedFrame, Transport

__all__ = ["GuardedTransport", "ProfileGuard"]

#: Requests that register the session they name before their answer (Zed, zed#54431).
_REGISTERING = frozenset({"session/load", "session/resume"})


class ProfileGuard:
    """What ``profile``'s editor would make of each message (see the module docstring).

    With ``warn`` (the default) each problem is also issued as :class:`~acpio.AcpSpecificationWarning`.
    """

    def __init__(self, profile: EditorProfile, *, warn: bool = True) -> None:
        self.profile = profile
        self.warn = warn
        #: Each problem seen, in order: what arrived, what the editor does with it and the source.
        self.problems: list[str] = []
        #: The same problems by kind: ``early-session-update``, ``not-advertised``.
        self.by_kind: dict[str, list[str]] = {}
        self._pending_new: set[Any] = set()
        self._known: set[str] = set()

    def outgoing(self, message: Any) -> None:
        """Show the guard a message the client sends."""
        if not isinstance(message, dict) or "id" not in message:
            return
        method = message.get("method")
        if method == "session/new":
            self._pending_new.add(message["id"])
        elif method in _REGISTERING:
            session_id = (message.get("params") or {}).get("sessionId")
            if isinstance(session_id, str):
                self._known.add(session_id)

    def incoming(self, message: Any) -> bool:
        """Show the guard a message the client received; ``False`` when the editor would drop it."""
        if not isinstance(message, dict):
            return True
        method = message.get("method")
        if method is None:
            if message.get("id") in self._pending_new:
                self._pending_new.discard(message.get("id"))
                session_id = (message.get("result") or {}).get("sessionId")
                if isinstance(session_id, str):
                    self._known.add(session_id)
            return True
        if "id" in message and isinstance(method, str) and not self.profile.advertises(method):
            self._problem(
                "not-advertised",
                f"the agent sent {method}, which {self.profile.name} did not advertise in its "
                f"clientCapabilities {orjson.dumps(self.profile.client_capabilities).decode()}; it answers "
                "-32601 (send a request only for a capability the client advertised)",
            )
            return True
        if method == "session/update" and self._pending_new:
            session_id = (message.get("params") or {}).get("sessionId")
            behaviour = self.profile.behaviour("early-session-update")
            if session_id not in self._known and behaviour is not None:
                what = {"drop": "drops", "hang": "hangs on"}.get(behaviour.effect, "mishandles")
                self._problem(
                    "early-session-update",
                    f"{self.profile.name} {what} this session/update of session {session_id!r}: it arrived "
                    f"before the session/new answer ({behaviour.sources[0]}); answer session/new first, "
                    "then send the session's updates",
                )
                return behaviour.effect != "drop"
        return True

    def _problem(self, kind: str, text: str) -> None:
        self.problems.append(text)
        self.by_kind.setdefault(kind, []).append(text)
        if self.warn:
            warnings.warn(AcpSpecificationWarning(text), stacklevel=3)


class GuardedTransport:
    """``inner``, with every frame shown to ``guard``; an incoming frame the editor drops is dropped."""

    def __init__(self, inner: Transport, guard: ProfileGuard) -> None:
        self._inner = inner
        self.guard = guard

    def __repr__(self) -> str:
        return f"GuardedTransport({self._inner!r}, {self.guard.profile.profile})"

    async def receive(self) -> bytes | OversizedFrame | None:
        """The next frame of ``inner`` that the editor would not drop."""
        while True:
            frame = await self._inner.receive()
            if not isinstance(frame, bytes) or self.guard.incoming(_decoded(frame)):
                return frame

    def send(self, frame: bytes) -> None:
        """Show ``frame`` to the guard, then queue it on ``inner``."""
        self.guard.outgoing(_decoded(frame))
        self._inner.send(frame)

    async def drain(self) -> None:
        """Wait until ``inner`` wrote every queued frame."""
        await self._inner.drain()

    async def aclose(self) -> None:
        """Close ``inner``."""
        await self._inner.aclose()


def _decoded(frame: bytes) -> Any:
    try:
        return orjson.loads(frame)
    except orjson.JSONDecodeError:
        return None
