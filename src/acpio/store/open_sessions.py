"""Which stored sessions are open, and on which connection: opening, closing, recording.

A session served from a store (:class:`~acpio.store.StoredSessions`) is *open* on the connection
that set it up until it is shut (``session/close``, ``session/delete``, ``session/archive``, a
``session/load`` or ``session/resume`` elsewhere) or that connection ends. :class:`OpenSessions`
keeps that table, runs the agent's hooks as sessions open and close (:data:`OpenHook`,
:data:`CloseHook`), hands a session over to its :data:`SuccessorHook`'s connection when its own
ends, and records in the store every ``session/update`` sent to an open session's connection.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final, TypeAlias

import orjson

from acpio import schema as acp
from acpio.jsonrpc import Connection, RawJson
from acpio.store.base import SessionRecord, SessionStore, StoreError, session_id_of

__all__ = ["CloseHook", "OpenHook", "OpenSessions", "SessionSetup", "SuccessorHook"]

_log = logging.getLogger("acpio.store")

_UPDATE: Final = "session/update"


@dataclass(slots=True)
class SessionSetup:
    """What a session-setup answer carries beside the id: the session's modes and config options.

    Either as models, or as their JSON (``wire``: ``modes`` and ``configOptions``, as the models
    write them), which :meth:`StoredSessions.open_new <acpio.store.StoredSessions.open_new>`
    returns for the handshake to send without building a model.
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


def sent_session_id(params: RawJson) -> str | None:
    """The session that sent ``session/update`` params name, read without parsing when it can be.

    What the JSON was made from (:attr:`RawJson.source <acpio.jsonrpc.RawJson.source>`) names it when
    it is a dict with a ``sessionId`` or an object with a ``session_id`` (a model, an
    :class:`~acpio.app.AgentApp` turn's update writer, a stored record); any other source, or none, and
    the JSON is parsed for it.
    """
    source = params.source
    found = source.get("sessionId") if type(source) is dict else getattr(source, "session_id", None)
    if type(found) is str:
        return found
    try:
        return session_id_of(orjson.loads(params.json))
    except orjson.JSONDecodeError:
        return None


class OpenSessions:
    """The sessions of ``store`` open on an agent's connections; see the module docstring."""

    def __init__(
        self,
        store: SessionStore,
        *,
        on_open: OpenHook | None = None,
        on_close: CloseHook | None = None,
        successor: SuccessorHook | None = None,
    ) -> None:
        self._store = store
        self._on_open = on_open
        self._on_close = on_close
        self._successor = successor
        #: The open sessions and the connection each is open on.
        self._live: dict[str, Connection] = {}
        self._replaying: set[str] = set()
        self._record_failed = False
        #: Closings of failed connections' sessions, still running.
        self._closing: set[asyncio.Task[None]] = set()

    @property
    def connections(self) -> Mapping[str, Connection]:
        """The open sessions and the connection each is open on: a view, which changes as they do."""
        return self._live

    async def open(self, record: SessionRecord, method: str, cx: Connection) -> SessionSetup:
        """``record`` is open on ``cx`` now (its updates are recorded): the agent's ``on_open`` hook."""
        await self._store.open(record.session_id)
        self._live[record.session_id] = cx
        setup = await self._on_open(record, method, cx) if self._on_open is not None else None
        return setup if setup is not None else SessionSetup()

    async def shut(self, session_id: str) -> None:
        """End the session's life on its connection, if it is open: the agent's hook, then the store."""
        if self._live.pop(session_id, None) is None:
            return
        if self._on_close is not None:
            await self._on_close(session_id)
        await self._store.close(session_id)

    @contextmanager
    def replaying(self, session_id: str) -> Iterator[None]:
        """While inside, what is sent for ``session_id`` is its stored history again: not recorded."""
        self._replaying.add(session_id)
        try:
            yield
        finally:
            self._replaying.discard(session_id)

    def record(self, cx: Connection, method: str, params: RawJson | None) -> None:
        """The send observer: store a ``session/update`` for an open session, as sent."""
        # On the sending path of every update: plain type checks, no helper calls.
        if method != _UPDATE or type(params) is not RawJson:
            return
        # An AgentApp turn's writer names its session: read inline, one call less per update.
        session_id = getattr(params.source, "session_id", None)
        if type(session_id) is not str:
            session_id = sent_session_id(params)
        # only what the session's own connection is sent: an observer's copy is no new update
        if (
            type(session_id) is not str
            or self._live.get(session_id) is not cx
            or session_id in self._replaying
        ):
            return
        try:
            self._store.append_soon(session_id, params.json)
        except StoreError as exc:
            if not self._record_failed:  # once: a broken database would fill the log
                _log.error("Session updates are not being recorded: %s", exc)
                self._record_failed = True

    async def connection_closed(self, cx: Connection) -> None:
        """The end of a connection closes the sessions open on it (or hands them to their ``successor``)."""
        for session_id in [sid for sid, owner in self._live.items() if owner is cx]:
            heir = self._successor(session_id, cx) if self._successor is not None else None
            if heir is not None:
                self._live[session_id] = heir  # open there now: its updates are recorded
            else:
                await self.shut(session_id)
        await self._store.flush()

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
