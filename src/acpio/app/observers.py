"""Several clients on one session (unstable): an :class:`~acpio.app.AgentApp`'s observers.

A client attaches to a session open on another connection with ``_acpio/session/attach``
(:mod:`acpio.session.attach` has the messages and the client's side). :class:`SessionObservers`
replays the session's turns to it, then forwards each ``session/update`` the session's own
connection is sent, as sent, and tells the observers each prompt, each turn's end and the session's
close. The replay and the start of the forwarding happen in one step of the event loop: an observer
misses no update and sees none twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import orjson

from acpio.app.app_session import AppSession
from acpio.errors import AcpError, ConnectionClosed, InvalidParams, InvalidRequest, ResourceNotFound
from acpio.jsonrpc import Builder, Connection
from acpio.jsonrpc.messages import RawJson
from acpio.schema import ContentBlock, SessionNotification, SessionUpdate, UserMessageChunk
from acpio.session.attach import (
    ATTACH_ROLES,
    AttachedSessionClosed,
    AttachedTurnEnded,
    AttachSessionRequest,
    AttachSessionResponse,
    DetachSessionRequest,
    DetachSessionResponse,
)

__all__ = ["SessionObservers"]

_UPDATE = "session/update"


class SessionObservers:
    """The connections watching each open session, and the handlers of ``_acpio/session/*``."""

    def __init__(self, sessions: Callable[[str], AppSession | None]) -> None:
        self._sessions = sessions
        #: Session id -> the connections watching it, in the order they attached.
        self._watching: dict[str, list[Connection]] = {}
        #: The observers being waited for: sent more than they read (see :meth:`_keep_up`).
        self._behind: set[Connection] = set()

    def register(self, builder: Builder[Any]) -> None:
        """Serve attach and detach, forward what is sent, forget the observers that leave."""
        builder.on_request(self.attach)
        builder.on_request(self.detach)
        builder.on_send_notification(self._forward)
        builder.on_close(self._left)

    def watches(self, cx: Connection, session_id: str) -> bool:
        """Whether ``cx`` is attached to ``session_id`` as an observer."""
        return any(observer is cx for observer in self._watching.get(session_id, ()))

    # --- the handlers -------------------------------------------------------------------------------

    async def attach(self, request: AttachSessionRequest, cx: Connection) -> AttachSessionResponse:
        """``_acpio/session/attach``: replay the session, then forward its updates here."""
        if request.role not in ATTACH_ROLES:
            raise InvalidParams(
                {"role": request.role, "roles": list(ATTACH_ROLES)},
                message=f"Role {request.role!r} is not served: attach as one of {', '.join(ATTACH_ROLES)}",
            )
        session = self._sessions(request.session_id)
        if session is None or session.cx.closed:
            raise ResourceNotFound(
                {"sessionId": request.session_id},
                message="The session is not open on this agent: attach where it runs, or open it "
                "with session/load",
            )
        if session.cx is cx or self.watches(cx, session.id):
            raise InvalidRequest(
                {"sessionId": session.id}, message="This connection already has the session open"
            )
        # No await from here to the answer: the replay and the live updates meet without a gap.
        for exchange in session.history:
            self._replay(cx, session.id, exchange.prompt, exchange.updates)
        turn = session.current
        if turn is not None:
            current = turn.exchange()
            self._replay(cx, session.id, current.prompt, current.updates)
        self._watching.setdefault(session.id, []).append(cx)
        return AttachSessionResponse(running=session.turn is not None)

    async def detach(self, request: DetachSessionRequest, cx: Connection) -> DetachSessionResponse:
        """``_acpio/session/detach``: forward nothing more of the session here."""
        self._drop(request.session_id, cx)
        return DetachSessionResponse()

    # --- what the app tells the observers ---------------------------------------------------------

    def prompted(self, session_id: str, prompt: Iterable[ContentBlock]) -> None:
        """A turn starts: its prompt goes to the observers as ``user_message_chunk`` updates."""
        for observer in self._live(session_id):
            for block in prompt:
                notification = SessionNotification(
                    session_id=session_id, update=UserMessageChunk(content=block)
                )
                observer.send_notification(notification)

    def turn_ended(self, session_id: str, stop_reason: str | None, error: str | None = None) -> None:
        """A turn was answered: ``_acpio/session/turn_ended`` to the observers."""
        ended = AttachedTurnEnded(session_id=session_id, stop_reason=stop_reason, error=error)
        for observer in self._live(session_id):
            observer.send_notification(ended)

    def closed(self, session_id: str) -> None:
        """The session closed: ``_acpio/session/closed`` to the observers, who watch it no more."""
        for observer in self._live(session_id):
            observer.send_notification(AttachedSessionClosed(session_id=session_id))
        self._watching.pop(session_id, None)

    # --- the plumbing -------------------------------------------------------------------------------

    def _replay(
        self,
        cx: Connection,
        session_id: str,
        prompt: Sequence[ContentBlock],
        updates: Sequence[SessionUpdate],
    ) -> None:
        for update in [*(UserMessageChunk(content=block) for block in prompt), *updates]:
            cx.send_notification(SessionNotification(session_id=session_id, update=update))

    def _live(self, session_id: str) -> list[Connection]:
        """The session's observers still connected (the others are forgotten)."""
        observers = self._watching.get(session_id)
        if not observers:
            return []
        live = [observer for observer in observers if not observer.closed]
        if len(live) != len(observers):
            self._watching[session_id] = live
        return live

    def _forward(self, cx: Connection, method: str, params: RawJson | None) -> None:
        """The send observer: a copy of each update sent to the session's own connection, to its observers."""
        if method != _UPDATE or not self._watching or type(params) is not RawJson:
            return
        source = params.source
        if type(source) is dict:
            session_id = source.get("sessionId")
        elif source is None:
            found = orjson.loads(params.json)
            session_id = found.get("sessionId") if isinstance(found, dict) else None
        else:
            session_id = getattr(source, "session_id", None)
        if type(session_id) is not str or session_id not in self._watching:
            return
        session = self._sessions(session_id)
        if session is None or session.cx is not cx:  # a copy to an observer, or a replay
            return
        for observer in self._live(session_id):
            with contextlib.suppress(ConnectionClosed):  # it left meanwhile: forgotten next time
                observer.send_notification(method, params)
                self._keep_up(observer)

    def _keep_up(self, observer: Connection) -> None:
        """Wait for the observer to read, beside the turn (which waits for its own client only).

        ``drain()`` is what bounds an observer's backlog: a remote connection whose client reads
        nothing for its ``stall_timeout`` is closed there.
        """
        if observer in self._behind:
            return
        self._behind.add(observer)

        async def drain() -> None:
            try:
                await observer.drain()
            except AcpError:  # the observer stalled or left: its connection ended, the session goes on
                pass
            finally:
                self._behind.discard(observer)

        observer.spawn(drain())

    def _drop(self, session_id: str, cx: Connection) -> None:
        observers = self._watching.get(session_id)
        if observers is None:
            return
        kept = [observer for observer in observers if observer is not cx]
        if kept:
            self._watching[session_id] = kept
        else:
            del self._watching[session_id]

    async def _left(self, cx: Connection) -> None:
        """An observer's connection ended: it watches nothing more (the sessions go on)."""
        for session_id in list(self._watching):
            self._drop(session_id, cx)
