"""Several clients on one session (unstable): the ``_acpio/session/*`` messages and :func:`observe_session`.

An extension of acpio's, not of ACP (the spec's multi-client RFD has not settled): a client
attaches to a session open on another connection of the same agent and watches it. The agent
replays the session so far as ``session/update`` notifications, answers, then forwards every update
of the session live (the prompts of the client that owns it as ``user_message_chunk``), tells the
end of each turn with ``_acpio/session/turn_ended`` and the end of the session with
``_acpio/session/closed``. Names and shapes may change with the spec.
"""

from __future__ import annotations

from acpio.errors import AcpError, ConnectionClosed
from acpio.extensions import ExtensionNotification, ExtensionRequest, ExtensionResponse
from acpio.jsonrpc import Connection
from acpio.schema import ResumeSessionResponse, SessionNotification
from acpio.session.active import ActiveSession
from acpio.session.messages import SessionMessage, TurnEnded
from acpio.session.routing import Routing

__all__ = [
    "ATTACH_ROLES",
    "AttachSessionRequest",
    "AttachSessionResponse",
    "AttachedSessionClosed",
    "AttachedTurnEnded",
    "DetachSessionRequest",
    "DetachSessionResponse",
    "ObservedSession",
    "SessionEnded",
    "observe_session",
]

#: The roles a client may attach with; only observers are served so far.
ATTACH_ROLES: tuple[str, ...] = ("observer",)


class AttachSessionResponse(ExtensionResponse):
    """The answer to ``_acpio/session/attach``: the replay came before it, the live updates follow it."""

    #: Whether a turn was running when the client attached (its updates so far were replayed).
    running: bool = False


class AttachSessionRequest(ExtensionRequest, method="_acpio/session/attach", response=AttachSessionResponse):
    """``_acpio/session/attach`` (unstable): watch a session open on another connection of the agent."""

    session_id: str
    #: ``"observer"``, the only role served so far (:data:`ATTACH_ROLES`); others are refused.
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


class SessionEnded(ConnectionClosed):
    """The watched session was closed at the agent, or the connection ended: nothing more will come."""


class ObservedSession:
    """A session watched from another connection: :attr:`replay`, then :meth:`read` live.

    Made by :func:`observe_session`; an ``async with`` block detaches at its end.
    """

    def __init__(self, session: ActiveSession, response: AttachSessionResponse) -> None:
        self._session = session
        #: Whether a turn was running when the client attached.
        self.running = response.running
        #: The session so far (each prompt as ``user_message_chunk``), as the agent replayed it.
        self.replay: list[SessionNotification] = [
            notification for m in session.history if (notification := m.notification) is not None
        ]

    @property
    def session_id(self) -> str:
        """The watched session's id."""
        return self._session.session_id

    async def read(self) -> SessionNotification | AttachedTurnEnded:
        """The session's next update, or the end of a turn; raises :class:`SessionEnded` at its end."""
        while True:
            try:
                item = await self._session.read_update()
            except ConnectionClosed as exc:
                raise SessionEnded(f"The connection ended while watching {self.session_id!r}") from exc
            if isinstance(item, TurnEnded):  # not sent to observers: a prompt of this connection's
                continue
            found = _observed(item)
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

    async def detach(self) -> None:
        """Stop watching: the agent sends nothing more of the session here (it goes on)."""
        cx = self._session.connection
        self._session.close()
        if not cx.closed:
            await cx.send_request(DetachSessionRequest(session_id=self.session_id))

    async def __aenter__(self) -> ObservedSession:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.detach()


def _observed(item: SessionMessage) -> SessionNotification | AttachedTurnEnded | None:
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
    not open on this agent (open it with ``session/load`` instead, or attach where it runs).
    """
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
        sent = cx.send_request(AttachSessionRequest(session_id=session_id))
    except BaseException:
        routing.discard(f"Attaching to session {session_id!r} failed")
        raise
    sent.on_receiving_result(on_result)
    response = await sent
    return ObservedSession(attached[0], response)
