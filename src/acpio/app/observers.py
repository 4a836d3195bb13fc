"""Several clients on one session (unstable): an :class:`~acpio.app.AgentApp`'s attached clients.

A client attaches to a session open on another connection with ``_acpio/session/attach``
(:mod:`acpio.session.attach` has the messages and the client's side), as an observer or a
controller. :class:`SessionObservers` replays the session's turns to it, then forwards each
``session/update`` the session's own connection is sent, as sent, and tells the attached clients
each prompt, each turn's end and the session's close. The replay and the start of the forwarding
happen in one step of the event loop: an attached client misses no update and sees none twice.
It also knows who controls each session: who a turn's requests go to
(:meth:`SessionObservers.controllers`), and who takes the session over when its own client leaves
(:meth:`SessionObservers.heir`).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from acpio.app.app_session import AppSession
from acpio.app.first_answer import Askers, Race
from acpio.app.history import unread_updates
from acpio.capabilities import ClientFeatures
from acpio.errors import (
    AcpError,
    ConnectionClosed,
    InvalidParams,
    InvalidRequest,
    RequestError,
    ResourceNotFound,
)
from acpio.jsonrpc import Builder, Connection
from acpio.jsonrpc.messages import RawJson
from acpio.schema import (
    ContentBlock,
    PromptResponse,
    SessionNotification,
    SessionUpdate,
    StopReason,
    UserMessageChunk,
)
from acpio.session.attach import (
    ATTACH_ROLES,
    AttachedSessionClosed,
    AttachedTurnEnded,
    AttachRole,
    AttachSessionRequest,
    AttachSessionResponse,
    DetachSessionRequest,
    DetachSessionResponse,
)
from acpio.store.open_sessions import sent_session_id

__all__ = ["SessionObservers"]

_UPDATE = "session/update"


class SessionObservers:
    """The connections watching each open session, and the handlers of ``_acpio/session/*``."""

    def __init__(
        self,
        sessions: Callable[[str], AppSession | None],
        features: Callable[[Connection], ClientFeatures],
        route: Callable[[str], Awaitable[dict[str, str] | None]] | None = None,
    ) -> None:
        self._sessions = sessions
        self._features = features
        self._route = route
        #: Session id -> its turn's requests still unanswered (a controller attaching is asked too).
        self._waiting: dict[str, set[Race[Any]]] = {}
        #: Session id -> the connections attached to it and their roles, in the order they attached.
        self._watching: dict[str, dict[Connection, AttachRole]] = {}
        #: The observers being waited for: sent more than they read (see :meth:`_keep_up`).
        self._behind: set[Connection] = set()
        #: Session id -> the connection whose prompt the running turn answers.
        self._prompters: dict[str, Connection] = {}
        #: Session id -> the controller that took it over (:meth:`heir`): told what attached clients are.
        self._heirs: dict[str, Connection] = {}

    def register(self, builder: Builder[Any]) -> None:
        """Serve attach and detach, forward what is sent, forget the observers that leave."""
        builder.on_request(self.attach)
        builder.on_request(self.detach)
        builder.on_send_notification(self._forward)
        builder.on_close(self._left)

    def role(self, cx: Connection, session_id: str) -> AttachRole | None:
        """How ``cx`` is attached to ``session_id`` (``None``: it is not)."""
        return self._watching.get(session_id, {}).get(cx)

    def attached(self, cx: Connection, session_id: str, *, control: bool) -> bool:
        """Whether ``cx`` may act on the session as an attached client: a controller prompting or cancelling.

        Raises ``-32600`` for what its role does not allow; ``False`` when it is not attached.
        """
        role = self.role(cx, session_id)
        if role is None:
            return False
        if role == "controller" and control:
            return True
        raise InvalidRequest(
            {"sessionId": session_id, "role": role},
            message=f"This connection is attached to the session as {role}: "
            + (
                "a controller may prompt and cancel; only the session's own client changes its settings"
                if role == "controller"
                else "an observer watches; attach as controller to prompt or cancel"
            ),
        )

    def askers(self, session_id: str, owner: Connection) -> Askers:
        """Who a turn of the session asks its permissions and forms: ``owner`` and the controllers."""
        waiting = self._waiting.setdefault(session_id, set())
        return Askers(owner, session_id, functools.partial(self._deciders, session_id), waiting)

    def _deciders(self, session_id: str) -> list[tuple[Connection, ClientFeatures]]:
        return [(cx, self._features(cx)) for cx in self.controllers(session_id)]

    def controllers(self, session_id: str) -> list[Connection]:
        """The session's controllers still connected, in the order they attached."""
        attached = self._watching.get(session_id, {})
        return [cx for cx, role in attached.items() if role == "controller" and not cx.closed]

    def heir(self, session_id: str) -> Connection | None:
        """The controller that takes the session over when its own client left (no longer attached)."""
        for cx in self.controllers(session_id):
            self._drop(session_id, cx)
            self._heirs[session_id] = cx
            return cx
        return None

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
            route = await self._route(request.session_id) if self._route is not None else None
            if route is not None:
                cookies = "; ".join(f"{name}={value}" for name, value in route.items())
                raise ResourceNotFound(
                    {"sessionId": request.session_id, "route": route},
                    message="The session runs on another server of this deployment: connect again "
                    f"through the load balancer with the cookie {cookies} and attach there",
                )
            raise ResourceNotFound(
                {"sessionId": request.session_id},
                message="The session is not open on this agent: attach where it runs, or open it "
                "with session/load",
            )
        if session.cx is cx or self.role(cx, session.id) is not None:
            raise InvalidRequest(
                {"sessionId": session.id}, message="This connection already has the session open"
            )
        # No await from here to the answer: the replay and the live updates meet without a gap.
        exchanges = list(session.history)
        if session.current is not None:
            exchanges.append(session.current.exchange())
        for exchange in exchanges:
            self._replay(cx, session.id, exchange.prompt, unread_updates(exchange))
        role: AttachRole = "controller" if request.role == "controller" else "observer"
        self._watching.setdefault(session.id, {})[cx] = role
        if role == "controller":  # asked what the turn waits for too, after the replay
            for race in list(self._waiting.get(session.id, ())):
                race.join(cx, self._features(cx))
        return AttachSessionResponse(running=session.turn is not None)

    async def detach(self, request: DetachSessionRequest, cx: Connection) -> DetachSessionResponse:
        """``_acpio/session/detach``: forward nothing more of the session here, ask it nothing more."""
        self._drop(request.session_id, cx)
        for race in list(self._waiting.get(request.session_id, ())):
            race.leave(cx)
        return DetachSessionResponse()

    # --- what the app tells the observers ---------------------------------------------------------

    def prompted(self, session_id: str, prompt: Iterable[ContentBlock], by: Connection) -> None:
        """A turn starts: its prompt goes to the session's other clients as ``user_message_chunk`` updates."""
        self._prompters[session_id] = by
        for observer in self._others(session_id, by):
            for block in prompt:
                notification = SessionNotification(
                    session_id=session_id, update=UserMessageChunk(content=block)
                )
                observer.send_notification(notification)

    def turn_ended(self, session_id: str, stop_reason: str | None, error: str | None = None) -> None:
        """A turn was answered: ``_acpio/session/turn_ended`` to the attached clients.

        The session's own client is told too when another client's prompt started the turn.
        """
        ended = AttachedTurnEnded(session_id=session_id, stop_reason=stop_reason, error=error)
        by = self._prompters.pop(session_id, None)
        session = self._sessions(session_id)
        own_prompt = by is None or (session is not None and by is session.cx)
        if own_prompt and session is not None and self._heirs.get(session_id) is session.cx:
            own_prompt = False  # an heir reads turns as a controller does
        for observer in self._live(session_id) if own_prompt else self._others(session_id, None):
            with contextlib.suppress(ConnectionClosed):
                observer.send_notification(ended)

    def turn_answered(self, session_id: str, answer: PromptResponse | RequestError | None) -> None:
        """Tell the attached clients how the turn was answered (``None``: its connection ended)."""
        if isinstance(answer, PromptResponse):
            reason = answer.stop_reason
            self.turn_ended(session_id, reason.value if isinstance(reason, StopReason) else reason)
        else:
            self.turn_ended(session_id, None, "the connection ended" if answer is None else answer.message)

    def closed(self, session_id: str) -> None:
        """The session closed: ``_acpio/session/closed`` to the observers, who watch it no more."""
        for observer in self._live(session_id):
            observer.send_notification(AttachedSessionClosed(session_id=session_id))
        self._watching.pop(session_id, None)
        self._waiting.pop(session_id, None)
        self._prompters.pop(session_id, None)
        self._heirs.pop(session_id, None)

    # --- the plumbing -------------------------------------------------------------------------------

    def _replay(
        self,
        cx: Connection,
        session_id: str,
        prompt: Sequence[ContentBlock],
        updates: Sequence[SessionUpdate],
    ) -> None:
        # one model at a time: a turn's history keeps its updates small until someone reads them
        for update in itertools.chain((UserMessageChunk(content=block) for block in prompt), updates):
            cx.send_notification(SessionNotification(session_id=session_id, update=update))

    def _live(self, session_id: str) -> list[Connection]:
        """The session's attached clients still connected (the others are forgotten)."""
        observers = self._watching.get(session_id)
        if not observers:
            return []
        live = [observer for observer in observers if not observer.closed]
        if len(live) != len(observers):
            self._watching[session_id] = {cx: observers[cx] for cx in live}
        return live

    def _others(self, session_id: str, but: Connection | None) -> list[Connection]:
        """The session's clients (its own first, then the attached ones) still connected, but ``but``."""
        session = self._sessions(session_id)
        own = [session.cx] if session is not None and not session.cx.closed else []
        return [cx for cx in [*own, *self._live(session_id)] if cx is not but]

    def _forward(self, cx: Connection, method: str, params: RawJson | None) -> None:
        """The send observer: a copy of each update sent to the session's own connection, to its observers."""
        if method != _UPDATE or not self._watching or type(params) is not RawJson:
            return
        session_id = sent_session_id(params)
        if session_id is None or session_id not in self._watching:
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
        observers.pop(cx, None)
        if not observers:
            del self._watching[session_id]

    async def _left(self, cx: Connection) -> None:
        """An observer's connection ended: it watches nothing more (the sessions go on)."""
        for session_id in list(self._watching):
            self._drop(session_id, cx)
