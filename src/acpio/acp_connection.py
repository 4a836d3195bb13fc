"""The connection of the ACP roles' builders: :class:`AcpConnection`, which knows what the counterpart said.

Every ACP role's builder makes one (``Client`` and ``Proxy`` builders the
:class:`~acpio.session.SessionConnection` subclass, which adds the session builders). It keeps
the counterpart's :class:`~acpio.peer.PeerState`, filled from ``initialize`` on whichever side
sends or receives it, and checks the requests sent against it. Importing it creates no schema
model.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar, cast, overload, runtime_checkable

from acpio.capabilities import AgentFeatures, ClientFeatures
from acpio.errors import RequestError
from acpio.jsonrpc import (
    UNSET,
    Connection,
    Dispatch,
    Handler,
    RequestDispatch,
    Responder,
    Role,
    TypedRequest,
    Unhandled,
    UntypedMessage,
)
from acpio.jsonrpc.typed import typed_method_of
from acpio.peer import PeerState

if TYPE_CHECKING:
    from acpio.jsonrpc import JsonValue, PeerLike, SentRequest
    from acpio.schema import InitializeRequest
    from acpio.transports.base import Transport

__all__ = ["AcpConnection", "SessionPeers", "agent_role", "client_role"]


@runtime_checkable
class SessionPeers(Protocol):
    """What the session helpers ask of a connection's role: which of its peers is the agent, the client.

    The ACP roles of :mod:`acpio.roles` implement it. Each method gives the role instance (one of
    the role's :meth:`~acpio.jsonrpc.Role.peers`) that plays the part, or ``None`` when this side
    has no such peer: a ``Client`` connection addresses the agent as its counterpart and has no
    client, a ``Proxy`` connection reaches the agent (its successor) through envelopes. On a
    connection whose role does not implement it (``UntypedRole``, ``Conductor``) the counterpart
    plays both parts and nothing is checked against ACP.
    """

    def agent_peer(self) -> Role | None:
        """The peer that is the agent; ``None`` if this side has none."""
        ...

    def client_peer(self) -> Role | None:
        """The peer that is the client; ``None`` if this side has none."""
        ...


def agent_role(role: Role) -> Role | None:
    """The role that is the agent among ``role``'s peers; ``None`` if none, or if ``role`` does not say."""
    return role.agent_peer() if isinstance(role, SessionPeers) else None


def client_role(role: Role) -> Role | None:
    """The role that is the client among ``role``'s peers; ``None`` if none, or if ``role`` does not say."""
    return role.client_peer() if isinstance(role, SessionPeers) else None


_log = logging.getLogger("acpio.connection")

_Result = TypeVar("_Result")

# The methods it watches, by name: importing this module creates no schema model.
_INITIALIZE_METHOD: Final = "initialize"


class _InitializeRecorder:
    """The first handler of an agent's connection: records what the client advertised, passes it on.

    The request goes on with a responder that records the version the agent answers with
    (:meth:`PeerState.record_answer`) before the answer is sent.
    """

    __slots__ = ("peer_state",)

    def __init__(self, peer_state: PeerState) -> None:
        self.peer_state = peer_state

    def accepts(self, message: Dispatch) -> bool:
        """``initialize`` requests only."""
        return message.method == _INITIALIZE_METHOD and type(message) is RequestDispatch

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled:
        """Record the client's capabilities, then pass the request on to be answered."""
        assert isinstance(message, RequestDispatch)
        self.peer_state.record_client_params(message.params)
        original = message.responder
        watched: Responder[Any] = Responder(
            _AnswerRecorder(original, self.peer_state), original.id, original.method, original.cancel_flag
        )
        return Unhandled(RequestDispatch(message.method, message.params, message.id, watched, message.peer))


class _AnswerRecorder:
    """Answers an ``initialize`` with the original responder, recording the version answered first."""

    __slots__ = ("_original", "_peer_state")

    def __init__(self, original: Responder[Any], peer_state: PeerState) -> None:
        self._original = original
        self._peer_state = peer_state

    def answer(self, responder: Responder[Any], value: Any, error: RequestError | None) -> None:
        """Record the answered version (a typed answer or its wire form), then send the answer."""
        if error is not None:
            self._original.respond_with_error(error)
            return
        version = (
            value.get("protocolVersion")
            if isinstance(value, dict)
            else getattr(value, "protocol_version", None)
        )
        if type(version) is int:
            self._peer_state.record_answer(version)
        self._original.respond(value)

    def unanswered(self, responder: Responder[Any]) -> None:
        """Nothing: the original responder, dropped with this one, reports it."""


class AcpConnection(Connection):
    """The connection handle (``cx``) of the ACP roles' builders: it knows what the counterpart said.

    A :class:`~acpio.jsonrpc.Connection` that keeps what the counterpart said at ``initialize``
    (:attr:`peer_state`) and checks every typed request sent to it against that, whichever API
    sends it:

    * a client's (or a proxy's) connection records the agent's answer and refuses what the agent
      did not advertise (see :meth:`send_request_to`);
    * an agent's connection records the client's ``initialize`` request as it arrives, before any
      handler sees it, and refuses to send the client a request it did not advertise
      (``fs/read_text_file`` without ``fs.readTextFile``, ``terminal/create`` without
      ``terminal``...): :class:`~acpio.capabilities.CapabilityNotAdvertised` is raised and
      nothing is written.

    ``Agent.builder()`` makes these; ``Client.builder()`` and ``Proxy.builder()`` make
    :class:`~acpio.session.SessionConnection`, which adds the session builders and the client's
    rule for permission requests pending when it cancels a turn. Sending a notification costs
    what it costs on a plain connection: nothing is checked on that path.
    """

    def __init__(
        self,
        role: Role,
        transport: Transport,
        *,
        name: str,
        handlers: Iterable[Handler],
        startup: Iterable[Callable[[Connection], Awaitable[object]]] = (),
        close_callbacks: Iterable[Callable[..., Awaitable[object]]] = (),
    ) -> None:
        #: The role that is the agent here (``None``: no agent, or a role that does not say).
        self._agent = agent_role(role)
        #: The client, when it is the counterpart of an agent's connection (``None`` elsewhere).
        self._client: Role | None = None
        counterpart = role.counterpart()
        if self._agent is None and (client := client_role(role)) == counterpart:
            self._client = client
        #: The counterpart's role, made once: every typed request sent asks whom it addresses.
        self._counterpart_role = counterpart
        #: Whether the counterpart is the agent (compared once: most requests go to the counterpart).
        self._counterpart_is_agent = self._agent is not None and counterpart == self._agent
        #: What the counterpart said at ``initialize``: the client's capabilities on an agent's
        #: connection; elsewhere the agent's answer (and what this side advertised itself).
        self.peer_state = PeerState("client" if self._client is not None else "agent")
        #: Whether a typed request the counterpart did not advertise is refused (see
        #: :meth:`send_request_to`). The trait-style connections set it from their option.
        self.require_capabilities = True
        handlers = (*self._watchers(role), *handlers)
        super().__init__(
            role, transport, name=name, handlers=handlers, startup=startup, close_callbacks=close_callbacks
        )

    def _watchers(self, role: Role) -> tuple[Handler, ...]:
        """The handlers placed before the builder's, which see messages and pass them on.

        An agent's connection records the client's ``initialize``; a subclass adds its own.
        """
        return (_InitializeRecorder(self.peer_state),) if self._client is not None else ()

    @property
    def agent_features(self) -> AgentFeatures | None:
        """What the agent advertised in its ``initialize`` answer; ``None`` before it was read.

        Recorded when a typed :class:`~acpio.schema.InitializeRequest` sent to the agent from this
        connection is answered (see :attr:`peer_state`). Until then a client's connection refuses
        ``session/*`` requests.
        """
        return self.peer_state.agent_features

    @property
    def protocol_version(self) -> int | None:
        """The ACP version this connection speaks: the one the agent answered ``initialize`` with.

        ``None`` before that. A client's connection knows it once the answer to a typed
        ``initialize`` it sent arrived; an agent's once its handler answered the client's
        ``initialize`` (the version read from the answer, typed or a dict). On 2, the checks of
        what is sent read v2's method table and capability shapes (see :meth:`send_request_to`).
        """
        return self.peer_state.protocol_version

    @property
    def client_features(self) -> ClientFeatures | None:
        """What this client advertised in the typed ``initialize`` it sent; ``None`` before that.

        :meth:`ActiveSession.read_to_string` answers only the requests advertised here.
        """
        return self.peer_state.client_features

    @overload
    def send_request_to(
        self, peer: PeerLike | None, message: str, params: object = None
    ) -> SentRequest[JsonValue]: ...
    @overload
    def send_request_to(
        self, peer: PeerLike | None, message: TypedRequest[_Result]
    ) -> SentRequest[_Result]: ...
    @overload
    def send_request_to(self, peer: PeerLike | None, message: UntypedMessage) -> SentRequest[JsonValue]: ...
    @overload
    def send_request_to(
        self, peer: PeerLike | None, message: object, params: object = UNSET
    ) -> SentRequest[Any]: ...

    def send_request_to(
        self, peer: PeerLike | None, message: object, params: object = UNSET
    ) -> SentRequest[Any]:
        """Send a request; typed requests to the agent are checked against what ACP allows.

        * ``initialize``: the answer's protocol version must be one acpio speaks; otherwise the
          connection is closed and awaiting the answer raises
          :class:`~acpio.capabilities.UnsupportedProtocolVersion`. The agent's capabilities are
          then recorded (:attr:`agent_features`).
        * session-setup requests: a relative ``cwd`` or ``additionalDirectories`` entry raises
          ``ValueError``; ``session/resume`` and ``session/fork`` without ``mcp_servers`` are sent
          with ``mcpServers: []`` (the spec requires the field, the schema leaves it optional).
        * on a client's connection, a ``session/*`` request before the agent answered
          ``initialize`` raises ``RuntimeError``: ACP requires initialization first. (A proxy's
          successor is initialized by the conductor, so a proxy connection is not checked.)
        * once the agent's capabilities are known, a method it did not advertise
          (``session/load``...) or content it did not advertise (an image in a prompt, an HTTP MCP
          server...) raises :class:`~acpio.capabilities.CapabilityNotAdvertised` instead of being sent.
        * on an agent's connection, a request the client did not advertise in its ``initialize``
          request (``fs/*``, ``terminal/*``, ``elicitation/create``...; before that request, any
          of them) raises :class:`~acpio.capabilities.CapabilityNotAdvertised` instead of being sent;
          on a v2 connection (:attr:`protocol_version` 2) a v1 method v2 does not have
          (``fs/read_text_file``, ``terminal/create``...) raises
          :class:`~acpio.errors.NotInProtocolVersion`.

        The checks are those of :meth:`acpio.peer.PeerState.check`; a method name with raw
        ``params`` is sent as it is.
        """
        method = typed_method_of(message) if params is UNSET else None
        if method is None:  # a method name with params, an UntypedMessage: sent as it is
            return super().send_request_to(peer, message, params)
        if self._client is not None:  # the client is the counterpart
            if peer is None or self._addresses(peer, self._client):
                check = self.peer_state.check
                message = check(method, message, require_capabilities=self.require_capabilities)
            return super().send_request_to(peer, message, params)
        if not (self._counterpart_is_agent if peer is None else self._addresses(peer, self._agent)):
            return super().send_request_to(peer, message, params)
        # A proxy's successor is initialized by the conductor; a closed connection raises below.
        client = self._counterpart_is_agent and not self.closed
        message = self.peer_state.check(method, message, initialize_first="session" if client else None)
        sent = super().send_request_to(peer, message, params)
        if method == _INITIALIZE_METHOD:
            # what this client advertised, for its own answers (a typed message whose METHOD is initialize)
            self.peer_state.record_request(cast("InitializeRequest", message))
            return self.peer_state.follow(sent, self.close)
        return sent

    def _addresses(self, peer: PeerLike | None, role: Role | None) -> bool:
        """Whether a message sent to ``peer`` (``None``: the counterpart) goes to ``role``."""
        if role is None:
            return False
        if peer is None:
            return self._counterpart_role == role
        return peer == role or peer is type(role)
