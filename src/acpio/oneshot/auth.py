"""Logging in and out from ``acpio prompt``: ``--auth METHOD`` and ``--logout``.

An agent lists its auth methods in its ``initialize`` answer. ``--auth METHOD`` uses one:

* an ``agent`` method (the default type) is passed to ``authenticate`` on the connection that then
  sets the session up (:func:`authenticate`);
* a ``terminal`` method is run by this client, as the spec describes (:func:`login_in_terminal`):
  the agent's own command line, with the method's ``args`` appended and its ``env`` set, runs in
  the user's terminal (stdin, stdout and stderr are this process's), and its exit status says
  whether the login worked (0: yes). ``acpio prompt`` first connects once to learn the agent's
  methods (:func:`prepare_login`), runs the login, then starts the agent again for the turn
  (the spec's "reconnect and reinitialize"). It is offered only when the agent is a command this
  client starts (``clientCapabilities.auth.terminal``).

``--logout`` (:func:`logout`) connects, calls ``logout`` when the agent advertises
``agentCapabilities.auth.logout``, and ends.

The schema has no other kind of auth method: an ``env_var`` type, which some agents used to list,
is no longer part of it, and a method of a type this client does not know is refused with a
message naming the agent's methods.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Awaitable, Callable
from typing import TypeVar

from acpio.capabilities import LATEST_PROTOCOL_VERSION
from acpio.errors import AcpError, RequestError
from acpio.jsonrpc import Connection
from acpio.roles import Client
from acpio.schema import (
    AuthenticateRequest,
    AuthMethodAgent,
    AuthMethodTerminal,
    ClientCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    LogoutRequest,
)
from acpio.transports import AcpAgent, AgentCommand, Component

T = TypeVar("T")

__all__ = [
    "LoginFailed",
    "authenticate",
    "connect",
    "find_method",
    "login_in_terminal",
    "logout",
    "prepare_login",
]


class LoginFailed(AcpError):
    """Logging in (or out) did not work: the message says why and what to do."""


def find_method(initialized: InitializeResponse, method_id: str) -> AuthMethodAgent | AuthMethodTerminal:
    """The auth method ``method_id`` the agent offered; :class:`LoginFailed` naming the offered ones."""
    offered = list(initialized.auth_methods or ())
    for method in offered:
        if getattr(method, "id", None) == method_id:
            if isinstance(method, AuthMethodAgent | AuthMethodTerminal):
                return method
            kind = getattr(method, "type", "unknown")
            raise LoginFailed(f"--auth {method_id}: its type {kind!r} is not one acpio prompt knows")
    names = ", ".join(f"{getattr(m, 'id', '?')} ({getattr(m, 'type', None) or 'agent'})" for m in offered)
    raise LoginFailed(
        f"--auth {method_id}: the agent offers no such auth method (it offers: {names or 'none'})"
    )


async def authenticate(cx: Connection, initialized: InitializeResponse, method_id: str) -> bool:
    """``authenticate`` with ``method_id`` when it is an agent method; ``False`` for a terminal one.

    A terminal method is not passed to ``authenticate`` (the spec forbids it): it was run before
    this connection (:func:`prepare_login`). :class:`LoginFailed` when the agent refuses.
    """
    method = find_method(initialized, method_id)
    if isinstance(method, AuthMethodTerminal):
        return False
    try:
        await cx.send_request(AuthenticateRequest(method_id=method_id))
    except RequestError as error:
        raise LoginFailed(f"The agent refused authenticate with {method_id!r}: {error}") from error
    return True


async def connect(
    command: AgentCommand | Component,
    capabilities: ClientCapabilities,
    then: Callable[[Connection, InitializeResponse], Awaitable[T]],
) -> T:
    """Start the agent (a command, or any component), ``initialize``, run ``then(cx, answer)``, end it.

    Returns what ``then`` returned.
    """
    from acpio import __version__

    async def main(cx: Connection) -> T:
        request = InitializeRequest(
            protocol_version=LATEST_PROTOCOL_VERSION,
            client_capabilities=capabilities,
            client_info=Implementation(name="acpio", title="acpio prompt", version=__version__),
        )
        initialized: InitializeResponse = await cx.send_request(request)
        return await then(cx, initialized)

    target = AcpAgent(command) if isinstance(command, AgentCommand) else command
    return await Client.builder(name="acpio prompt").connect_with(target, main)


async def prepare_login(
    command: AgentCommand, method_id: str, capabilities: ClientCapabilities, note: Callable[[str], None]
) -> None:
    """For a terminal method: learn it from the agent, run it in the terminal; nothing for an agent method.

    Raises :class:`LoginFailed` when the agent offers no such method or the login exits non-zero.
    """

    async def method_of(
        cx: Connection, initialized: InitializeResponse
    ) -> AuthMethodAgent | AuthMethodTerminal:
        return find_method(initialized, method_id)

    method = await connect(command, capabilities, method_of)
    if not isinstance(method, AuthMethodTerminal):
        return
    note(f"logging in in this terminal ({method_id}): {method.name}")
    status = await login_in_terminal(command, method)
    if status != 0:
        how = f"exit status {status}" if status >= 0 else f"signal {-status}"
        raise LoginFailed(f"The terminal login {method_id!r} failed ({how}): no session was started")
    note(f"logged in with {method_id}")


async def login_in_terminal(command: AgentCommand, method: AuthMethodTerminal) -> int:
    """Run the agent's command line with ``method``'s args and env on this terminal; its exit status.

    The process shares this one's terminal and process group, so it reads what the person types;
    a Ctrl-C meanwhile reaches it (and fails the login), not this process.
    """
    argv = [*command.argv, *(method.args or ())]
    env = {**os.environ, **command.env, **(method.env or {})}
    process = await asyncio.create_subprocess_exec(*argv, env=env)
    loop = asyncio.get_running_loop()
    ignoring = False
    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, lambda: None)
        ignoring = True
    try:
        return await process.wait()
    finally:
        if ignoring:
            loop.remove_signal_handler(signal.SIGINT)


async def logout(
    command: AgentCommand, capabilities: ClientCapabilities, note: Callable[[str], None]
) -> None:
    """``--logout``: ``logout`` on a fresh connection; :class:`LoginFailed` if the agent cannot."""

    async def log_out(cx: Connection, initialized: InitializeResponse) -> None:
        caps = initialized.agent_capabilities
        auth = caps.auth if caps is not None else None
        if auth is None or auth.logout is None:
            raise LoginFailed("The agent does not advertise agentCapabilities.auth.logout: it has no logout")
        try:
            await cx.send_request(LogoutRequest())
        except RequestError as error:
            raise LoginFailed(f"The agent refused logout: {error}") from error

    await connect(command, capabilities, log_out)
    note("logged out")
