"""``acpio trace view FILE`` and ``acpio trace show FILE``: a trace in the browser, or in the terminal.

``view``: the viewer listens on a loopback address only (default ``127.0.0.1``, a free port), prints its
URL and serves until Ctrl-C. It follows a trace that is still being written: start it before the
conductor and watch the messages arrive. ``show``: the same rows as text, one line per message (runs of
streamed chunks as one), coloured on a terminal and plain when piped. Both read conductor traces,
``acpio prompt --json`` logs and Tap recordings. The format and the page are described in
``docs/trace.md``.
"""

from __future__ import annotations

import argparse
import errno
import os
import shutil
import sys
from typing import TYPE_CHECKING

from acpio.cli import CliError

if TYPE_CHECKING:
    from acpio.cli import Subcommands


def register(subparsers: Subcommands) -> None:
    """Add the ``trace`` subcommand and its ``view`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "trace",
        help="view or print a trace (acpio conductor --trace FILE, acpio prompt --json)",
        description="Tools for the traces `acpio conductor --trace FILE` writes (and the message logs of "
        "`acpio prompt --json` and of a Tap).",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    view = commands.add_parser(
        "view",
        help="serve a page that draws the trace as a sequence diagram",
        description="Serve a local web page that draws the trace as a sequence diagram, one lane per "
        "component: runs of streamed chunks as one row, each request's wait on a time axis, the client "
        "edge alone if you like, filters by session, method, kind and full text (kept in the page's URL), "
        "export of what the filters show; click a message for its JSON. A trace still being written is "
        "followed live. Stop with Ctrl-C.",
    )
    view.add_argument("file", metavar="FILE", help="the trace file (newline-delimited JSON)")
    view.add_argument(
        "--port", type=int, default=0, help="the port to listen on (default: 0, a free port chosen at start)"
    )
    view.add_argument(
        "--host",
        default="127.0.0.1",
        help="the loopback address to listen on: 127.0.0.1 (default), ::1 or localhost",
    )
    view.add_argument("--open", action="store_true", help="open the page in the default web browser")
    view.set_defaults(run=run_view)
    show = commands.add_parser(
        "show",
        help="print the trace in the terminal, one line per message",
        description="Print the trace, one line per message: time, lanes, method, what it is about (the "
        "command of terminal/create, the path of fs/*, a tool call's title...) and how long a request "
        "waited. Runs of streamed chunks are one line. Coloured on a terminal, plain when piped.",
    )
    show.add_argument("file", metavar="FILE", help="the trace file (newline-delimited JSON)")
    show.add_argument(
        "--edge",
        choices=["all", "client"],
        default="all",
        help="client: only what crosses the client's edge, each logical message once (default: all hops)",
    )
    show.add_argument("--session", help="only this session (an empty string: messages of no session)")
    show.add_argument(
        "--method",
        action="append",
        default=[],
        metavar="WORD",
        help="only methods containing WORD (repeatable); -WORD hides methods containing it",
    )
    show.add_argument("--search", default="", metavar="TEXT", help="only events whose JSON contains TEXT")
    show.add_argument(
        "--kind",
        action="append",
        choices=["request", "response", "notification", "stderr"],
        help="only these kinds (repeatable; default: all)",
    )
    show.add_argument("--expand", action="store_true", help="show each chunk of a run too, under the run")
    show.add_argument("--no-collapse", action="store_true", help="one line per chunk, no runs")
    show.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="colours: on a terminal (auto, the default), always or never",
    )
    show.set_defaults(run=run_show)


def _readable_trace(path: str) -> str:
    """``path``, once it is a file this process can read; ``CliError`` saying what is wrong otherwise."""
    if not os.path.exists(path):
        raise CliError(f"trace file not found: {path}")
    if os.path.isdir(path):
        raise CliError(f"{path} is a directory: give the trace file (acpio conductor --trace FILE)")
    if not os.access(path, os.R_OK):
        raise CliError(f"cannot read the trace file {path}: permission denied")
    return path


def run_view(args: argparse.Namespace) -> int:
    """Serve the viewer for ``args.file`` until interrupted."""
    from acpio.trace.viewer import TraceViewer

    path = _readable_trace(args.file)
    if not 0 <= args.port <= 65535:
        raise CliError(f"--port must be between 0 and 65535 (0 picks a free port), got {args.port}")
    try:
        viewer = TraceViewer(path, host=args.host, port=args.port)
    except ValueError as error:
        raise CliError(f"--host {error}") from None
    except OSError as error:
        if error.errno == errno.EADDRINUSE:
            raise CliError(
                f"port {args.port} is already in use on {args.host}: choose another with --port, "
                "or leave it out to get a free one"
            ) from None
        raise CliError(f"cannot listen on {args.host} port {args.port}: {error.strerror or error}") from None
    with viewer:
        print(f"Trace viewer at {viewer.url}", flush=True)
        print(f"Following {path}; press Ctrl-C to stop.", file=sys.stderr, flush=True)
        if args.open:
            _open_browser(viewer.url)
        try:
            viewer.serve_forever()
        except KeyboardInterrupt:
            print("Stopped.", file=sys.stderr)
    return 0


def run_show(args: argparse.Namespace) -> int:
    """Print ``args.file`` as rows of text."""
    from acpio.trace import read_trace
    from acpio.trace.show import Filters, build_rows, format_rows

    path = _readable_trace(args.file)
    try:
        events = read_trace(path)
    except OSError as error:
        raise CliError(f"cannot read the trace file {path}: {error.strerror or error}") from None
    kinds = frozenset(args.kind) if args.kind else Filters().kinds
    filters = Filters(
        session=args.session,
        methods=[word for value in args.method for word in value.split()],
        kinds=kinds,
        search=args.search,
        edge="client" if args.edge == "client" else None,
    )
    rows = build_rows(events, filters, collapse=not args.no_collapse, expand=args.expand)
    styled = args.color == "always" or (args.color == "auto" and sys.stdout.isatty())
    width = shutil.get_terminal_size((160, 24)).columns if sys.stdout.isatty() else 160
    lines = format_rows(rows, styled=styled, width=width)
    if styled:
        from rich.console import Console

        console = Console(highlight=False, soft_wrap=True, force_terminal=True)
        for line in lines:
            console.print(line)
    else:
        sys.stdout.write("".join(line + "\n" for line in lines))
    if not events:
        print(f"{path}: no events (is it a trace? acpio conductor --trace FILE writes one)", file=sys.stderr)
    return 0


def _open_browser(url: str) -> None:
    import webbrowser

    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        print(f"Could not open a web browser: open {url} yourself.", file=sys.stderr, flush=True)
