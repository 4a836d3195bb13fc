"""Which peer of a connection is the agent, which the client: what the session helpers address."""

from __future__ import annotations

from acpio.acp_connection import SessionPeers, agent_role, client_role
from acpio.jsonrpc import Connection, Role

__all__ = ["SessionPeers", "agent_peer", "agent_role", "client_peer", "client_role"]


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
