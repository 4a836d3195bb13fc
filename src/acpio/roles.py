"""The ACP roles: who each side of a connection is, whom it can address, what it does by default.

Four roles, in two pairs of counterparts, plus the engine's protocol-neutral one::

    Client  <-->  Agent          an editor and the agent it drives
    Proxy   <-->  Conductor      a proxy component and the conductor that runs the chain
    UntypedRole                  its own counterpart; no ACP behaviour

Each has ``builder()``: ``app = Agent.builder(name="echo")``, then ``@app.on_request`` and
``await app.serve(transport)``.

**Peers.** A connection addresses its counterpart, except a proxy's: a proxy talks to the
conductor only, but through it to two peers, its predecessor (:class:`Client`) and its successor
(:class:`Agent`). Messages for the successor travel wrapped in ``proxy/successor`` envelopes and
messages from it arrive wrapped the same way (:class:`SuccessorEnvelope`); the :class:`Proxy` role
unwraps incoming envelopes *before* the handler chain, so handlers see the inner message, and every
:class:`~acpio.jsonrpc.Dispatch` records its ``peer``. Pick the peer when sending
(``cx.send_request_to(Agent, request)``) and, when it matters, when receiving
(``@app.on_request(peer=Agent)``, ``message.is_from(Agent)``). Responses need nothing special: the
answer to a wrapped request is an ordinary response to its outer id, which names the pending request.
``$/cancel_request`` always names an id of *this* connection, so it is never wrapped. An envelope's
own ``_meta`` belongs to its hop: unwrapping drops it (the inner message's ``_meta`` is kept).

**Method names.** The current schema names the proxy-chain methods ``proxy/initialize`` and
``proxy/successor`` (:data:`PROXY_METHODS`). Older conductors and proxies (the Rust SDK's proxy
extension, acpio before the rename) use ``_proxy/initialize`` and ``_proxy/successor``
(:data:`LEGACY_PROXY_METHODS`). A :class:`Proxy` connection understands both and *answers in
kind*: it sends its envelopes with the names of the last proxy-chain message its conductor sent it
(an older conductor initializes it with ``_proxy/initialize``, so it then wraps in
``_proxy/successor``), the current names until one arrives. Its handlers see the current names
either way: ``_proxy/initialize`` reaches them as ``proxy/initialize``.

**Default handlers** (after the builder's and the dynamic handlers):

* :class:`Client`: a message from the agent that carries a ``sessionId`` and that nobody claims is
  parked (``Unhandled(..., retry=True)``) until a handler for its session is added, then delivered
  in order; so updates that arrive before the ``session/new`` response is processed are not lost.
  Requests are parked the same way and answered once claimed; what is still parked when the
  connection ends gets the normal fallback (``-32601`` for a request).
* :class:`Proxy`: what nobody claims is forwarded, unvalidated (unknown fields and ``_meta``
  survive): from the client to the agent wrapped, from the agent to the client unwrapped, answers
  paired with their requests and cancellation re-issued hop by hop. ``proxy/initialize`` goes
  downstream as ``initialize`` (the successor's answer comes back unchanged, ``protocolVersion``
  included); a plain ``initialize`` is refused (a proxy is initialized by its conductor); a
  forwarded ``session/new`` installs :class:`ProxySessionMessages` for the new session before the
  next message is read.
* :class:`Agent`: answers ``initialize`` when no handler of the builder does (one registered with
  ``@app.on_request`` comes earlier in the chain and wins). The answer: ``protocolVersion``
  negotiated as the spec says (the client's version when acpio speaks it, else the latest it
  speaks), ``agentInfo`` from the builder (``Agent.builder(name="echo", version="1.0",
  title="Echo")``) and ``agentCapabilities`` that promise only what the builder's typed handlers
  serve: ``loadSession`` when ``session/load`` has a handler, ``sessionCapabilities.list`` when
  ``session/list`` has one, and so on for every capability of the method table whose methods
  all have handlers; prompt and MCP capabilities stay off (false). Handlers added with
  ``on_dispatch``, ``with_handler`` or at run time are not seen: an agent that serves methods
  that way answers ``initialize`` itself. Other unclaimed requests get ``-32601``.
* :class:`Conductor`: none (unclaimed requests get ``-32601``).

**Unstable methods are opt-in.** The methods the schema marks unstable (:func:`unstable_methods`:
``session/fork``, ``providers/*``, ``mcp/message``...) are off unless the builder turns them on:
``Agent.builder(unstable=True)`` (``Client``, ``Proxy`` likewise; ``use_unstable_protocol=True`` on
the :mod:`acpio.traits` connections). While they are off:

* sending one raises :class:`UnstableMethodNotEnabled` and writes nothing;
* registering a typed handler for one raises :class:`UnstableMethodNotEnabled` at once;
* receiving one: the handlers never see it. An :class:`Agent` or :class:`Client` answers a request
  ``-32601`` with the method in ``data``, exactly as for an unknown method, and drops a
  notification; a :class:`Proxy` forwards it unchanged (passing a message on is not using it: the
  agent at the end of the chain decides).

Extension methods (``_vendor/...``) and ``$/cancel_request`` are never affected. The proxy-chain
methods (``proxy/initialize``, ``proxy/successor``, unstable in the schema) are always on for a
:class:`Proxy`, and a :class:`Conductor` never switches anything off: it only routes.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from copy import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, cast

from acpio._exports import lazy_exports
from acpio.acp_connection import AcpConnection
from acpio.errors import AcpError, InvalidParams, InvalidRequest, RequestError, ResourceNotFound
from acpio.jsonrpc import (
    CANCEL_METHOD,
    Builder,
    Connection,
    Dispatch,
    JsonValue,
    NotificationDispatch,
    PeerLike,
    RequestDispatch,
    ResponseDispatch,
    Role,
    Unhandled,
    UntypedMessage,
    UntypedRole,
)

if TYPE_CHECKING:
    from acpio.schema import InitializeProxyRequest
    from acpio.session import SessionConnection
    from acpio.session.negotiation import ProtocolChoice

__all__ = [
    "LEGACY_PROXY_INITIALIZE_METHOD",
    "LEGACY_PROXY_METHODS",
    "LEGACY_SUCCESSOR_METHOD",
    "PROXY_INITIALIZE_METHOD",
    "PROXY_METHODS",
    "SUCCESSOR_METHOD",
    "Agent",
    "Client",
    "Conductor",
    "InitializeProxyRequest",
    "Proxy",
    "ProxyMethods",
    "ProxySessionMessages",
    "SuccessorEnvelope",
    "UnstableMethodNotEnabled",
    "UntypedRole",
    "note_protocol_version",
    "proxy_methods_of",
    "unstable_methods",
]

#: The method of the envelope that carries one message to or from a proxy's successor.
SUCCESSOR_METHOD: Final = "proxy/successor"
#: The method a conductor initializes a proxy with (the params and result of ``initialize``).
PROXY_INITIALIZE_METHOD: Final = "proxy/initialize"
#: ``proxy/successor`` as older peers name it (the Rust SDK's proxy extension, acpio before the rename).
LEGACY_SUCCESSOR_METHOD: Final = "_proxy/successor"
#: ``proxy/initialize`` as older peers name it.
LEGACY_PROXY_INITIALIZE_METHOD: Final = "_proxy/initialize"

_INITIALIZE: Final = "initialize"
_SESSION_NEW: Final = "session/new"


# --- the method names -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProxyMethods:
    """The names one side of a conductor<->proxy connection gives the two proxy-chain methods."""

    #: The method that initializes a component as a proxy.
    initialize: str
    #: The method of the envelope that carries a message to or from the proxy's successor.
    successor: str

    @property
    def legacy(self) -> bool:
        """Whether these are the names of older peers (``_proxy/...``)."""
        return self.successor == LEGACY_SUCCESSOR_METHOD


#: The names of the current schema: ``proxy/initialize``, ``proxy/successor``.
PROXY_METHODS: Final = ProxyMethods(PROXY_INITIALIZE_METHOD, SUCCESSOR_METHOD)
#: The names of older peers: ``_proxy/initialize``, ``_proxy/successor``.
LEGACY_PROXY_METHODS: Final = ProxyMethods(LEGACY_PROXY_INITIALIZE_METHOD, LEGACY_SUCCESSOR_METHOD)

_METHODS_OF: Final[dict[str, ProxyMethods]] = {
    PROXY_INITIALIZE_METHOD: PROXY_METHODS,
    SUCCESSOR_METHOD: PROXY_METHODS,
    LEGACY_PROXY_INITIALIZE_METHOD: LEGACY_PROXY_METHODS,
    LEGACY_SUCCESSOR_METHOD: LEGACY_PROXY_METHODS,
}


def proxy_methods_of(method: str) -> ProxyMethods | None:
    """The names ``method`` belongs to, if it is one of the four proxy-chain method names; else ``None``."""
    return _METHODS_OF.get(method)


# --- the envelope ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SuccessorEnvelope:
    """The params of a ``proxy/successor`` (or legacy ``_proxy/successor``) message: one inner message.

    On the wire: ``{"method": <inner method>, "params": <inner params>, "_meta": {...}}``; the inner
    message's own ``_meta`` stays inside ``params``, and ``meta`` here is the envelope's (written as
    ``_meta``, never ``meta``). The envelope's ``_meta`` is hop-local: whoever unwraps the envelope
    does not copy it into the inner message. Whether the outer message has an ``id`` says whether
    the inner one is a request or a notification. Nothing is validated: unknown fields of the inner
    params survive. The shape is the same under both method names.
    """

    #: The inner message's method.
    method: str
    #: The inner message's params (an object, an array, or ``None`` when it has none; a typed message
    #: object in an envelope being sent).
    params: object = None
    #: The envelope's own ``_meta``, if any.
    meta: Mapping[str, Any] | None = None

    def to_params(self) -> dict[str, object]:
        """The envelope as the params of a ``proxy/successor`` request or notification."""
        params: dict[str, object] = {"method": self.method}
        if self.params is not None:
            params["params"] = self.params
        if self.meta is not None:
            params["_meta"] = dict(self.meta)
        return params

    @classmethod
    def from_params(cls, params: JsonValue) -> SuccessorEnvelope | None:
        """Read an envelope from ``proxy/successor`` params; ``None`` if they are not one.

        Params without a string ``method``, or whose inner ``params`` are neither an object, an
        array nor absent (or ``null``), are not an envelope: the message is then left as it is. The legacy
        spelling ``meta`` of the envelope's ``_meta`` is accepted.
        """
        if type(params) is not dict:
            return None
        method = params.get("method")
        inner = params.get("params")
        if type(method) is not str or not (inner is None or type(inner) is dict or type(inner) is list):
            return None
        meta = params.get("_meta", params.get("meta"))
        return cls(method, inner, meta if isinstance(meta, dict) else None)


# --- the roles ------------------------------------------------------------------------------------


def _session_connection() -> type[SessionConnection]:
    # Imported when a builder is made, not with this module: acpio.session loads the schema models,
    # and importing the roles loads none. (acpio.session does not import this module.)
    from acpio.session import SessionConnection

    return SessionConnection


class UnstableMethodNotEnabled(AcpError):
    """An unstable ACP method was sent, or given a handler, where unstable methods are off.

    ``method`` is the method, ``role`` the name of the role class (``"Agent"``...) and ``action``
    ``"send"`` or ``"handle"``. Turn unstable methods on where the connection is made:
    ``Agent.builder(unstable=True)`` (``Client``, ``Proxy`` likewise), or
    ``use_unstable_protocol=True`` for ``AgentSideConnection`` and ``ClientSideConnection``.
    """

    def __init__(self, method: str, *, role: str = "Agent", action: str = "send") -> None:
        self.method = method
        self.role = role
        self.action = action
        super().__init__(
            f"Cannot {action} {method}: it is an unstable ACP method, and unstable methods are off on "
            f"this {role} connection. Turn them on with {role}.builder(unstable=True) "
            "(use_unstable_protocol=True for AgentSideConnection and ClientSideConnection)."
        )


_unstable: frozenset[str] | None = None


def unstable_methods() -> frozenset[str]:
    """The methods the schema marks unstable, read off ``acpio.schema.METHODS`` (``stable=False``).

    A method counts when none of its rows is stable. Extension methods (``_...``) and
    ``$/cancel_request`` are never among them.
    """
    global _unstable
    if _unstable is None:
        from acpio.schema import METHODS

        stable = {m.method for m in METHODS if m.stable}
        _unstable = frozenset(
            m.method
            for m in METHODS
            if not m.stable and m.method not in stable and not m.method.startswith(("_", "$/"))
        )
    return _unstable


class _AcpRole(Role):
    """What the four ACP roles share: the switch that turns the unstable methods on."""

    #: Whether the proxy-chain methods (``proxy/initialize``, ``proxy/successor``: the rows of
    #: ``acpio.schema.METHODS`` with direction ``"proxy"``) stay on while the unstable ones are off.
    _PROXY_CHAIN_ON: ClassVar[bool] = False

    def __init__(self, *, unstable: bool = False) -> None:
        #: Whether this side sends and handles the unstable methods (see the module docstring).
        self.unstable = unstable

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Refuse the official SDKs' idiom, a role subclass with ``async def prompt(...)`` and the like.

        A role says who a connection is; it has no async method for acpio to call, so such a
        method would never run. The error says what to write instead.
        """
        super().__init_subclass__(**kwargs)
        handlers = sorted(name for name, value in vars(cls).items() if inspect.iscoroutinefunction(value))
        if not handlers:
            return
        role = next(b.__name__ for b in cls.__mro__ if b.__module__ == __name__ and b.__name__ in _INSTEAD)
        raise TypeError(
            f"class {cls.__name__}({role}) defines async {', '.join(handlers)}(), which acpio never calls: "
            f"acpio.{role} is a role (who one side of a connection is), not a class to implement as in "
            f"the official SDKs. {_INSTEAD[role]} See docs/migration.md."
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(unstable=True)" if self.unstable else f"{type(self).__name__}()"

    @classmethod
    def builder(
        cls, *, name: str | None = None, unstable: bool = False, error_details: bool = True
    ) -> Builder[Connection]:
        """A new :class:`~acpio.jsonrpc.Builder` for this role.

        ``unstable=True`` turns the unstable methods on; ``error_details=False`` answers a
        handler's unexpected exception ``-32603`` without its message (see
        :class:`~acpio.jsonrpc.Builder`).
        """
        return Builder(cls(unstable=unstable), name=name, error_details=error_details)

    def disabled_methods(self) -> frozenset[str]:
        """The unstable methods (but this role's own machinery) while they are off; else none."""
        if self.unstable:
            return frozenset()
        disabled = _disabled.get(type(self))
        if disabled is None:
            disabled = unstable_methods()
            if self._PROXY_CHAIN_ON:
                from acpio.schema import METHODS

                disabled -= {m.method for m in METHODS if m.direction == "proxy"}
            _disabled[type(self)] = disabled
        return disabled

    def disabled_error(self, method: str, action: str) -> UnstableMethodNotEnabled:
        """:class:`UnstableMethodNotEnabled`, saying how to turn unstable methods on."""
        return UnstableMethodNotEnabled(method, role=type(self).__name__, action=action)


_disabled: dict[type[_AcpRole], frozenset[str]] = {}

#: What to write instead of a role subclass with async methods (see _AcpRole.__init_subclass__).
_INSTEAD: Final[dict[str, str]] = {
    "Agent": "Write an agent as an AgentApp (app = AgentApp('name') with @app.prompt), or subclass "
    "acpio.traits.AgentTrait, which has the official SDKs' methods.",
    "Client": "Subclass acpio.traits.ClientTrait, which has the official SDKs' methods, or register "
    "handlers on Client.builder().",
    "Proxy": "Register handlers on Proxy.builder() (@app.on_request, @app.on_notification).",
    "Conductor": "acpio.conductor runs proxy chains; for anything else register handlers on "
    "Conductor.builder().",
}


class Client(_AcpRole):
    """An ACP client (an editor): its counterpart is the :class:`Agent`.

    Its default handler parks agent messages that carry a ``sessionId`` and that nobody claims,
    until a handler for their session is added (see the module docstring).
    """

    NAME = "client"

    def __init__(self, *, unstable: bool = False, protocol: ProtocolChoice = "negotiate") -> None:
        super().__init__(unstable=unstable)
        if protocol not in (1, 2, "negotiate") or type(protocol) not in (int, str):
            raise ValueError(f'protocol= takes 1, 2 or "negotiate" (offer v2, accept v1); got {protocol!r}')
        #: The ACP version :meth:`SessionConnection.initialize <acpio.session.SessionConnection.initialize>`
        #: asks for: ``1``, ``2``, or ``"negotiate"`` (offer v2, accept a v1 answer).
        self.protocol: ProtocolChoice = protocol

    def __repr__(self) -> str:
        options = [f"protocol={self.protocol!r}"] if self.protocol != "negotiate" else []
        if self.unstable:
            options.insert(0, "unstable=True")
        return f"Client({', '.join(options)})"

    @classmethod
    def builder(
        cls,
        *,
        name: str | None = None,
        unstable: bool = False,
        error_details: bool = True,
        protocol: ProtocolChoice = "negotiate",
    ) -> Builder[SessionConnection]:
        """A new builder for a client; its connections are :class:`~acpio.session.SessionConnection`.

        ``protocol`` is the ACP version ``cx.initialize()`` asks for: ``"negotiate"`` (offer v2 and
        accept a v1 answer on the same connection), ``2`` (v2 only: a v1 agent is an error) or ``1``
        (v1 only). A typed ``cx.send_request(InitializeRequest(...))`` is sent as written.
        """
        return Builder(
            cls(unstable=unstable, protocol=protocol),
            name=name,
            connection_class=_session_connection(),
            error_details=error_details,
        )

    def default_handler(self) -> _ParkSessionMessages:
        """The handler that parks unclaimed session messages until their session's handler exists."""
        return _PARK

    def unclaimed_error(self, message: RequestDispatch) -> RequestError:
        """``-32002``: the agent's request names a session this client never opened (in time)."""
        return ResourceNotFound(
            {"sessionId": message.session_id},
            message=f"Unknown session {message.session_id!r}: this client has no such session",
        )

    def agent_peer(self) -> Agent:
        """The agent is the counterpart (:class:`~acpio.session.SessionPeers`)."""
        return _AGENT

    def client_peer(self) -> None:
        """A client has no client to talk to (:class:`~acpio.session.SessionPeers`)."""
        return None


class Agent(_AcpRole):
    """An ACP agent: its counterpart is the :class:`Client`.

    Its default handler answers ``initialize`` when no handler of the builder does, with
    :attr:`name`, :attr:`version` and :attr:`title` as ``agentInfo`` and the capabilities the
    builder's typed handlers serve (see the module docstring).
    """

    NAME = "agent"

    def __init__(
        self,
        *,
        unstable: bool = False,
        name: str = NAME,
        version: str = "0.0.0",
        title: str | None = None,
    ) -> None:
        super().__init__(unstable=unstable)
        #: ``agentInfo.name`` in the default ``initialize`` answer.
        self.name = name
        #: ``agentInfo.version`` in the default ``initialize`` answer.
        self.version = version
        #: ``agentInfo.title`` in the default ``initialize`` answer (left out when ``None``).
        self.title = title

    @classmethod
    def builder(
        cls,
        *,
        name: str | None = None,
        version: str = "0.0.0",
        title: str | None = None,
        unstable: bool = False,
        error_details: bool = True,
    ) -> Builder[AcpConnection]:
        """A new builder for an agent that answers ``initialize`` unless a handler of its own does.

        ``name`` (default ``"agent"``), ``version`` and ``title`` are the ``agentInfo`` of that
        answer: give ``version`` so that clients can tell releases apart. ``unstable=True`` turns
        the unstable methods on; ``error_details=False`` answers a handler's unexpected exception
        ``-32603`` without its message (see :class:`~acpio.jsonrpc.Builder`). Its connections are
        :class:`~acpio.acp_connection.AcpConnection`: they record the client's capabilities and refuse
        to send it a request it did not advertise.
        """
        role = cls(
            unstable=unstable, name=name if name is not None else cls.NAME, version=version, title=title
        )
        return Builder(role, name=name, connection_class=AcpConnection, error_details=error_details)

    def default_handler(self) -> _AnswerInitialize:
        """The handler that answers ``initialize`` when no handler of the builder claimed it."""
        return _AnswerInitialize(self)

    def agent_peer(self) -> None:
        """An agent has no agent to talk to (:class:`~acpio.session.SessionPeers`)."""
        return None

    def client_peer(self) -> Client:
        """The client is the counterpart (:class:`~acpio.session.SessionPeers`)."""
        return _CLIENT


class Proxy(_AcpRole):
    """A proxy component between a client and an agent, run by a :class:`Conductor`.

    Its counterpart is the conductor; its peers are the :class:`Client` (predecessor) and the
    :class:`Agent` (successor), whose messages travel in ``proxy/successor`` envelopes. What its
    handlers do not claim is forwarded (see the module docstring).

    Each connection gets its own copy (:meth:`for_connection`): :attr:`methods` follows what that
    connection's conductor sent (see "Method names" in the module docstring).
    """

    NAME = "proxy"
    _PROXY_CHAIN_ON = True  # its own machinery

    def __init__(self, methods: ProxyMethods = PROXY_METHODS, *, unstable: bool = False) -> None:
        super().__init__(unstable=unstable)
        #: The names this connection wraps messages for the successor with: those of the last
        #: proxy-chain message the conductor sent (``_proxy/...`` from an older conductor).
        self.methods = methods

    def for_connection(self) -> Proxy:
        """A copy: the method names are remembered per connection."""
        return copy(self)

    @classmethod
    def builder(
        cls, *, name: str | None = None, unstable: bool = False, error_details: bool = True
    ) -> Builder[SessionConnection]:
        """A new builder for a proxy; its connections are :class:`~acpio.session.SessionConnection`."""
        return Builder(
            cls(unstable=unstable),
            name=name,
            connection_class=_session_connection(),
            error_details=error_details,
        )

    def peers(self) -> tuple[Role, ...]:
        """The predecessor (``Client()``) and the successor (``Agent()``)."""
        return _PROXY_PEERS

    def agent_peer(self) -> Agent:
        """The successor, reached through envelopes (:class:`~acpio.session.SessionPeers`)."""
        return _AGENT

    def client_peer(self) -> Client:
        """The predecessor (:class:`~acpio.session.SessionPeers`)."""
        return _CLIENT

    def route_outgoing(self, peer: PeerLike, method: str, params: object) -> tuple[str, object]:
        """Wrap a message for the successor in an envelope; send others unchanged.

        The envelope's method is ``proxy/successor``, or ``_proxy/successor`` when the conductor
        speaks the legacy names (:attr:`methods`). ``$/cancel_request`` is never wrapped: the id it
        names belongs to this connection.
        """
        if self.resolve_send_peer(peer) is _AGENT and method != CANCEL_METHOD:
            return self.methods.successor, SuccessorEnvelope(method, params).to_params()
        return method, params

    def route_incoming(self, method: str, params: JsonValue) -> tuple[Role, str, JsonValue]:
        """An envelope comes from the successor and is unwrapped; anything else is the predecessor's.

        Both names of each proxy-chain method are understood, and the one received sets
        :attr:`methods`. The envelope's own ``_meta`` is dropped (it belongs to its hop);
        ``_proxy/initialize`` reaches the handlers as ``proxy/initialize``. A ``proxy/successor``
        message that is not a valid envelope is left as it is (it reaches the handlers with its
        method and params intact, from the predecessor).
        """
        methods = _METHODS_OF.get(method)
        if methods is None:
            return _CLIENT, method, params
        if method == methods.successor:
            envelope = SuccessorEnvelope.from_params(params)
            if envelope is None:
                return _CLIENT, method, params
            self.methods = methods
            return _AGENT, envelope.method, cast("JsonValue", envelope.params)  # read from the wire: JSON
        self.methods = methods
        return _CLIENT, PROXY_INITIALIZE_METHOD, params

    def default_handler(self) -> _ForwardUnclaimed:
        """The handler that forwards unclaimed traffic between predecessor and successor."""
        return _FORWARD

    def disabled_handler(self) -> _ForwardUnclaimed:
        """What the proxy does not speak (unstable methods while off) is forwarded unchanged."""
        return _FORWARD


class Conductor(_AcpRole):
    """The conductor's side of a connection to one :class:`Proxy`: its counterpart is the proxy.

    It has no default handler and wraps nothing by itself; a conductor routes between its
    connections with :class:`SuccessorEnvelope`, and chooses per connection which
    :class:`ProxyMethods` it sends.
    """

    NAME = "conductor"

    def disabled_methods(self) -> frozenset[str]:
        """None: a conductor only routes, so it passes unstable methods on whatever the switch says."""
        return frozenset()


Client.COUNTERPART = Agent
Agent.COUNTERPART = Client
Proxy.COUNTERPART = Conductor
Conductor.COUNTERPART = Proxy

_AGENT: Final = Agent()
_CLIENT: Final = Client()
_PROXY_PEERS: Final[tuple[Role, ...]] = (_CLIENT, _AGENT)


# --- default handlers -----------------------------------------------------------------------------


class _ParkSessionMessages:
    """A Client's default handler: park unclaimed requests and notifications that carry a sessionId."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ParkSessionMessages()"

    def accepts(self, message: Dispatch) -> bool:
        """Requests and notifications (responses go straight to their callers)."""
        return type(message) is not ResponseDispatch

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Decline; ask for a retry when the message names a session.

        A request of a session method that names no session is answered ``-32602`` (not the
        ``-32601`` an unclaimed request gets): the method exists, its params are wrong.
        """
        if message.session_id is not None:
            return Unhandled(message, retry=True)
        if type(message) is RequestDispatch and _needs_session_id(message.method):
            assert isinstance(message, RequestDispatch)
            message.responder.respond_with_error(
                InvalidParams(
                    {"sessionId": "required"},
                    message=f"{message.method} needs a string sessionId naming one of the client's sessions",
                )
            )
            return None
        return Unhandled(message)


def _needs_session_id(method: str) -> bool:
    """Whether the schema's params of ``method`` require ``sessionId``."""
    from acpio.schema import REQUESTS

    spec = REQUESTS.get(method)
    if spec is None:
        return False
    field = spec.params.model_fields.get("session_id")
    return field is not None and field.is_required()


class _AnswerInitialize:
    """An Agent's default handler: the ``initialize`` answer of an agent whose builder gave none."""

    __slots__ = ("agent",)

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def __repr__(self) -> str:
        return f"AnswerInitialize({self.agent.name!r}, {self.agent.version!r})"

    def accepts(self, message: Dispatch) -> bool:
        """``initialize`` requests."""
        return message.method == _INITIALIZE and type(message) is RequestDispatch

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Answer with the negotiated version, ``agentInfo`` and the capabilities ``cx``'s handlers serve.

        Params that are not an ``InitializeRequest`` answer ``-32602`` (raised, the chain answers).
        """
        from acpio.schema import Implementation, InitializeRequest, InitializeResponse
        from acpio.versions import select_version

        assert isinstance(message, RequestDispatch)
        request: InitializeRequest = message.parse(InitializeRequest)
        agent = self.agent
        titled = {} if agent.title is None else {"title": agent.title}
        info = Implementation(name=agent.name, version=agent.version, **titled)
        message.responder.respond(
            InitializeResponse(
                protocol_version=select_version(request.protocol_version, (1,)),
                agent_info=info,
                agent_capabilities=_agent_capabilities(cx.handler_methods),
            )
        )
        return None


def _agent_capabilities(handled: frozenset[str]) -> Any:
    """The ``agentCapabilities`` of an agent whose handlers take ``handled``: nothing more.

    A capability of the method table (``acpio.schema.METHODS``) is on when every client-to-agent
    method that needs it has a handler (``sessionCapabilities.archive`` needs both
    ``session/archive`` and ``session/unarchive``). Leaves are ``{}`` (present: on), or ``true``
    where the schema wants a boolean (``loadSession``).
    """
    from acpio.schema import METHODS, AgentCapabilities

    needs: dict[str, set[str]] = {}
    for row in METHODS:
        capability = row.capability
        if capability is not None and capability.startswith("A.") and row.direction == "client_to_agent":
            needs.setdefault(capability[2:], set()).add(row.method)
    wire: dict[str, Any] = {}
    for path, methods in sorted(needs.items()):
        if not methods <= handled:
            continue
        *parents, leaf = path.split(".")
        node = wire
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = {}
        # An invalid value is read leniently (as the default, off): see whether ``{}`` survived.
        kept: Any = AgentCapabilities.model_validate(wire).to_wire()
        for part in path.split("."):
            kept = kept.get(part) if isinstance(kept, dict) else None
        if kept != {}:
            node[leaf] = True
    return AgentCapabilities.model_validate(wire)


class _ForwardUnclaimed:
    """A Proxy's default handler: forward what nobody claimed to the other side of the chain."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "ForwardUnclaimed()"

    def accepts(self, message: Dispatch) -> bool:
        """Requests and notifications (responses go straight to their callers)."""
        return type(message) is not ResponseDispatch

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Forward ``message``: to the client if it came from the agent, else to the agent."""
        if message.is_from(Agent):
            cx.send_proxied_message_to(_CLIENT, message)
            await cx.drain()  # a slow client slows the reading of what the agent sends
            return None
        if type(message) is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            if message.method == _INITIALIZE:
                message.responder.respond_with_error(
                    InvalidRequest(
                        f"proxies must be initialized with `{PROXY_INITIALIZE_METHOD}` (or "
                        f"`{LEGACY_PROXY_INITIALIZE_METHOD}`), not `initialize`: run this proxy "
                        "under a conductor, or serve the client with an Agent builder"
                    )
                )
                return None
            if message.method == PROXY_INITIALIZE_METHOD:
                _forward_proxy_initialize(message, cx)
                return None
            if message.method == _SESSION_NEW:
                _forward_session_new(message, cx)
                return None
        cx.send_proxied_message_to(_AGENT, message)
        await cx.drain()
        return None


def _forward_proxy_initialize(message: RequestDispatch, cx: Connection) -> None:
    """Forward ``proxy/initialize`` as ``initialize``; the answer's version is this proxy's too.

    Recorded before the answer goes back (:func:`note_protocol_version`), so that typed handlers of
    another version pass the chain's messages on whole (see :class:`~acpio.jsonrpc.RequestHandler`).
    """
    responder = message.responder
    sent = cx.send_request_to(_AGENT, UntypedMessage(_INITIALIZE, message.params))
    sent.forward_cancellation_from(responder)

    async def answered(result: Any) -> None:
        if isinstance(result, AcpError):
            responder.respond_with_error(result)
            return
        note_protocol_version(cx, result)
        responder.respond(result)

    sent.on_receiving_result(answered)


def note_protocol_version(cx: Connection, answer: object) -> None:
    """Record on a proxy's connection the version of the ``initialize`` ``answer`` passing through it.

    A proxy that answers ``proxy/initialize`` itself (with what its successor answered ``initialize``)
    calls it, as the default forwarding does: the connection's ``protocol_version`` is then the
    chain's, and its typed handlers of the other version stand aside.
    """
    version = answer.get("protocolVersion") if type(answer) is dict else None
    if type(version) is int and isinstance(cx, AcpConnection):
        cx.peer_state.record_answer(version)


def _forward_session_new(message: RequestDispatch, cx: Connection) -> None:
    """Forward ``session/new``; on success route the new session's messages back to the client.

    The routing is installed by an ordered response callback, so it is in place before the message
    after the response is dispatched.
    """
    responder = message.responder
    sent = cx.send_request_to(_AGENT, UntypedMessage(_SESSION_NEW, message.params))
    sent.forward_cancellation_from(responder)

    async def answered(result: Any) -> None:
        if isinstance(result, AcpError):
            responder.respond_with_error(result)
            return
        session_id = result.get("sessionId") if type(result) is dict else None
        if type(session_id) is str:
            cx.add_dynamic_handler(ProxySessionMessages(session_id)).run_indefinitely()
        responder.respond(result)

    sent.on_receiving_result(answered)


_PARK: Final = _ParkSessionMessages()
_FORWARD: Final = _ForwardUnclaimed()


class ProxySessionMessages:
    """A dynamic handler for a proxy: forwards one session's messages from the agent to the client.

    Add it once the session exists (``cx.add_dynamic_handler(ProxySessionMessages(session_id))``);
    it claims requests and notifications from the :class:`Agent` whose ``sessionId`` is
    ``session_id`` and sends them on with ``cx.send_proxied_message_to(Client, message)``.
    """

    __slots__ = ("session_id",)

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id

    def __repr__(self) -> str:
        return f"ProxySessionMessages({self.session_id!r})"

    @property
    def session_scope(self) -> str:
        """Only this session's messages: the handler chain offers it no other (its session index)."""
        return self.session_id

    def accepts(self, message: Dispatch) -> bool:
        """Requests and notifications from the agent about this handler's session."""
        return (
            (type(message) is NotificationDispatch or type(message) is RequestDispatch)
            and message.is_from(Agent)
            and message.session_id == self.session_id
        )

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        """Forward the message to the client."""
        if not self.accepts(message):
            return Unhandled(message)
        cx.send_proxied_message_to(_CLIENT, message)
        await cx.drain()
        return None


if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
