"""The entry points: one session builder per setup method, as functions and as connection methods."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar, cast

from acpio.errors import InternalError
from acpio.jsonrpc import Connection, DynamicHandlerRegistration
from acpio.schema import ForkSessionRequest, LoadSessionRequest, NewSessionRequest, ResumeSessionRequest
from acpio.session.active import ActiveSession, SessionSetupRequest, SessionSetupResponse
from acpio.session.builder import SessionBuilder, attach_session

#: A setup request, for functions generic over it.
_R = TypeVar("_R", bound=SessionSetupRequest)


def build_session(cx: Connection, cwd: str | os.PathLike[str]) -> SessionBuilder[NewSessionRequest]:
    """A :class:`SessionBuilder` for a new session (``session/new``) working in ``cwd``, no MCP servers yet.

    ACP requires an absolute ``cwd``: a relative one is made absolute against the current
    directory (without resolving symbolic links).
    """
    return SessionBuilder(cx, NewSessionRequest(cwd=_absolute(cwd), mcp_servers=[]))


def build_session_cwd(cx: Connection) -> SessionBuilder[NewSessionRequest]:
    """A :class:`SessionBuilder` for a new session working in the current directory.

    Raises :class:`~acpio.InternalError` if the current directory no longer exists.
    """
    try:
        cwd = Path.cwd()
    except OSError as exc:
        raise InternalError(
            message=f"Cannot get the current directory ({exc}); pass one with build_session(cx, cwd)"
        ) from exc
    return build_session(cx, cwd)


def build_session_load(
    cx: Connection, session_id: str, cwd: str | os.PathLike[str]
) -> SessionBuilder[LoadSessionRequest]:
    """A :class:`SessionBuilder` loading an existing session (``session/load``) in ``cwd``.

    The agent replays the conversation before it answers; the started session has it in
    :attr:`ActiveSession.history`, in order, and :meth:`ActiveSession.read_update` gives only what
    comes after. The agent must advertise ``loadSession``. ``cwd`` as for :func:`build_session`.
    """
    return SessionBuilder(cx, LoadSessionRequest(session_id=session_id, cwd=_absolute(cwd), mcp_servers=[]))


def build_session_resume(
    cx: Connection, session_id: str, cwd: str | os.PathLike[str]
) -> SessionBuilder[ResumeSessionRequest]:
    """A :class:`SessionBuilder` resuming an existing session (``session/resume``) in ``cwd``.

    Nothing is replayed: the session goes on from where it was. The agent must advertise
    ``sessionCapabilities.resume``. ``cwd`` as for :func:`build_session`.
    """
    return SessionBuilder(cx, ResumeSessionRequest(session_id=session_id, cwd=_absolute(cwd), mcp_servers=[]))


def build_session_fork(
    cx: Connection, session_id: str, cwd: str | os.PathLike[str]
) -> SessionBuilder[ForkSessionRequest]:
    """A :class:`SessionBuilder` forking session ``session_id`` into a new one (``session/fork``).

    The new session starts from the context of the old one, which is left as it was; its id is in
    the agent's answer (:attr:`ActiveSession.session_id`). ``session/fork`` is unstable: the
    connection must be made with ``Client.builder(unstable=True)`` (``Proxy`` likewise) and the agent
    must advertise ``sessionCapabilities.fork``. ``cwd`` as for :func:`build_session`.
    """
    return SessionBuilder(cx, ForkSessionRequest(session_id=session_id, cwd=_absolute(cwd), mcp_servers=[]))


def build_session_from(cx: Connection, request: _R) -> SessionBuilder[_R]:
    """A :class:`SessionBuilder` starting from an existing setup request (copied).

    ``request`` is a ``NewSessionRequest``, ``LoadSessionRequest``, ``ResumeSessionRequest`` or
    ``ForkSessionRequest``: for a proxy that intercepted a client's request and wants to change it
    (add MCP servers, say) before sending it on, or to set fields the other helpers do not take
    (``additional_directories``...).
    """
    return SessionBuilder(cx, cast(_R, request.model_copy(deep=True)))


def _absolute(cwd: str | os.PathLike[str]) -> str:
    return str(Path(cwd).absolute())


class SessionMethods:
    """Mixin for a connection class: ``cx.build_session(cwd)`` and friends as methods.

    A class that inherits both this and :class:`~acpio.jsonrpc.Connection` gets
    :meth:`build_session`, :meth:`build_session_cwd`, :meth:`build_session_load`,
    :meth:`build_session_resume`, :meth:`build_session_fork`, :meth:`build_session_from` and
    :meth:`attach_session`, each the module function of the same name applied to ``self``.
    """

    __slots__ = ()

    def build_session(self, cwd: str | os.PathLike[str]) -> SessionBuilder[NewSessionRequest]:
        """See :func:`acpio.session.build_session`."""
        return build_session(cast("Connection", self), cwd)

    def build_session_cwd(self) -> SessionBuilder[NewSessionRequest]:
        """See :func:`acpio.session.build_session_cwd`."""
        return build_session_cwd(cast("Connection", self))

    def build_session_load(
        self, session_id: str, cwd: str | os.PathLike[str]
    ) -> SessionBuilder[LoadSessionRequest]:
        """See :func:`acpio.session.build_session_load`."""
        return build_session_load(cast("Connection", self), session_id, cwd)

    def build_session_resume(
        self, session_id: str, cwd: str | os.PathLike[str]
    ) -> SessionBuilder[ResumeSessionRequest]:
        """See :func:`acpio.session.build_session_resume`."""
        return build_session_resume(cast("Connection", self), session_id, cwd)

    def build_session_fork(
        self, session_id: str, cwd: str | os.PathLike[str]
    ) -> SessionBuilder[ForkSessionRequest]:
        """See :func:`acpio.session.build_session_fork`."""
        return build_session_fork(cast("Connection", self), session_id, cwd)

    def build_session_from(self, request: _R) -> SessionBuilder[_R]:
        """See :func:`acpio.session.build_session_from`."""
        return build_session_from(cast("Connection", self), request)

    def attach_session(
        self,
        response: SessionSetupResponse,
        mcp_registrations: Iterable[DynamicHandlerRegistration] = (),
        *,
        session_id: str | None = None,
    ) -> ActiveSession:
        """See :func:`acpio.session.attach_session`."""
        return attach_session(cast("Connection", self), response, mcp_registrations, session_id=session_id)
