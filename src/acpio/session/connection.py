"""The connection of Client and Proxy builders: an ACP connection that also starts sessions."""

from __future__ import annotations

from acpio.acp_connection import AcpConnection
from acpio.session.methods import SessionMethods

__all__ = ["SessionConnection"]


class SessionConnection(SessionMethods, AcpConnection):
    """The connection handle (``cx``) of Client and Proxy builders: it starts sessions.

    An :class:`~acpio.acp_connection.AcpConnection` (the agent's peer state and the checks of what
    is sent to it, the cancel rule of permission requests) with the session builders
    (:meth:`build_session`, :meth:`build_session_cwd`, :meth:`build_session_load`,
    :meth:`build_session_resume`, :meth:`build_session_fork`, :meth:`build_session_from`) and
    :meth:`attach_session`. Annotate ``cx`` with it to have the type checker see them.
    """
