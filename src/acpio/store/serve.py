"""Serving the session methods of an Agent builder from a :class:`~acpio.store.SessionStore`.

One call, :func:`serve_sessions`, registers ``session/new``, ``session/load``, ``session/resume``,
``session/list``, ``session/close`` and ``session/delete`` (and, on a builder with the unstable
methods on, ``session/fork``, ``session/archive``, ``session/unarchive``, ``session/status`` and
``session/set_title``), so the Agent role's default ``initialize`` answer advertises exactly those
capabilities (:meth:`StoredSessions.agent_capabilities` gives them to an agent that answers
``initialize`` itself). Every ``session/update`` the agent then sends for a session it has open is
recorded in the store, as sent.

* ``session/load`` replays the stored history as ``session/update`` notifications, then answers;
  ``session/resume`` replays nothing. Both take the client's MCP servers and additional
  directories as the new full lists, and refuse a ``cwd`` other than the session's (``-32602``).
* An unknown id gets ``-32002`` with ``{"sessionId": ...}`` in ``data`` (``session/delete`` of an
  unknown id succeeds, as the spec asks).
* A session is *open* on the connection that set it up until ``session/close``,
  ``session/delete``, ``session/archive`` or the end of that connection; ``session/status``
  answers ``open`` for it (``saved`` for any other stored session).

The agent keeps its own per-session work (a running turn, MCP connections) and hears of each
session opened and closed through ``on_open`` and ``on_close``.

:class:`StoredSessions` registers the methods and answers those that only read or change the
store; it sets sessions up through :class:`~acpio.store.setup_methods.SetupMethods` and keeps
which are open where, and records their updates, in
:class:`~acpio.store.open_sessions.OpenSessions`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from acpio import schema as acp
from acpio.errors import InvalidParams
from acpio.jsonrpc import Builder, Connection, RawJson
from acpio.store.base import ArchiveFilter, SessionRecord, SessionStore
from acpio.store.open_sessions import CloseHook, OpenHook, OpenSessions, SessionSetup, SuccessorHook
from acpio.store.setup_methods import SetupMethods, check_cwd

__all__ = ["CloseHook", "OpenHook", "SessionSetup", "StoredSessions", "serve_sessions"]

#: The ``sessionCapabilities`` of the methods served beside ``session/new`` and ``session/load``,
#: in the models' field order: without and with the unstable methods.
_SESSION_CAPABILITIES: dict[bool, tuple[str, ...]] = {
    False: ("list", "delete", "resume", "close"),
    True: ("list", "delete", "fork", "archive", "status", "title", "resume", "close"),
}


class StoredSessions:
    """The session methods of an agent, served from ``store``: what :func:`serve_sessions` registers.

    Its handler methods may also be registered one by one (``builder.on_request(sessions.load)``),
    for an agent that serves only some of them.
    """

    def __init__(
        self,
        store: SessionStore,
        *,
        on_open: OpenHook | None = None,
        on_close: CloseHook | None = None,
        unstable: bool = False,
        successor: SuccessorHook | None = None,
    ) -> None:
        #: Where the sessions are kept.
        self.store = store
        #: Whether the unstable methods (fork, archive, unarchive, status, set_title) are served.
        self.unstable = unstable
        self._open = OpenSessions(store, on_open=on_open, on_close=on_close, successor=successor)
        self._setup = SetupMethods(store, self._open)
        #: Read on every update an app's v2 turn sends (:meth:`is_open`): no call in between.
        self._live = self._open.connections

    def __repr__(self) -> str:
        return f"<StoredSessions {self.store!r} open={len(self._live)}>"

    def is_open(self, session_id: str) -> bool:
        """Whether the session is open on one of this agent's connections (its updates are recorded)."""
        return session_id in self._live

    # --- registering --------------------------------------------------------------------------------

    def register(self, builder: Builder[Connection]) -> None:
        """Register the session handlers, the recorder and the end-of-connection cleanup on ``builder``."""
        for handler in self.handlers().values():
            builder.on_request(handler)
        self.register_upkeep(builder)

    def register_upkeep(self, builder: Builder[Connection]) -> None:
        """Register what :meth:`register` adds beside the handlers: the recorder and the cleanups.

        For an agent that registers the handlers (:meth:`handlers`) its own way.
        """
        sessions = self._open  # its own methods: no call in between on each update sent
        builder.on_send_notification(sessions.record)
        builder.on_close(sessions.connection_closed)
        builder.with_spawned(sessions.watch)

    def handlers(self) -> dict[str, Callable[..., Awaitable[Any]]]:
        """The typed handler of each session method served, by its method name."""
        served: list[Callable[..., Awaitable[Any]]] = [
            self.new,
            self.load,
            self.resume,
            self.list,
            self.close,
            self.delete,
        ]
        if self.unstable:
            served += [self.fork, self.archive, self.unarchive, self.status, self.set_title]
        return {f"session/{handler.__name__}": handler for handler in served}  # each method's name

    def agent_capabilities(self, base: acp.AgentCapabilities | None = None) -> acp.AgentCapabilities:
        """``base`` (default: none) with the capabilities of the methods served here turned on.

        The models of :meth:`agent_capabilities_wire`'s JSON: one rule for both.
        """
        wire = self.agent_capabilities_wire(base.to_wire() if base is not None else {})
        return acp.AgentCapabilities.model_validate(wire)

    def agent_capabilities_wire(self, base: dict[str, Any]) -> dict[str, Any]:
        """``base`` (``agentCapabilities`` JSON) with the capabilities of the methods served here turned on.

        ``loadSession``, the ``sessionCapabilities`` of the other methods and, for a store whose
        sessions end with the process, acpio's hint to clients in ``_meta``. Written without models:
        in their field order for a base of ``promptCapabilities`` and ``mcpCapabilities`` (what an
        :class:`~acpio.app.AgentApp` advertises), the same values for any other.
        """
        session = dict(base.get("sessionCapabilities") or {})
        session.update((name, {}) for name in _SESSION_CAPABILITIES[self.unstable])
        capabilities: dict[str, Any] = {"loadSession": True}
        capabilities.update(base)
        capabilities.update(loadSession=True, sessionCapabilities=session)
        if not self.store.outlives_process:
            # acpio's own hint to clients: do not offer to continue these sessions in another process.
            meta = dict(capabilities.pop("_meta", None) or {})
            meta["acpio"] = {**meta.get("acpio", {}), "sessionsEndWithProcess": True}
            capabilities["_meta"] = meta
        return capabilities

    # --- recording (:mod:`acpio.store.open_sessions`) -----------------------------------------------

    def record(self, cx: Connection, method: str, params: RawJson | None) -> None:
        """The send observer: store a ``session/update`` for an open session, as sent."""
        self._open.record(cx, method, params)

    # --- setup (:mod:`acpio.store.setup_methods`) ---------------------------------------------------

    async def new(self, req: acp.NewSessionRequest, cx: Connection) -> acp.NewSessionResponse:
        """``session/new``: a new stored session, open on this connection."""
        return await self._setup.new(req, cx)

    async def open_new(
        self, cwd: str, additional_directories: Sequence[str], cx: Connection
    ) -> tuple[SessionRecord, SessionSetup]:
        """:meth:`new` from plain values and no MCP servers, without its answer: the record and setup.

        For an agent that writes the answer itself (an :class:`~acpio.app.AgentApp` writes the
        JSON its models would, when the ``on_open`` hook gave its setup as JSON:
        :attr:`SessionSetup.wire`).
        """
        return await self._setup.open_new(cwd, additional_directories, [], cx)

    async def load(self, req: acp.LoadSessionRequest, cx: Connection) -> acp.LoadSessionResponse:
        """``session/load``: replay the history as ``session/update`` notifications, then answer."""
        return await self._setup.load(req, cx)

    async def resume(self, req: acp.ResumeSessionRequest, cx: Connection) -> acp.ResumeSessionResponse:
        """``session/resume``: open the session again without replaying anything."""
        return await self._setup.resume(req, cx)

    async def fork(self, req: acp.ForkSessionRequest, cx: Connection) -> acp.ForkSessionResponse:
        """``session/fork`` (unstable): a new open session with a copy of the history."""
        return await self._setup.fork(req, cx)

    async def reopen(
        self,
        method: str,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[Any] | None,
        additional_directories: Sequence[str] | None,
    ) -> SessionRecord:
        """Make ``session_id`` ready to open again on a new connection (``method``: load, resume...).

        Refuses a relative ``cwd`` or one other than the session's (``-32602``), an unknown id
        (``-32002``); closes the session where it is open; takes the new MCP servers and additional
        directories. :meth:`opened` then opens it.
        """
        return await self._setup.reopen(method, session_id, cwd, mcp_servers, additional_directories)

    async def opened(self, record: SessionRecord, method: str, cx: Connection) -> SessionSetup:
        """``record`` is open on ``cx`` now (its updates are recorded): the agent's ``on_open`` hook."""
        return await self._open.open(record, method, cx)

    # --- the other session methods ------------------------------------------------------------------

    async def list(self, req: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        """``session/list``: a page of stored sessions, most recently updated first."""
        if req.cwd is not None:
            check_cwd("session/list", req.cwd)
        archived: ArchiveFilter = "exclude"
        if self.unstable and req.archived in ("include", "only"):
            archived = "include" if req.archived == "include" else "only"
        page = await self.store.list(cwd=req.cwd, cursor=req.cursor, archived=archived)
        answer = acp.ListSessionsResponse(sessions=[_info(record, self.unstable) for record in page.sessions])
        if page.next_cursor is not None:
            answer.next_cursor = page.next_cursor
        return answer

    async def close(self, req: acp.CloseSessionRequest) -> acp.CloseSessionResponse:
        """``session/close``: stop the session's work and give it up; it stays stored (unknown: -32002)."""
        await self.store.require(req.session_id)
        await self._open.shut(req.session_id)
        return acp.CloseSessionResponse()

    async def delete(self, req: acp.DeleteSessionRequest) -> acp.DeleteSessionResponse:
        """``session/delete``: stop the session's work and forget it (an unknown id succeeds)."""
        await self._open.shut(req.session_id)
        await self.store.delete(req.session_id)
        return acp.DeleteSessionResponse()

    async def archive(self, req: acp.ArchiveSessionRequest) -> acp.ArchiveSessionResponse:
        """``session/archive`` (unstable): close the session if open, hide it from default listings."""
        await self.store.require(req.session_id)
        await self._open.shut(req.session_id)
        await self.store.archive(req.session_id)
        return acp.ArchiveSessionResponse()

    async def unarchive(self, req: acp.UnarchiveSessionRequest) -> acp.UnarchiveSessionResponse:
        """``session/unarchive`` (unstable): list the session again (it is not opened)."""
        await self.store.unarchive(req.session_id)
        return acp.UnarchiveSessionResponse()

    async def status(self, req: acp.SessionStatusRequest) -> acp.SessionStatusResponse:
        """``session/status`` (unstable): ``open`` or ``saved``, with no side effect."""
        status = await self.store.status(req.session_id)
        if status is None:
            await self.store.require(req.session_id)  # raises -32002
        return acp.SessionStatusResponse(status=status or "saved")

    async def set_title(self, req: acp.SetSessionTitleRequest) -> acp.SetSessionTitleResponse:
        """``session/set_title`` (unstable): store the title, trimmed (``-32602`` if that leaves nothing).

        Where the session is open (on this connection or another client's), a ``session_info_update``
        with the title goes there too, and into its history: every view of it shows the new title.
        """
        title = " ".join(req.title.split())
        if not title:
            raise InvalidParams({"title": req.title}, message="session/set_title: the title is empty")
        record = await self.store.set_title(req.session_id, title)
        owner = self._live.get(req.session_id)
        if owner is not None:
            info = acp.SessionInfoUpdate(title=title, updated_at=record.updated_at)
            owner.send_notification(acp.SessionNotification(session_id=req.session_id, update=info))
        return acp.SetSessionTitleResponse(title=title)

    # --- open sessions' ends (:mod:`acpio.store.open_sessions`) ---------------------------------------

    async def shut(self, session_id: str) -> None:
        """End the session's life on its connection, if it is open: the agent's hook, then the store."""
        await self._open.shut(session_id)

    async def connection_closed(self, cx: Connection) -> None:
        """The end of a connection closes the sessions open on it (or hands them to their ``successor``)."""
        await self._open.connection_closed(cx)

    async def watch(self, cx: Connection) -> None:
        """Close the sessions of a connection that failed (``on_close`` runs on a clean end only)."""
        await self._open.watch(cx)


def serve_sessions(
    builder: Builder[Connection],
    store: SessionStore,
    *,
    on_open: OpenHook | None = None,
    on_close: CloseHook | None = None,
) -> StoredSessions:
    """Serve the session methods of ``builder`` (an Agent builder) from ``store``; see the module docstring.

    The unstable methods are served when the builder's role has them on
    (``Agent.builder(unstable=True)``). Returns the :class:`StoredSessions` that serves them.
    """
    sessions = StoredSessions(
        store, on_open=on_open, on_close=on_close, unstable=bool(getattr(builder.role, "unstable", False))
    )
    sessions.register(builder)
    return sessions


def _info(record: SessionRecord, unstable: bool) -> acp.SessionInfo:
    """A stored session as ``session/list`` lists it (``archived`` with the unstable methods)."""
    info = acp.SessionInfo(session_id=record.session_id, cwd=record.cwd, updated_at=record.updated_at)
    if record.title is not None:
        info.title = record.title
    if unstable:
        info.archived = record.archived
    return info
