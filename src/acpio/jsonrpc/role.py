"""Who one side of a connection is: :class:`Role`.

A role names the side and its counterpart, adds a *default handler* at the end of the chain, says
how a message addressed to one of its peers is sent (:meth:`Role.route_outgoing`), which peer an
incoming message came from (:meth:`Role.route_incoming`), which methods it does not speak, and how
long messages may wait for a handler. The engine's own role, :class:`~acpio.jsonrpc.UntypedRole`,
keeps every default; the ACP roles in :mod:`acpio.roles` subclass :class:`Role`.
"""

from __future__ import annotations

from typing import ClassVar, TypeAlias

from acpio.errors import MethodNotFound, RequestError
from acpio.jsonrpc.dispatch import Handler, RequestDispatch
from acpio.jsonrpc.messages import JsonValue
from acpio.jsonrpc.parking import ParkingLimits

__all__ = ["PeerLike", "Role"]

_PARKING = ParkingLimits()


class Role:
    """Who one side of a connection is.

    Subclasses set :attr:`NAME` and :attr:`COUNTERPART`, and may override :meth:`peers`,
    :meth:`default_handler` (the handler placed after the dynamic handlers),
    :meth:`route_outgoing` (how a message for one of :meth:`peers` is sent, for example wrapped in
    an envelope) and :meth:`route_incoming` (which peer an incoming message came from, and what the
    handlers see of it, for example the message unwrapped from its envelope).
    """

    #: A short name for logs.
    NAME: ClassVar[str] = "role"
    #: The role of the other side; ``None`` means the role is its own counterpart.
    COUNTERPART: ClassVar[type[Role] | None] = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def counterpart(self) -> Role:
        """The role at the other end of the connection."""
        return (self.COUNTERPART or type(self))()

    def peers(self) -> tuple[Role, ...]:
        """The roles this side can address; by default only the counterpart."""
        return (self.counterpart(),)

    def default_handler(self) -> Handler | None:
        """The handler placed after the dynamic handlers, or ``None`` (the base has none)."""
        return None

    def parking_limits(self) -> ParkingLimits:
        """How many messages a connection parks for handlers added later, and for how long."""
        return _PARKING

    def unclaimed_error(self, message: RequestDispatch) -> RequestError:
        """The answer to a parked request no handler claimed in time (by default ``-32601``)."""
        return MethodNotFound(message.method)

    def for_connection(self) -> Role:
        """The role instance one new connection plays (by default: this one, shared).

        A builder may serve several connections with one role. A role whose routing keeps state
        per connection (the ACP ``Proxy`` remembers which names its conductor uses for the
        proxy-chain methods) returns a copy here, so connections never share that state.
        """
        return self

    def disabled_methods(self) -> frozenset[str]:
        """Methods of the protocol this side does not speak (by default: none).

        The connection enforces them, so a role can switch off part of its protocol (the ACP roles
        switch off the unstable methods unless asked for them):

        * sending one with ``send_request``/``send_notification`` raises :meth:`disabled_error`
          before anything is written; forwarding with ``send_proxied_message`` is not checked
          (passing a message on is not speaking it);
        * an incoming request or notification for one never reaches the builder's or the dynamic
          handlers: it goes to :meth:`disabled_handler`, or, when there is none, to the fallback
          (``-32601`` with the method in ``data`` for a request, as for any unknown method; a
          notification is dropped); the response to a forwarded one goes straight to its caller;
        * registering a typed handler for one raises :meth:`disabled_error` at once.

        Called once per connection (and per typed-handler registration); return the same set.
        """
        return frozenset()

    def disabled_error(self, method: str, action: str) -> Exception:
        """The error for trying to ``action`` (``"send"`` or ``"handle"``) a disabled ``method``."""
        return ValueError(f"Cannot {action} {method!r}: {type(self).__name__} connections do not speak it")

    def disabled_handler(self) -> Handler | None:
        """The handler that takes incoming messages for :meth:`disabled_methods`, or ``None``.

        The base has none, so they get the fallback; a proxy role returns its forwarding handler, so
        that what it does not speak still passes through it unchanged.
        """
        return None

    def resolve_peer(self, peer: PeerLike) -> Role:
        """``peer`` (a role class or instance) as the instance from :meth:`peers`.

        Raises ``ValueError`` naming the peers this role has when ``peer`` is not one of them.
        """
        wanted = peer() if isinstance(peer, type) and issubclass(peer, Role) else peer
        for known in self.peers():
            if known == wanted:
                return known
        names = ", ".join(type(p).__name__ for p in self.peers())
        name = peer.__name__ if isinstance(peer, type) else repr(peer)
        raise ValueError(
            f"{name} is not a peer of a {type(self).__name__} connection; its peers are: {names}"
        )

    def route_outgoing(self, peer: PeerLike, method: str, params: object) -> tuple[str, object]:
        """The method and params to send a message for ``peer`` with (by default: unchanged).

        ``peer`` is a role (class or instance) from :meth:`peers`; anything else is an error.
        """
        self.resolve_send_peer(peer)
        return method, params

    def resolve_send_peer(self, peer: PeerLike) -> Role:
        """:meth:`resolve_peer` for a message to send: the error says that sending is what failed."""
        try:
            return self.resolve_peer(peer)
        except ValueError as exc:
            name = peer.__name__ if isinstance(peer, type) else repr(peer)
            raise ValueError(f"{type(self).__name__} cannot send to {name}: {exc}") from None

    def route_incoming(self, method: str, params: JsonValue) -> tuple[Role, str, JsonValue]:
        """The peer an incoming request or notification came from, and its method and params.

        Called once per incoming request or notification, before the handler chain. The default:
        it came from the counterpart, unchanged. A role that receives messages from several peers
        over one connection (a proxy) overrides this to tell them apart and unwrap them.
        """
        return self.counterpart(), method, params


#: A peer as handlers and senders name it: a role class (``Agent``) or instance (``Agent()``).
PeerLike: TypeAlias = Role | type[Role]
