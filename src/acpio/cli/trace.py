"""``acpio trace view FILE``: draw a conductor trace as a sequence diagram in the browser.

The viewer listens on a loopback address only (default ``127.0.0.1``, a free port), prints its URL and
serves until Ctrl-C. It follows a trace that is still being written: start it before the conductor and
watch the messages arrive. The format and the page are described in ``docs/trace.md``.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from typing import Any

from acpio.cli import CliError


def register(subparsers: Any) -> None:
    """Add the ``trace`` subcommand and its ``view`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "trace",
        help="view a conductor trace (acpio conductor --trace FILE)",
        description="Tools for the traces `acpio conductor --trace FILE` writes.",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    view = commands.add_parser(
        "view",
        help="serve a page that draws the trace as a sequence diagram",
        description="Serve a local web page that draws the trace as a sequence diagram, one lane per "
        "component, filtered by session and method; click a message for its JSON. A trace still being "
        "written is followed live. Stop with Ctrl-C.",
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


def run_view(args: argparse.Namespace) -> int:
    """Serve the viewer for ``args.file`` until interrupted."""
    from acpio.trace.viewer import TraceViewer

    path: str = args.file
    if not os.path.exists(path):
        raise CliError(f"trace file not found: {path}")
    if os.path.isdir(path):
        raise CliError(f"{path} is a directory: give the trace file (acpio conductor --trace FILE)")
    if not os.access(path, os.R_OK):
        raise CliError(f"cannot read the trace file {path}: permission denied")
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


def _open_browser(url: str) -> None:
    import webbrowser

    try:
        opened = webbrowser.open(url)
    except webbrowser.Error:
        opened = False
    if not opened:
        print(f"Could not open a web browser: open {url} yourself.", file=sys.stderr, flush=True)
