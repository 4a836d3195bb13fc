"""The connection of Client and Proxy builders: an ACP connection that also starts sessions."""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Any, Final, cast

from acpio.acp_connection import AcpConnection, agent_role
from acpio.jsonrpc import (
    UNSET,
    Connection,
    Dispatch,
    Handler,
    RequestDispatch,
    Role,
    Unhandled,
    UntypedMessage,
)
from acpio.session.methods import SessionMethods

if TYPE_CHECKING:
    from acpio.jsonrpc import PeerLike, Responder
    from acpio.session.negotiation import AnyInitializeRequest, AnyInitializeResponse, ProtocolChoice

__all__ = ["SessionConnection"]

_log = logging.getLogger("acpio.session")

_PERMISSION_METHOD: Final = "session/request_permission"
_CANCEL_METHOD: Final = "session/cancel"


def _cancelled_session(message: Any, params: Any) -> str | None:
    """The session a ``session/cancel`` being sent names (typed, untyped or by name); else ``None``."""
    if params is UNSET:
        if getattr(type(message), "METHOD", None) == _CANCEL_METHOD:  # a typed CancelNotification
            return cast(str, message.session_id)
        if not (isinstance(message, UntypedMessage) and message.method == _CANCEL_METHOD):
            return None
        params = message.params
    elif message != _CANCEL_METHOD:
        return None
    session_id = params.get("sessionId") if isinstance(params, dict) else getattr(params, "session_id", None)
    return session_id if isinstance(session_id, str) else None


class _PermissionRequests:
    """The agent's ``session/request_permission`` requests not answered yet, by session id.

    The first handler of a client's connection: it records each one, weakly (a responder its
    handler dropped is still answered by the engine), and passes it on. On ``session/cancel`` the
    connection answers those of the session ``cancelled``, as ACP requires.
    """

    __slots__ = ("pending",)

    def __init__(self) -> None:
        self.pending: dict[str, weakref.WeakSet[Responder[Any]]] = {}

    def accepts(self, message: Dispatch) -> bool:
        """Permission requests only."""
        return message.method == _PERMISSION_METHOD and type(message) is RequestDispatch

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled:
        """Record the request's responder under its session, then pass the request on."""
        assert isinstance(message, RequestDispatch)
        session_id = message.session_id
        if session_id is not None:
            self.pending.setdefault(session_id, weakref.WeakSet()).add(message.responder)
        return Unhandled(message)

    def take(self, session_id: str) -> list[Responder[Any]]:
        """Forget and return the recorded requests of ``session_id``."""
        found = self.pending.pop(session_id, None)
        return list(found) if found is not None else []


class SessionConnection(SessionMethods, AcpConnection):
    """The connection handle (``cx``) of Client and Proxy builders: it starts sessions.

    An :class:`~acpio.acp_connection.AcpConnection` (the agent's peer state and the checks of what
    is sent to it) with the session builders (:meth:`build_session`, :meth:`build_session_cwd`,
    :meth:`build_session_load`, :meth:`build_session_resume`, :meth:`build_session_fork`,
    :meth:`build_session_from`) and :meth:`attach_session`, and the client's side of a cancel (see
    :meth:`send_notification_to`). Annotate ``cx`` with it to have the type checker see them.
    """

    def _watchers(self, role: Role) -> tuple[Handler, ...]:
        """Also record the agent's permission requests on a client's connection, before any handler."""
        #: The agent's permission requests still unanswered, seen before any handler sees them.
        self._permission_requests = _PermissionRequests()
        #: The role that is the agent when it is the counterpart (a client's connection), else ``None``.
        agent = agent_role(role)
        self._counterpart_agent = agent if agent is not None and role.counterpart() == agent else None
        watchers = super()._watchers(role)
        return (*watchers, self._permission_requests) if self._counterpart_agent is not None else watchers

    @property
    def protocol(self) -> ProtocolChoice:
        """The ACP version :meth:`initialize` asks for: ``1``, ``2`` or ``"negotiate"`` (the default).

        Set with ``Client.builder(protocol=...)``; ``1`` on a proxy's connection (its successor is
        initialized by the conductor).
        """
        return cast("ProtocolChoice", getattr(self.role, "protocol", 1))

    async def initialize(self, request: AnyInitializeRequest | None = None) -> AnyInitializeResponse:
        """Send ``initialize`` as :attr:`protocol` says; return the answer, typed by its version.

        ``request`` is an :class:`acpio.schema.InitializeRequest` (v1) or an
        :class:`acpio.schema.v2.InitializeRequest`; ``None`` describes the client as ``acpio``
        with no capabilities. With ``"negotiate"`` the request offers v2 and also carries its v1
        form (``clientInfo``, ``clientCapabilities``), so a v1 agent sees what a v1 client would
        send and answers v1; the answer is an :class:`acpio.schema.InitializeResponse` then, an
        :class:`acpio.schema.v2.InitializeResponse` from a v2 agent (narrow with ``isinstance``, or
        read :attr:`protocol_version`). Sessions started afterwards speak that version.

        Raises :class:`~acpio.capabilities.UnsupportedProtocolVersion` (after closing the
        connection) when the agent answers a version this client did not ask for (``protocol=2``
        and a v1 agent), and the agent's error when it refuses.
        """
        from acpio.session.negotiation import negotiate

        return await negotiate(self, request)

    def send_notification_to(self, peer: PeerLike | None, message: object, params: object = UNSET) -> None:
        """Send a notification; ``session/cancel`` from a client also answers its pending permissions.

        ACP: once the client sends ``session/cancel``, it MUST answer every pending
        ``session/request_permission`` of that session with the ``cancelled`` outcome. On a client's
        connection, the agent's permission requests that are not answered yet, whoever holds them
        (a builder handler, a session's reader, a trait-style ``request_permission``), are answered
        so right after the notification is sent; their responders then read as
        :attr:`~acpio.jsonrpc.Responder.cancelled`, which stops work run with
        ``responder.run_until_cancelled(...)``, and later answers to them are ignored.
        """
        super().send_notification_to(peer, message, params)
        if self._permission_requests.pending and self._to_agent(peer):
            session_id = _cancelled_session(message, params)
            if session_id is not None:
                self._answer_permission_requests_cancelled(session_id)

    def _answer_permission_requests_cancelled(self, session_id: str) -> int:
        """Answer the agent's unanswered permission requests for ``session_id`` ``cancelled``.

        Returns how many were answered. Their responders are marked cancelled, so work waiting on
        them (``run_until_cancelled``, a trait-style ``request_permission`` task) stops.
        """
        from acpio.schema import CancelledPermissionOutcome, RequestPermissionResponse

        answered = 0
        for responder in self._permission_requests.take(session_id):
            if responder.done:
                continue
            responder.respond(RequestPermissionResponse(outcome=CancelledPermissionOutcome()))
            responder.mark_cancelled()  # the answer is no longer wanted: stop whoever is deciding
            answered += 1
        if answered:
            _log.debug("Answered %d permission request(s) of %r: cancelled", answered, session_id)
        return answered

    def _to_agent(self, peer: PeerLike | None) -> bool:
        """Whether a message sent to ``peer`` (``None``: the counterpart) goes to the agent counterpart."""
        agent = self._counterpart_agent
        if agent is None:
            return False
        return peer is None or peer == agent or peer is type(agent)
