"""``acpio serve``: any stdio agent over HTTP and WebSocket, one agent process per remote connection.

::

    acpio serve -- acpio testy
    acpio serve --port 9000 -- npx @zed-industries/claude-code-acp
    ACPIO_TOKEN=... acpio serve --host 0.0.0.0 -- python my_agent.py

See ``docs/remote.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from acpio.cli import Subcommands

__all__ = ["register", "run"]

_DESCRIPTION = """\
Serve a stdio ACP agent over the network: Streamable HTTP (POST, event streams) and WebSocket on one
endpoint, http://HOST:PORT and ws://HOST:PORT. Each remote connection gets its own agent process,
started from the command after --; its stderr is logged; it ends when the connection ends.

The server binds loopback (127.0.0.1) unless --host says otherwise. Another address needs a token
(--token or ACPIO_TOKEN: clients send it as Authorization: Bearer TOKEN) or --insecure. Browser pages
may connect only from the origins given with --allow-origin. For TLS, give --ssl-certfile and
--ssl-keyfile, or put a reverse proxy in front.
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
    if not command:
        raise CliError("no agent: give its command after --, as in `acpio serve -- acpio testy`")
    try:
        importlib.import_module("uvicorn")  # acpio.remote imports it only once a server starts

        from acpio.remote import Gateway, RemoteServer, is_loopback
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
    logging.basicConfig(level=logging.INFO, format="acpio serve: %(message)s", stream=sys.stderr)
    try:
        gateway = Gateway(command)
        server = RemoteServer(
            gateway,
            host=args.host,
            port=args.port,
            token=args.token,
            insecure=args.insecure,
            allowed_origins=args.allow_origin,
            uvicorn=uvicorn,
        )
    except ValueError as exc:
        raise CliError(str(exc)) from exc

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(sig, stop.set)
        async with contextlib.AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(server)
            except OSError as exc:  # the bind
                raise CliError(f"{exc}: choose another --port (0 picks a free one)", code=1) from exc
            scheme = "wss" if uvicorn else "ws"
            print(f"listening on {server.url} ({scheme}:// too)", flush=True)
            waiting = asyncio.ensure_future(stop.wait())
            closed = asyncio.ensure_future(server.wait_closed())
            await asyncio.wait((waiting, closed), return_when=asyncio.FIRST_COMPLETED)
            waiting.cancel()
            closed.cancel()

    run_main(main())
    return 0
