"""``acpio prompt --attach ID`` (unstable): watch another client's session, or take part (``--control``).

The session so far is shown as history, then each turn live (the other clients' prompts, the
agent's answer, the stop reason) until the session closes at the agent (exit 0) or Ctrl-C (130).
With ``--control`` the client attaches as a controller: it answers the turns' permission requests
by its policy (``--allow``, ``--deny``; without one it leaves them to the other clients, and shows
who answered), and with a prompt it sends it once no turn runs, then leaves after that turn.
Behind a load balancer, an attach refused with the route to the server running the session is
sent again through the balancer with that route's cookie. The agent must serve acpio's unstable
``_acpio/session/attach``: an :class:`~acpio.app.AgentApp` with ``unstable=True`` served by
``acpio serve --app``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Literal, TextIO

from acpio.client.permissions import AllowPolicy, DenyPolicy
from acpio.errors import RequestError
from acpio.oneshot.render import PlainRenderer
from acpio.roles import Client
from acpio.schema import ClientCapabilities, InitializeRequest, RequestPermissionResponse, SessionNotification
from acpio.session import (
    AttachedRequestResolved,
    AttachedTurnEnded,
    ControlledSession,
    ObservedSession,
    RequestPermissionMessage,
    SessionConnection,
    SessionEnded,
    control_session,
    observe_session,
    route_cookies,
)
from acpio.transports.base import Component

__all__ = ["observe"]

#: A component for the same agent whose connections carry these cookies (the balancer's affinity).
Reroute = Callable[[dict[str, str]], Component]


async def observe(
    agent: Component,
    session_id: str,
    *,
    out: TextIO | None = None,
    control: bool = False,
    prompt: str | None = None,
    permissions: Literal["allow", "deny"] | None = None,
    reroute: Reroute | None = None,
) -> int:
    """Show ``session_id`` of the remote ``agent`` as it goes; the exit code (0 once it closed, 4 refused).

    With ``control``, take part as a controller: answer permission requests by ``permissions``
    (``None``: leave them to the others) and send ``prompt`` once no turn runs (then leave after
    its turn). ``reroute`` makes the component to attach through once more when the agent says
    the session runs on another server behind the same balancer.
    """
    renderer = PlainRenderer(out if out is not None else sys.stdout)
    policy = AllowPolicy() if permissions == "allow" else DenyPolicy() if permissions == "deny" else None

    async def watch(cx: SessionConnection) -> int:
        await cx.send_request(InitializeRequest(protocol_version=1, client_capabilities=ClientCapabilities()))
        try:
            attached: ObservedSession | ControlledSession = await (
                control_session(cx, session_id) if control else observe_session(cx, session_id)
            )
        except RequestError as exc:
            cookies = route_cookies(exc)
            if cookies is not None and reroute is not None:
                raise Elsewhere(cookies) from exc
            print(f"acpio prompt: cannot attach to session {session_id}: {exc}", file=sys.stderr)
            return 4
        renderer.begin_history(session_id)
        for notification in attached.replay:
            renderer.update(notification.update, history=True)
        renderer.end_history()
        to_send = prompt
        if isinstance(attached, ControlledSession) and to_send is not None and not attached.running:
            attached.send_prompt(to_send)
            to_send = None
        while True:
            try:
                item = await attached.read()
            except SessionEnded:
                renderer.close()
                print(f"acpio prompt: session {session_id} closed", file=sys.stderr)
                return 0
            except RequestError as exc:  # the agent refused our prompt
                print(f"acpio prompt: the prompt was refused: {exc}", file=sys.stderr)
                return 4
            if isinstance(item, AttachedTurnEnded):
                if item.error is not None:
                    print(f"acpio prompt: the turn ended with an error: {item.error}", file=sys.stderr)
                renderer.turn_ended(item.stop_reason)
                if prompt is not None and to_send is None:
                    return 0  # our prompt's turn (or the one it waited for, then ours) is over
                if isinstance(attached, ControlledSession) and to_send is not None:
                    attached.send_prompt(to_send)
                    to_send = None
            elif isinstance(item, RequestPermissionMessage):
                if policy is not None:
                    outcome = await policy.decide(item.request)
                    item.respond(RequestPermissionResponse(outcome=outcome))
                    renderer.permission(item.request, outcome)
            elif isinstance(item, AttachedRequestResolved):
                renderer.settle()
                print(
                    f"acpio prompt: answered by another client: {item.result or item.error}", file=sys.stderr
                )
            elif isinstance(item, SessionNotification):
                renderer.update(item.update)
            # a form is left to the clients that show forms

    try:
        return await Client.builder().connect_with(agent, watch)
    except Elsewhere as elsewhere:
        assert reroute is not None
        return await Client.builder().connect_with(reroute(elsewhere.cookies), watch)


class Elsewhere(Exception):
    """The session runs on another server behind the balancer: attach again with these cookies."""

    def __init__(self, cookies: dict[str, str]) -> None:
        super().__init__(f"the session runs where the cookies {cookies} lead")
        self.cookies = cookies
