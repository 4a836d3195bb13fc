"""``acpio prompt --attach SESSION_ID`` (unstable): watch a session another client runs on a remote agent.

The session so far is shown as history, then each turn live (the other client's prompts, the
agent's answer, the stop reason) until the session closes at the agent (exit 0) or Ctrl-C (130).
The agent must serve acpio's unstable ``_acpio/session/attach``: an
:class:`~acpio.app.AgentApp` with ``unstable=True`` served by ``acpio serve --app``.
"""

from __future__ import annotations

import sys
from typing import TextIO

from acpio.errors import RequestError
from acpio.oneshot.render import PlainRenderer
from acpio.roles import Client
from acpio.schema import ClientCapabilities, InitializeRequest
from acpio.session import AttachedTurnEnded, SessionConnection, SessionEnded, observe_session
from acpio.transports.base import Component

__all__ = ["observe"]


async def observe(agent: Component, session_id: str, *, out: TextIO | None = None) -> int:
    """Show ``session_id`` of the remote ``agent`` as it goes; the exit code (0 once it closed, 4 refused)."""
    renderer = PlainRenderer(out if out is not None else sys.stdout)

    async def watch(cx: SessionConnection) -> int:
        await cx.send_request(InitializeRequest(protocol_version=1, client_capabilities=ClientCapabilities()))
        try:
            watched = await observe_session(cx, session_id)
        except RequestError as exc:
            print(f"acpio prompt: cannot attach to session {session_id}: {exc}", file=sys.stderr)
            return 4
        renderer.begin_history(session_id)
        for notification in watched.replay:
            renderer.update(notification.update, history=True)
        renderer.end_history()
        while True:
            try:
                item = await watched.read()
            except SessionEnded:
                renderer.close()
                print(f"acpio prompt: session {session_id} closed", file=sys.stderr)
                return 0
            if isinstance(item, AttachedTurnEnded):
                if item.error is not None:
                    print(f"acpio prompt: the turn ended with an error: {item.error}", file=sys.stderr)
                renderer.turn_ended(item.stop_reason)
            else:
                renderer.update(item.update)

    return await Client.builder().connect_with(agent, watch)
