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
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

import orjson

from acpio import schema as acp
from acpio.errors import InvalidParams
from acpio.jsonrpc import Builder, Connection, RawJson
from acpio.store.base import ArchiveFilter, SessionRecord, SessionStore, StoreError, session_id_of

__all__ = ["CloseHook", "OpenHook", "SessionSetup", "StoredSessions", "serve_sessions"]

_log = logging.getLogger("acpio.store")

_UPDATE: Final = "session/update"
#: Replayed updates sent between two waits for the client to read (``cx.drain()``).
_DRAIN_EVERY: Final = 256


@dataclass(slots=True)
class SessionSetup:
    """What a session-setup answer carries beside the id: the session's modes and config options.

    Either as models, or as their JSON (``wire``: ``modes`` and ``configOptions``, as the models
    write them), which :meth:`StoredSessions.answer_new` sends without building a model.
    """

    modes: acp.SessionModeState | None = None
    config_options: list[acp.SessionConfigOption] | None = field(default=None)
    wire: dict[str, Any] | None = None

    def fields(self) -> dict[str, Any]:
        """The fields to put in an answer: those set (an unset one is left out, not sent as ``null``)."""
        found: dict[str, Any] = dict(self.wire or {})  # the models read their JSON as well
        if self.modes is not None:
            found["modes"] = self.modes
        if self.config_options is not None:
            found["config_options"] = self.config_options
        return found


#: ``await on_open(record, method, cx)``: a session was opened (``method``: ``session/new``,
#: ``session/load``, ``session/resume`` or ``session/fork``), before the answer is sent; what it
#: returns goes into the answer.
OpenHook: TypeAlias = Callable[[SessionRecord, str, Connection], Awaitable[SessionSetup | None]]
#: ``await on_close(session_id)``: an open session is being closed, deleted or archived (or its
#: connection ended); cancel its work (a running turn answers ``cancelled``) before this returns.
CloseHook: TypeAlias = Callable[[str], Awaitable[None]]
#: ``successor(session_id, cx)``: the session's connection ``cx`` ended; the connection that keeps the
#: session open instead (a client attached to it, unstable), or ``None`` to close it.
SuccessorHook: TypeAlias = Callable[[str, Connection], Connection | None]


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
        self._on_open = on_open
        self._on_close = on_close
        self._successor = successor
        #: The open sessions and the connection each is open on.
        self._live: dict[str, Connection] = {}
        self._replaying: set[str] = set()
        self._record_failed = False
        #: Closings of failed connections' sessions, still running.
        self._closing: set[asyncio.Task[None]] = set()

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
        builder.on_send_notification(self.record)
        builder.on_close(self.connection_closed)
        builder.with_spawned(self.watch)

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
        """``base`` (default: none) with the capabilities of the methods served here turned on."""
        capabilities = base.model_copy(deep=True) if base is not None else acp.AgentCapabilities()
        session = capabilities.session_capabilities or acp.SessionCapabilities()
        session.list = acp.SessionListCapabilities()
        session.resume = acp.SessionResumeCapabilities()
        session.close = acp.SessionCloseCapabilities()
        session.delete = acp.SessionDeleteCapabilities()
        if self.unstable:
            session.fork = acp.SessionForkCapabilities()
            session.archive = acp.SessionArchiveCapabilities()
            session.status = acp.SessionStatusCapabilities()
            session.title = acp.SessionTitleCapabilities()
        capabilities.session_capabilities = session
        capabilities.load_session = True
        if not self.store.outlives_process:
            # acpio's own hint to clients: do not offer to continue these sessions in another process.
            meta = dict(capabilities.meta or {})
            meta["acpio"] = {**meta.get("acpio", {}), "sessionsEndWithProcess": True}
            capabilities.meta = meta
        return capabilities

    def agent_capabilities_wire(self, base: dict[str, Any]) -> dict[str, Any] | None:
        """:meth:`agent_capabilities` as JSON, in the models' field order, without building them.

        ``base`` holds ``promptCapabilities`` and, if any, ``mcpCapabilities`` (nothing this adds).
        ``None`` with the unstable methods on: :meth:`agent_capabilities` writes those.
        """
        if self.unstable:
            return None
        session: dict[str, Any] = {"list": {}, "delete": {}, "resume": {}, "close": {}}
        capabilities = {"loadSession": True, **base, "sessionCapabilities": session}
        if not self.store.outlives_process:
            capabilities["_meta"] = {"acpio": {"sessionsEndWithProcess": True}}
        return capabilities

    # --- recording ----------------------------------------------------------------------------------

    def record(self, cx: Connection, method: str, params: RawJson | None) -> None:
        """The send observer: store a ``session/update`` for an open session, as sent."""
        # On the sending path of every update: plain type checks, no helper calls.
        if method != _UPDATE or type(params) is not RawJson:
            return
        source = params.source
        if type(source) is dict:
            session_id = source.get("sessionId")
        elif source is None:  # JSON the sender held as text
            session_id = session_id_of(orjson.loads(params.json))
        else:
            session_id = getattr(source, "session_id", None)
        # only what the session's own connection is sent: an observer's copy is no new update
        if (
            type(session_id) is not str
            or self._live.get(session_id) is not cx
            or session_id in self._replaying
        ):
            return
        try:
            self.store.append_soon(session_id, params.json)
        except StoreError as exc:
            if not self._record_failed:  # once: a broken database would fill the log
                _log.error("Session updates are not being recorded: %s", exc)
                self._record_failed = True

    # --- setup --------------------------------------------------------------------------------------

    async def new(self, req: acp.NewSessionRequest, cx: Connection) -> acp.NewSessionResponse:
        """``session/new``: a new stored session, open on this connection."""
        record, setup = await self._new(req.cwd, req.additional_directories or (), _wire(req.mcp_servers), cx)
        return acp.NewSessionResponse(session_id=record.session_id, **setup.fields())

    async def answer_new(
        self, cwd: str, additional_directories: Sequence[str], cx: Connection
    ) -> dict[str, Any] | acp.NewSessionResponse:
        """:meth:`new` from a ``session/new`` of plain values and no MCP servers: its answer as JSON.

        The JSON the models write, without them, when the ``on_open`` hook gave its setup as JSON
        (:attr:`SessionSetup.wire`); else the model, as :meth:`new` answers.
        """
        record, setup = await self._new(cwd, additional_directories, [], cx)
        if setup.modes is None and setup.config_options is None:
            return {"sessionId": record.session_id, **(setup.wire or {})}
        return acp.NewSessionResponse(session_id=record.session_id, **setup.fields())

    async def _new(
        self, cwd: str, directories: Sequence[str], servers: list[dict[str, Any]], cx: Connection
    ) -> tuple[SessionRecord, SessionSetup]:
        _check_cwd("session/new", cwd)
        record = await self.store.create(cwd, additional_directories=directories, mcp_servers=servers)
        return record, await self.opened(record, "session/new", cx)

    async def load(self, req: acp.LoadSessionRequest, cx: Connection) -> acp.LoadSessionResponse:
        """``session/load``: replay the history as ``session/update`` notifications, then answer."""
        record = await self.reopen(
            "session/load", req.session_id, req.cwd, req.mcp_servers, req.additional_directories
        )
        session_id = record.session_id
        self._replaying.add(session_id)
        own = b'"sessionId":' + orjson.dumps(session_id)
        try:
            sent = 0
            async for body in self.store.history(session_id):
                if own in body:  # sent as stored, without parsing it again
                    cx.send_notification(_UPDATE, RawJson(body))
                else:  # a fork's copy of its parent's history: it names the parent
                    params = orjson.loads(body)
                    if isinstance(params, dict):
                        params["sessionId"] = session_id
                    cx.send_notification(_UPDATE, params)
                sent += 1
                if sent % _DRAIN_EVERY == 0:
                    await cx.drain()
        finally:
            self._replaying.discard(session_id)
        setup = await self.opened(record, "session/load", cx)
        return acp.LoadSessionResponse(**setup.fields())

    async def resume(self, req: acp.ResumeSessionRequest, cx: Connection) -> acp.ResumeSessionResponse:
        """``session/resume``: open the session again without replaying anything."""
        record = await self.reopen(
            "session/resume", req.session_id, req.cwd, req.mcp_servers, req.additional_directories
        )
        setup = await self.opened(record, "session/resume", cx)
        return acp.ResumeSessionResponse(**setup.fields())

    async def fork(self, req: acp.ForkSessionRequest, cx: Connection) -> acp.ForkSessionResponse:
        """``session/fork`` (unstable): a new open session with a copy of the history."""
        _check_cwd("session/fork", req.cwd)
        await self.store.flush()
        record = await self.store.fork(
            req.session_id,
            req.cwd,
            additional_directories=req.additional_directories or (),
            mcp_servers=None if req.mcp_servers is None else _wire(req.mcp_servers),
        )
        setup = await self.opened(record, "session/fork", cx)
        return acp.ForkSessionResponse(session_id=record.session_id, **setup.fields())

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
        _check_cwd(method, cwd)
        record = await self.store.require(session_id)
        if cwd != record.cwd:
            raise InvalidParams(
                {"sessionId": session_id, "cwd": cwd, "sessionCwd": record.cwd},
                message=f"{method}: session {session_id!r} was set up in {record.cwd!r}, not {cwd!r}; "
                "send its own cwd",
            )
        await self.shut(session_id)
        await self.store.flush()
        return await self.store.update(
            session_id,
            mcp_servers=_wire(mcp_servers or ()),
            additional_directories=additional_directories or (),
        )

    async def opened(self, record: SessionRecord, method: str, cx: Connection) -> SessionSetup:
        """``record`` is open on ``cx`` now (its updates are recorded): the agent's ``on_open`` hook."""
        await self.store.open(record.session_id)
        self._live[record.session_id] = cx
        setup = await self._on_open(record, method, cx) if self._on_open is not None else None
        return setup if setup is not None else SessionSetup()

    # --- the rest -----------------------------------------------------------------------------------

    async def list(self, req: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        """``session/list``: a page of stored sessions, most recently updated first."""
        if req.cwd is not None:
            _check_cwd("session/list", req.cwd)
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
        await self.shut(req.session_id)
        return acp.CloseSessionResponse()

    async def delete(self, req: acp.DeleteSessionRequest) -> acp.DeleteSessionResponse:
        """``session/delete``: stop the session's work and forget it (an unknown id succeeds)."""
        await self.shut(req.session_id)
        await self.store.delete(req.session_id)
        return acp.DeleteSessionResponse()

    async def archive(self, req: acp.ArchiveSessionRequest) -> acp.ArchiveSessionResponse:
        """``session/archive`` (unstable): close the session if open, hide it from default listings."""
        await self.store.require(req.session_id)
        await self.shut(req.session_id)
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

    async def shut(self, session_id: str) -> None:
        """End the session's life on its connection, if it is open: the agent's hook, then the store."""
        if self._live.pop(session_id, None) is None:
            return
        if self._on_close is not None:
            await self._on_close(session_id)
        await self.store.close(session_id)

    async def connection_closed(self, cx: Connection) -> None:
        """The end of a connection closes the sessions open on it (or hands them to their ``successor``)."""
        for session_id in [sid for sid, owner in self._live.items() if owner is cx]:
            heir = self._successor(session_id, cx) if self._successor is not None else None
            if heir is not None:
                self._live[session_id] = heir  # open there now: its updates are recorded
            else:
                await self.shut(session_id)
        await self.store.flush()

    async def watch(self, cx: Connection) -> None:
        """Close the sessions of a connection that failed (``on_close`` runs on a clean end only)."""
        try:
            await cx.wait_closed()
        finally:
            if any(owner is cx for owner in self._live.values()):
                # Cancelled with the connection's tasks: the closing runs in a task of its own.
                task = asyncio.get_running_loop().create_task(self._close_after_failure(cx))
                self._closing.add(task)
                task.add_done_callback(self._closing.discard)

    async def _close_after_failure(self, cx: Connection) -> None:
        try:
            await self.connection_closed(cx)
        except Exception:
            _log.exception("Closing the sessions of a failed connection failed")


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


def _check_cwd(method: str, cwd: str) -> None:
    if not os.path.isabs(cwd):
        raise InvalidParams({"cwd": cwd}, message=f"{method}: cwd must be an absolute path, not {cwd!r}")


def _wire(servers: Sequence[Any]) -> list[dict[str, Any]]:
    """MCP server declarations as JSON objects (typed models as on the wire, dicts as they are)."""
    return [server.to_wire() if hasattr(server, "to_wire") else dict(server) for server in servers]
