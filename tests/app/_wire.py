"""The editor's side of the app tests: open a session, send a prompt (raw JSON-RPC on a WirePeer).

:func:`typed_only` turns the app's raw answers off, for the tests that hold them to the typed path.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any
from unittest import mock

from acpio.app.handshake import AppHandler
from acpio.testing import WirePeer


async def open_session(peer: WirePeer, cwd: Path, capabilities: dict[str, Any]) -> str:
    """Initialize with the client's ``capabilities`` and open a session in ``cwd``; its id."""
    peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
    await peer.response_to(1)
    new = peer.request("session/new", {"cwd": str(cwd), "mcpServers": []})
    return str((await peer.response_to(new))["result"]["sessionId"])


def send_prompt(peer: WirePeer, session_id: str, text: str) -> Any:
    """Send a ``session/prompt`` of ``text``; its request id."""
    return peer.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
    )


def typed_only() -> AbstractContextManager[object]:
    """The app's handlers with their raw answers off: every message takes the typed path."""

    async def decline(self: AppHandler, message: object, cx: object) -> bool:
        return False

    return mock.patch.object(AppHandler, "_take_raw", decline)
