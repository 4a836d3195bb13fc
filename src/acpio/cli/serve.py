"""``acpio serve``: any stdio agent over HTTP and WebSocket, one agent process per remote connection.

::

    acpio serve -- acpio testy
    acpio serve --port 9000 -- npx @zed-industries/claude-code-acp
    acpio serve --app my_agent:app
    ACPIO_TOKEN=... acpio serve --host 0.0.0.0 -- python my_agent.py

See ``docs/remote.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import asyncio

    from acpio.cli import Subcommands
    from acpio.remote import RemoteServer
    from acpio.store import SessionStore

__all__ = ["register", "run"]

_DESCRIPTION = """\
Serve a stdio ACP agent over the network: Streamable HTTP (POST, event streams) and WebSocket on one
endpoint, http://HOST:PORT and ws://HOST:PORT. Each remote connection gets its own agent process,
started from the command after --; its stderr is logged; it ends when the connection ends. With
--app MODULE:NAME, an AgentApp is served in this process instead, one for every connection: with
unstable=True a client may attach to another's session (acpio prompt --attach, docs/remote.md).

The server binds loopback (127.0.0.1) unless --host says otherwise. Another address needs a token
(--token or ACPIO_TOKEN: clients send it as Authorization: Bearer TOKEN) or --insecure. Browser pages
may connect only from the origins given with --allow-origin. For TLS, give --ssl-certfile and
--ssl-keyfile, or put a reverse proxy in front.

For load balancers: GET /healthz answers 200 while the server runs; GET /readyz answers 200 when it
takes new connections, 503 while it drains or the store of --check-store does not answer. SIGTERM
(or SIGHUP) drains: new connections are refused, each open one ends once its running turns are
answered, for up to --drain-timeout seconds, then the server exits. A second SIGTERM, or Ctrl-C,
stops at once. See docs/deploy.md.
"""


def register(subparsers: Subcommands) -> None:
    """Add the ``serve`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "serve",
        help="serve a stdio agent over HTTP and WebSocket",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="the address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="the port (default: 8000; 0 picks a free one)")
    parser.add_argument(
        "--token",
        default=os.environ.get("ACPIO_TOKEN"),
        help="the bearer token clients must send (default: $ACPIO_TOKEN)",
    )
    parser.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback bind without a token (a trusted network)",
    )
    parser.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="a browser origin allowed to connect (https://app.example); repeatable",
    )
    parser.add_argument("--ssl-certfile", help="serve https:// and wss:// with this certificate (PEM)")
    parser.add_argument("--ssl-keyfile", help="the certificate's private key (PEM)")
    parser.add_argument(
        "--drain-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="on SIGTERM, how long running turns may take to finish before they are cut (default: 30)",
    )
    parser.add_argument(
        "--check-store",
        metavar="URL",
        help="the session store the agents use (postgresql://...): /readyz fails while it does not answer",
    )
    parser.add_argument(
        "--app",
        metavar="MODULE:NAME",
        help="serve this AgentApp in this process instead of a command (module importable from here or "
        "PYTHONPATH): every connection shares its sessions, so clients may attach to one another's",
    )
    parser.add_argument(
        "--route",
        metavar="COOKIE=VALUE",
        help="(unstable) the affinity cookie the load balancer sends to this server by (HAProxy's "
        "`cookie acpio-server` and `server a ... cookie a`: --route acpio-server=a). With --app and a "
        "PostgreSQL store, a client attaching to a session that runs on this server, through another "
        "one, is told this cookie and connects again with it (docs/deploy.md)",
    )
    parser.add_argument(
        "command", nargs=argparse.REMAINDER, help="-- then the agent command and its arguments"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Carry out ``acpio serve``."""
    import asyncio
    import contextlib
    import importlib
    import logging
    import signal

    from acpio.cli import CliError, run_main

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if args.app and command:
        raise CliError("give the agent's command after -- or --app MODULE:NAME, not both")
    if not command and not args.app:
        raise CliError(
            "no agent: give its command after --, as in `acpio serve -- acpio testy`, or an AgentApp "
            "with --app MODULE:NAME"
        )
    try:
        importlib.import_module("uvicorn")  # acpio.remote imports it only once a server starts

        from acpio.remote import Gateway, ReadinessCheck, RemoteServer, is_loopback
    except ImportError as exc:
        raise CliError(f"acpio serve needs the remote extra: pip install 'acpio[remote]' ({exc})") from exc
    uvicorn: dict[str, Any] = {}
    if args.ssl_certfile or args.ssl_keyfile:
        if not (args.ssl_certfile and args.ssl_keyfile):
            raise CliError("--ssl-certfile and --ssl-keyfile go together")
        uvicorn = {"ssl_certfile": args.ssl_certfile, "ssl_keyfile": args.ssl_keyfile}
    if not is_loopback(args.host) and args.token is None and not args.insecure:
        raise CliError(
            f"--host {args.host} exposes the agent to the network: give a token with --token or "
            "$ACPIO_TOKEN (clients send it as Authorization: Bearer TOKEN), or --insecure on a trusted "
            "network"
        )
    if args.drain_timeout < 0:
        raise CliError("--drain-timeout is a number of seconds, 0 or more")
    logging.basicConfig(level=logging.INFO, format="acpio serve: %(message)s", stream=sys.stderr)
    store = _open_store(args.check_store) if args.check_store else None
    ready_checks = [] if store is None else [ReadinessCheck("the session store", lambda: store.list(limit=1))]
    route = _route(args.route) if args.route else None
    try:
        served = _imported_app(args.app) if args.app else Gateway(command)
        if route is not None:
            app_store = getattr(served, "store", None)
            if app_store is None:
                raise CliError(
                    "--route tells attaching clients where a session runs: it needs --app, an "
                    "AgentApp with a store shared by the servers (store='postgresql://...')"
                )
            app_store.route = route
        server = RemoteServer(
            served,
            host=args.host,
            port=args.port,
            token=args.token,
            insecure=args.insecure,
            allowed_origins=args.allow_origin,
            ready_checks=ready_checks,
            uvicorn=uvicorn,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from exc

    async def main() -> None:
        signals = asyncio.Queue[int]()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, signals.put_nowait, sig)
        async with contextlib.AsyncExitStack() as stack:
            if store is not None:
                stack.push_async_callback(store.aclose)
            try:
                await stack.enter_async_context(server)
            except OSError as exc:  # the bind
                raise CliError(f"{exc}: choose another --port (0 picks a free one)", code=1) from exc
            scheme = "wss" if uvicorn else "ws"
            print(f"listening on {server.url} ({scheme}:// too)", flush=True)
            signalled = asyncio.ensure_future(signals.get())
            closed = asyncio.ensure_future(server.wait_closed())
            await asyncio.wait((signalled, closed), return_when=asyncio.FIRST_COMPLETED)
            closed.cancel()
            if not signalled.done():
                signalled.cancel()
                return
            await _drain(server, args.drain_timeout, signals)

    run_main(main())
    return 0


def _route(text: str) -> dict[str, str]:
    """``--route COOKIE=VALUE``, as the cookie."""
    from acpio.cli import CliError

    name, equals, value = text.partition("=")
    if not equals or not name.strip() or not value.strip():
        raise CliError(f"--route {text}: give the balancer's affinity cookie as NAME=VALUE (acpio-server=a)")
    return {name.strip(): value.strip()}


async def _drain(server: RemoteServer, seconds: float, signals: asyncio.Queue[int]) -> None:
    """Close ``server`` after its running turns (for up to ``seconds``, or until another signal)."""
    import asyncio
    import logging

    log = logging.getLogger("acpio.serve")
    count = server.listener.connection_count
    log.info("Draining: no new connection; %d open end after their turns (%g s at most)", count, seconds)
    draining = asyncio.ensure_future(server.close(drain_timeout=seconds))
    again = asyncio.ensure_future(signals.get())
    await asyncio.wait((draining, again), return_when=asyncio.FIRST_COMPLETED)
    if not draining.done():
        log.info("Stopping now: signalled again while draining")
        await server.listener.close_connections()
    if not await draining:
        log.warning("Drain timeout: the turns still running after %g s were cut", seconds)
    again.cancel()


def _imported_app(spec: str) -> Any:
    """The app ``--app MODULE:NAME`` names: anything with ``serve(listener)``, an AgentApp say."""
    import importlib

    from acpio.cli import CliError

    module_name, _, name = spec.partition(":")
    if not module_name or not name:
        raise CliError(f"--app {spec}: give MODULE:NAME, as in --app my_agent:app")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise CliError(f"--app {spec}: cannot import {module_name} ({exc}); is it on PYTHONPATH?") from exc
    app = getattr(module, name, None)
    if not callable(getattr(app, "serve", None)):
        raise CliError(f"--app {spec}: {module_name} has no {name} with a serve() method (an AgentApp)")
    return app


def _open_store(url: str) -> SessionStore:
    from acpio.cli import CliError
    from acpio.store import StoreError, open_store

    try:
        return open_store(url)
    except (ValueError, StoreError) as exc:
        raise CliError(f"--check-store: {exc}") from None
