"""The sessions an agent keeps, from ``acpio prompt``: list them, close one, delete one.

Each function starts the agent, sends ``initialize``, checks the agent advertised the method
(``sessionCapabilities.list``, ``close``, ``delete``), sends it and ends the agent. A method the
agent does not offer, or refuses, raises :class:`SessionCommandFailed` with a message saying so.
"""

from __future__ import annotations

from pathlib import Path

from acpio.errors import AcpError, RequestError
from acpio.jsonrpc import Connection
from acpio.oneshot.auth import connect
from acpio.oneshot.controls import client_capabilities
from acpio.schema import (
    CloseSessionRequest,
    DeleteSessionRequest,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
)
from acpio.transports import AgentCommand, Component

__all__ = ["SessionCommandFailed", "close_session", "delete_session", "list_sessions"]


class SessionCommandFailed(AcpError):
    """The agent does not offer the session method asked for, or refused it: the message says which."""


def _require(initialized: InitializeResponse, capability: str, method: str) -> None:
    caps = initialized.agent_capabilities
    sessions = caps.session_capabilities if caps is not None else None
    if sessions is None or getattr(sessions, capability, None) is None:
        advertised = f"agentCapabilities.sessionCapabilities.{capability}"
        raise SessionCommandFailed(f"The agent does not advertise {advertised}: it has no {method}")


async def list_sessions(agent: AgentCommand | Component, cwd: Path) -> list[str]:
    """One line per session of ``cwd`` (``ID  TITLE  UPDATED``), every page of ``session/list``."""

    async def listed(cx: Connection, initialized: InitializeResponse) -> list[str]:
        _require(initialized, "list", "session/list")
        lines: list[str] = []
        cursor: str | None = None
        while True:
            request = ListSessionsRequest(cwd=str(cwd), **({"cursor": cursor} if cursor else {}))
            try:
                page: ListSessionsResponse = await cx.send_request(request)
            except RequestError as error:
                raise SessionCommandFailed(f"The agent refused session/list: {error}") from error
            for info in page.sessions:
                title = info.title if isinstance(info.title, str) else ""
                updated = info.updated_at if isinstance(info.updated_at, str) else ""
                lines.append("  ".join(part for part in (info.session_id, title, updated) if part))
            cursor = page.next_cursor
            if not cursor:
                return lines

    result: list[str] = await connect(agent, client_capabilities(), listed)
    return result


async def close_session(agent: AgentCommand | Component, session_id: str) -> None:
    """``session/close`` of ``session_id``."""
    await _end(agent, "close", CloseSessionRequest(session_id=session_id))


async def delete_session(agent: AgentCommand | Component, session_id: str) -> None:
    """``session/delete`` of ``session_id``."""
    await _end(agent, "delete", DeleteSessionRequest(session_id=session_id))


async def _end(
    agent: AgentCommand | Component, capability: str, request: CloseSessionRequest | DeleteSessionRequest
) -> None:
    async def send(cx: Connection, initialized: InitializeResponse) -> None:
        _require(initialized, capability, request.METHOD)
        try:
            await cx.send_request(request)
        except RequestError as error:
            refused = f"The agent refused {request.METHOD} of {request.session_id!r}: {error}"
            raise SessionCommandFailed(refused) from error

    await connect(agent, client_capabilities(), send)
