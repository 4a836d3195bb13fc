"""Setting stored sessions up: ``session/new``, ``session/load``, ``session/resume`` and ``session/fork``.

:class:`SetupMethods` creates, reopens or forks a session in the store and opens it on the
connection that asked (:class:`~acpio.store.open_sessions.OpenSessions`), after checking the
request: a ``cwd`` must be absolute, and the session's own for a load or a resume (``-32602``); an
unknown id gets ``-32002``. ``session/load`` replays the stored history as ``session/update``
notifications first. :class:`~acpio.store.StoredSessions` serves these methods through it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Final

import orjson

from acpio import schema as acp
from acpio.errors import InvalidParams
from acpio.jsonrpc import Connection, RawJson
from acpio.store.base import SessionRecord, SessionStore
from acpio.store.open_sessions import OpenSessions, SessionSetup

__all__ = ["SetupMethods", "check_cwd", "servers_wire"]

_UPDATE: Final = "session/update"
#: Replayed updates sent between two waits for the client to read (``cx.drain()``).
_DRAIN_EVERY: Final = 256


class SetupMethods:
    """The set-up methods of sessions kept in ``store``, each opening its session in ``sessions``."""

    def __init__(self, store: SessionStore, sessions: OpenSessions) -> None:
        self._store = store
        self._sessions = sessions

    async def new(self, req: acp.NewSessionRequest, cx: Connection) -> acp.NewSessionResponse:
        """``session/new``: a new stored session, open on ``cx``."""
        record, setup = await self.open_new(
            req.cwd, req.additional_directories or (), servers_wire(req.mcp_servers), cx
        )
        return acp.NewSessionResponse(session_id=record.session_id, **setup.fields())

    async def open_new(
        self, cwd: str, directories: Sequence[str], servers: list[dict[str, Any]], cx: Connection
    ) -> tuple[SessionRecord, SessionSetup]:
        """What :meth:`new` does before it answers: the new session's record, and its setup."""
        check_cwd("session/new", cwd)
        record = await self._store.create(cwd, additional_directories=directories, mcp_servers=servers)
        return record, await self._sessions.open(record, "session/new", cx)

    async def load(self, req: acp.LoadSessionRequest, cx: Connection) -> acp.LoadSessionResponse:
        """``session/load``: replay the history as ``session/update`` notifications, then answer."""
        record = await self.reopen(
            "session/load", req.session_id, req.cwd, req.mcp_servers, req.additional_directories
        )
        session_id = record.session_id
        own = b'"sessionId":' + orjson.dumps(session_id)
        with self._sessions.replaying(session_id):
            sent = 0
            async for body in self._store.history(session_id):
                if own in body:  # sent as stored; the record names the session to the send observers
                    cx.send_notification(_UPDATE, RawJson(body, record))
                else:  # a fork's copy of its parent's history: it names the parent
                    params = orjson.loads(body)
                    if isinstance(params, dict):
                        params["sessionId"] = session_id
                    cx.send_notification(_UPDATE, params)
                sent += 1
                if sent % _DRAIN_EVERY == 0:
                    await cx.drain()
        setup = await self._sessions.open(record, "session/load", cx)
        return acp.LoadSessionResponse(**setup.fields())

    async def resume(self, req: acp.ResumeSessionRequest, cx: Connection) -> acp.ResumeSessionResponse:
        """``session/resume``: open the session again without replaying anything."""
        record = await self.reopen(
            "session/resume", req.session_id, req.cwd, req.mcp_servers, req.additional_directories
        )
        setup = await self._sessions.open(record, "session/resume", cx)
        return acp.ResumeSessionResponse(**setup.fields())

    async def fork(self, req: acp.ForkSessionRequest, cx: Connection) -> acp.ForkSessionResponse:
        """``session/fork`` (unstable): a new open session with a copy of the history."""
        check_cwd("session/fork", req.cwd)
        await self._store.flush()
        record = await self._store.fork(
            req.session_id,
            req.cwd,
            additional_directories=req.additional_directories or (),
            mcp_servers=None if req.mcp_servers is None else servers_wire(req.mcp_servers),
        )
        setup = await self._sessions.open(record, "session/fork", cx)
        return acp.ForkSessionResponse(session_id=record.session_id, **setup.fields())

    async def reopen(
        self,
        method: str,
        session_id: str,
        cwd: str,
        mcp_servers: Sequence[Any] | None,
        additional_directories: Sequence[str] | None,
    ) -> SessionRecord:
        """What :meth:`StoredSessions.reopen <acpio.store.StoredSessions.reopen>` does, with its errors."""
        check_cwd(method, cwd)
        record = await self._store.require(session_id)
        if cwd != record.cwd:
            raise InvalidParams(
                {"sessionId": session_id, "cwd": cwd, "sessionCwd": record.cwd},
                message=f"{method}: session {session_id!r} was set up in {record.cwd!r}, not {cwd!r}; "
                "send its own cwd",
            )
        await self._sessions.shut(session_id)
        await self._store.flush()
        return await self._store.update(
            session_id,
            mcp_servers=servers_wire(mcp_servers or ()),
            additional_directories=additional_directories or (),
        )


def check_cwd(method: str, cwd: str) -> None:
    """Refuse (``-32602``) a ``cwd`` that is not an absolute path, naming ``method``."""
    if not os.path.isabs(cwd):
        raise InvalidParams({"cwd": cwd}, message=f"{method}: cwd must be an absolute path, not {cwd!r}")


def servers_wire(servers: Sequence[Any]) -> list[dict[str, Any]]:
    """MCP server declarations as JSON objects (typed models as on the wire, dicts as they are)."""
    return [server.to_wire() if hasattr(server, "to_wire") else dict(server) for server in servers]
