"""Several clients on one session (unstable): the ``_acpio/session/*`` messages, observers and controllers.

An extension of acpio's, not of ACP (the spec's multi-client RFD has not settled): a client
attaches to a session open on another connection of the same agent, as an observer (it watches) or
a controller (it may also prompt, cancel, and answer the turn's permission requests and forms;
:class:`ControlledSession`). The agent replays the session so far as ``session/update``
notifications, answers, then forwards every update of the session live (the prompts of the other
clients as ``user_message_chunk``), tells the end of each turn with ``_acpio/session/turn_ended``,
a request another client answered first with ``_acpio/session/request_resolved``, and the end of
the session with ``_acpio/session/closed``. Names and shapes may change with the spec.
"""

from __future__ import annotations

from typing import Any, Literal, Self, TypeAlias

from acpio.errors import AcpError, ConnectionClosed, RequestError
from acpio.extensions import ExtensionNotification, ExtensionRequest, ExtensionResponse
from acpio.jsonrpc import Connection, RequestId
from acpio.schema import ResumeSessionResponse, SessionNotification
from acpio.session.active import ActiveSession
from acpio.session.messages import (
    CreateElicitationMessage,
    PromptContent,
    RequestPermissionMessage,
    SessionMessage,
    TurnEnded,
)
from acpio.session.routing import Routing

__all__ = [
    "ATTACH_ROLES",
    "AttachRole",
    "AttachSessionRequest",
    "AttachSessionResponse",
    "AttachedRequestResolved",
    "AttachedSession",
    "AttachedSessionClosed",
    "AttachedTurnEnded",
    "ControlledItem",
    "ControlledSession",
    "DetachSessionRequest",
    "DetachSessionResponse",
    "ObservedSession",
    "SessionEnded",
    "control_session",
    "observe_session",
    "route_cookies",
]

#: How a client attaches: ``observer`` watches; ``controller`` may also prompt, cancel and answer.
AttachRole: TypeAlias = Literal["observer", "controller"]
#: The roles a client may attach with.
ATTACH_ROLES: tuple[AttachRole, ...] = ("observer", "controller")


class AttachSessionResponse(ExtensionResponse):
    """The answer to ``_acpio/session/attach``: the replay came before it, the live updates follow it."""

    #: Whether a turn was running when the client attached (its updates so far were replayed).
    running: bool = False


class AttachSessionRequest(ExtensionRequest, method="_acpio/session/attach", response=AttachSessionResponse):
    """``_acpio/session/attach`` (unstable): watch a session open on another connection of the agent."""

    session_id: str
    #: ``"observer"`` or ``"controller"`` (:data:`ATTACH_ROLES`); others are refused (``-32602``).
    role: str = "observer"


class DetachSessionResponse(ExtensionResponse):
    """The answer to ``_acpio/session/detach``."""


class DetachSessionRequest(ExtensionRequest, method="_acpio/session/detach", response=DetachSessionResponse):
    """``_acpio/session/detach`` (unstable): stop watching the session (leaving it running)."""

    session_id: str


class AttachedTurnEnded(ExtensionNotification, method="_acpio/session/turn_ended"):
    """``_acpio/session/turn_ended``: a turn of the watched session was answered.

    ``stop_reason`` is the answer's (``end_turn``, ``cancelled``...); ``None`` when the turn was
    answered with an error, whose message is ``error``.
    """

    session_id: str
    stop_reason: str | None = None
    error: str | None = None


class AttachedSessionClosed(ExtensionNotification, method="_acpio/session/closed"):
    """``_acpio/session/closed``: the watched session was closed at the agent (its client left, say)."""

    session_id: str


class AttachedRequestResolved(ExtensionNotification, method="_acpio/session/request_resolved"):
    """``_acpio/session/request_resolved``: another client answered a request this one was sent too.

    ``request_id`` is the id of this connection's copy of the request (``method``: a
    ``session/request_permission``, an ``elicitation/create``); ``result`` is the answer that won,
    or ``error`` its message when the first answer was an error. The agent ignores what this client
    answers to it now.
    """

    session_id: str
    request_id: RequestId
    method: str
    result: Any = None
    error: str | None = None


def route_cookies(error: RequestError) -> dict[str, str] | None:
    """The cookies that route a new connection to the server where the session runs, if ``error`` gives them.

    An attach sent to a server behind a load balancer where the session does not run is refused
    with ``-32002`` and, when the store knows the server holding the session's lease, its affinity
    cookie (``data.route``: ``{"acpio-server": "a"}``). Connect again through the balancer with
    those cookies (``RemoteAgent(url, cookies=...)``) and attach there.
    """
    data = error.data
    route = data.get("route") if isinstance(data, dict) else None
    if not isinstance(route, dict) or not all(isinstance(v, str) for v in route.values()):
        return None
    return {str(name): str(value) for name, value in route.items()}


class SessionEnded(ConnectionClosed):
    """The watched session was closed at the agent, or the connection ended: nothing more will come."""


class AttachedSession:
    """What an observer and a controller share: the session's id, :attr:`replay`, and detaching."""

    def __init__(self, session: ActiveSession, response: AttachSessionResponse) -> None:
        #: The session as this connection reads it.
        self._session = session
        #: Whether a turn was running when the client attached.
        self.running = response.running
        #: The session so far (each prompt as ``user_message_chunk``), as the agent replayed it.
        self.replay: list[SessionNotification] = [
            notification for m in session.history if (notification := m.notification) is not None
        ]

    @property
    def session_id(self) -> str:
        """The attached session's id."""
        return self._session.session_id

    async def _next(self) -> SessionMessage:
        """The next message of the session (a prompt's own answer is skipped: ``turn_ended`` tells it)."""
        while True:
            try:
                item = await self._session.read_update()
            except ConnectionClosed as exc:
                raise SessionEnded(f"The connection ended while attached to {self.session_id!r}") from exc
            if not isinstance(item, TurnEnded):
                return item

    async def detach(self) -> None:
        """Leave: the agent sends nothing more of the session here (it goes on)."""
        cx = self._session.connection
        self._session.close()
        if not cx.closed:
            await cx.send_request(DetachSessionRequest(session_id=self.session_id))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.detach()


class ObservedSession(AttachedSession):
    """A session watched from another connection: :attr:`replay`, then :meth:`read` live.

    Made by :func:`observe_session`; an ``async with`` block detaches at its end.
    """

    async def read(self) -> SessionNotification | AttachedTurnEnded:
        """The session's next update, or the end of a turn; raises :class:`SessionEnded` at its end."""
        while True:
            found = observed(await self._next())
            if found is not None:
                return found

    async def read_turn(self) -> tuple[list[SessionNotification], AttachedTurnEnded]:
        """The updates up to the end of the current (or next) turn, and that end."""
        updates: list[SessionNotification] = []
        while True:
            item = await self.read()
            if isinstance(item, AttachedTurnEnded):
                return updates, item
            updates.append(item)


#: What :meth:`ControlledSession.read` gives: an update, the end of a turn, a request to answer, or
#: a request another client answered first.
ControlledItem: TypeAlias = (
    SessionNotification
    | AttachedTurnEnded
    | RequestPermissionMessage
    | CreateElicitationMessage
    | AttachedRequestResolved
)


class ControlledSession(AttachedSession):
    """A session taken part in from another connection: an observer's view, and it may act.

    :meth:`send_prompt` starts a turn (the agent refuses one while a turn runs: ``-32600``, raised
    by the :meth:`read` that reaches the answer), :meth:`cancel` ends the running turn, whoever
    started it. :meth:`read` also gives the turn's requests to answer in place
    (``item.respond(...)``); another client may answer first, and then :meth:`read` gives an
    :class:`AttachedRequestResolved` naming the request (``request_id`` is ``item.dispatch.id``)
    and the answer that won; an answer sent after that is ignored. Made by :func:`control_session`.
    """

    def send_prompt(self, prompt: PromptContent) -> None:
        """Send ``session/prompt``; the turn is read like any other (its end as ``turn_ended``)."""
        self._session.send_prompt(prompt)

    def cancel(self) -> None:
        """Send ``session/cancel`` for the running turn (its requests here are answered ``cancelled``)."""
        self._session.cancel()

    async def read(self) -> ControlledItem:
        """The next update, turn end, request to answer or request resolved; :class:`SessionEnded` at last."""
        while True:
            item = await self._next()
            if isinstance(item, RequestPermissionMessage | CreateElicitationMessage):
                return item
            if item.method == AttachedRequestResolved.METHOD:
                return AttachedRequestResolved.model_validate(item.dispatch.params)
            found = observed(item)
            if found is not None:
                return found

    async def read_turn(self) -> tuple[list[ControlledItem], AttachedTurnEnded]:
        """What comes up to the end of the current (or next) turn, and that end (answer the requests)."""
        items: list[ControlledItem] = []
        while True:
            item = await self.read()
            if isinstance(item, AttachedTurnEnded):
                return items, item
            items.append(item)


def observed(item: SessionMessage) -> SessionNotification | AttachedTurnEnded | None:
    """An update or a turn's end, as an observer reads it; :class:`SessionEnded` once the session closed."""
    method = item.method
    if method == "session/update":
        return item.notification
    params = item.dispatch.params
    if method == AttachedTurnEnded.METHOD:
        return AttachedTurnEnded.model_validate(params)
    if method == AttachedSessionClosed.METHOD:
        item_id = AttachedSessionClosed.model_validate(params).session_id
        raise SessionEnded(f"Session {item_id!r} was closed at the agent")
    return None  # an agent request an observer is not asked (none is sent to observers)


async def observe_session(cx: Connection, session_id: str) -> ObservedSession:
    """Attach to ``session_id``, open on another connection of the agent, as an observer (unstable).

    The agent must be an :class:`~acpio.app.AgentApp` with ``unstable=True`` (its ``initialize``
    answer says ``_meta.acpio.attach``). Raises :class:`~acpio.ResourceNotFound` when the session is
    not open on this agent (open it with ``session/load`` instead, or attach where it runs: behind
    a load balancer, :func:`route_cookies` of the error says how to get there).
    """
    session, response = await attach_as(cx, session_id, "observer")
    return ObservedSession(session, response)


async def attach_as(
    cx: Connection, session_id: str, role: AttachRole
) -> tuple[ActiveSession, AttachSessionResponse]:
    """Send ``_acpio/session/attach``: the session as this connection reads it, and the answer."""
    routing = Routing(cx, session_id, history=True)
    attached: list[ActiveSession] = []

    async def on_result(result: AttachSessionResponse | AcpError) -> None:
        # in the dispatch loop, before the message after the answer: that one is live, not replay
        if isinstance(result, AcpError):
            routing.discard(f"The agent refused to attach to session {session_id!r}")
        else:
            attached.append(
                ActiveSession(cx, ResumeSessionResponse(), session_id=session_id, _routing=routing)
            )

    try:
        sent = cx.send_request(AttachSessionRequest(session_id=session_id, role=role))
    except BaseException:
        routing.discard(f"Attaching to session {session_id!r} failed")
        raise
    sent.on_receiving_result(on_result)
    response = await sent
    return attached[0], response


async def control_session(cx: Connection, session_id: str) -> ControlledSession:
    """Attach to ``session_id``, open on another connection of the agent, as a controller (unstable).

    As :func:`~acpio.session.observe_session` (same replay, same errors), and the session may be
    prompted and cancelled from here; the agent's permission requests and forms for it come here
    too (first answer wins). When the session's own client leaves, the session stays open for its
    controllers: the one attached first owns it from then on (see docs/remote.md).
    """
    session, response = await attach_as(cx, session_id, "controller")
    return ControlledSession(session, response)
