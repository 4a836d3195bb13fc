"""The client's sessions as ``acpio dev`` keeps them across agent restarts: how to reopen each, and its id.

The client knows a session by the id it got; after a restart that reopened it as a new session the
agent knows it by another. :class:`OpenSessions` remembers how each was opened and rewrites
``sessionId`` in the params of the messages between them where the two differ.
"""

from __future__ import annotations

from typing import Any, Final

from acpio.jsonrpc.messages import JsonValue

__all__ = ["OPENERS", "OpenSessions", "reopen_method"]

#: The requests that open a session (and whose answer the relay reads to remember it).
OPENERS: Final = frozenset(("session/new", "session/load", "session/resume"))
_CLOSE: Final = "session/close"


def reopen_method(initialized: dict[str, Any]) -> str:
    """How a new agent process that answered ``initialize`` with ``initialized`` reopens a session.

    ``session/resume`` when it offers it (v2's baseline; ``sessionCapabilities.resume`` on v1),
    else ``session/load`` when it can (``loadSession``), else ``session/new``.
    """
    capabilities = initialized.get("agentCapabilities")
    capabilities = capabilities if isinstance(capabilities, dict) else {}
    session = capabilities.get("sessionCapabilities")
    version = initialized.get("protocolVersion")
    if (isinstance(version, int) and version >= 2) or (
        isinstance(session, dict) and session.get("resume") is not None
    ):
        return "session/resume"
    if capabilities.get("loadSession") is True:
        return "session/load"
    return "session/new"


class OpenSessions:
    """The sessions the client opened, by the id it knows: what opened each, the agent's id for it."""

    def __init__(self) -> None:
        #: The params that opened each session (without ``sessionId``), by the client's id.
        self.setups: dict[str, dict[str, Any]] = {}
        self._to_agent: dict[str, str] = {}
        self._to_client: dict[str, str] = {}

    def __len__(self) -> int:
        return len(self.setups)

    def answered(self, method: str, params: JsonValue, result: JsonValue) -> None:
        """A session request of the client's was answered with ``result``: remember or forget its session."""
        if not isinstance(params, dict):
            return
        if method == _CLOSE:
            closed = self.client_id(params.get("sessionId"))
            if closed is not None:
                self.setups.pop(closed, None)
                agent_id = self._to_agent.pop(closed, None)
                if agent_id is not None:
                    self._to_client.pop(agent_id, None)
            return
        session_id = params.get("sessionId") if method != "session/new" else None
        if session_id is None and isinstance(result, dict):
            session_id = result.get("sessionId")
        if isinstance(session_id, str):
            self.setups[self.client_id(session_id) or session_id] = {
                k: v for k, v in params.items() if k != "sessionId"
            }

    def agent_id(self, client_id: str) -> str:
        """The id the agent knows the client's session ``client_id`` by."""
        return self._to_agent.get(client_id, client_id)

    def client_id(self, session_id: object) -> str | None:
        """The client's id of a session the agent calls ``session_id`` (``None``: not a string)."""
        if not isinstance(session_id, str):
            return None
        return self._to_client.get(session_id, session_id)

    def reopened_as(self, client_id: str, agent_id: str) -> None:
        """The client's session ``client_id`` is ``agent_id`` in the new agent process."""
        old = self._to_agent.pop(client_id, None)
        if old is not None:
            self._to_client.pop(old, None)
        if agent_id != client_id:
            self._to_agent[client_id] = agent_id
            self._to_client[agent_id] = client_id

    def to_agent(self, message: dict[str, Any]) -> bool:
        """Rewrite the client's session id in ``message``'s params for the agent; whether it changed."""
        return self._rewrite(message, self._to_agent)

    def to_client(self, message: dict[str, Any]) -> bool:
        """Rewrite the agent's session id in ``message``'s params (or result) for the client."""
        return self._rewrite(message, self._to_client)

    @staticmethod
    def _rewrite(message: dict[str, Any], ids: dict[str, str]) -> bool:
        if not ids:
            return False
        changed = False
        for key in ("params", "result"):
            body = message.get(key)
            if isinstance(body, dict):
                session_id = body.get("sessionId")
                if isinstance(session_id, str) and session_id in ids:
                    message[key] = {**body, "sessionId": ids[session_id]}
                    changed = True
        return changed
