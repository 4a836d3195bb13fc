"""Which peer of a connection is the agent, which the client: what the session helpers address."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from acpio.jsonrpc import Connection, Role

# --- peers ---------------------------------------------------------------------------------------


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


def agent_peer(cx: Connection) -> Role | None:
    """How to address the agent on ``cx`` (``None``: the counterpart); a clear error if it has none."""
    role = cx.role
    if not isinstance(role, SessionPeers):
        return None
    agent = role.agent_peer()
    if agent is None:
        raise TypeError(
            f"Connection {cx.name!r} is a {type(role).__name__} connection: it has no agent to "
            "open sessions with. Sessions are started from a Client or a Proxy connection."
        )
    return None if agent == cx.counterpart else agent


def client_peer(cx: Connection) -> Role | None:
    """How to address the client on ``cx`` (``None``: the counterpart); a clear error if it has none."""
    role = cx.role
    if not isinstance(role, SessionPeers):
        return None
    client = role.client_peer()
    if client is None:
        raise TypeError(
            f"Connection {cx.name!r} is a {type(role).__name__} connection: it has no client to "
            "forward session messages to. Proxy mode needs a Proxy connection."
        )
    return None if client == cx.counterpart else client
