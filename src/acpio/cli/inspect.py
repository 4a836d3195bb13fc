"""``acpio inspect -- AGENT``: an ACP agent in a live web page, driven by hand or watched under an editor.

The page (loopback only, a random token in its address, printed on stderr) shows every frame both ways
as a sequence (the trace viewer's drawing), the warnings the frames raise
(:mod:`acpio.inspector.checks`), the session as a person sees it, and the controls that drive the
agent. ``--proxy`` makes it the agent command of an editor: the editor's frames pass through unchanged
while the page watches. Every run is kept in one SQLite file (``--capture``); ``--open-run FILE`` shows
one again and ``--export-trace OUT`` writes it as a trace for ``acpio trace view`` and ``show``.
The page is described in ``docs/inspect.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from acpio.cli import CliError, run_main

if TYPE_CHECKING:
    from acpio.cli import Subcommands
    from acpio.inspector.connection import InspectedConnection
    from acpio.inspector.record import Inspection
    from acpio.inspector.server import InspectorServer
    from acpio.transports import Component


def register(subparsers: Subcommands) -> None:
    """Add the ``inspect`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "inspect",
        help="drive or watch an agent in a live web page: every frame, warnings, the session",
        description="Start an agent (the words after --, or a ws:// or http:// URL) and serve a local web "
        "page that shows every frame both ways, live, with warnings where a frame breaks the protocol, and "
        "controls to drive the agent by hand. With --proxy, use `acpio inspect --proxy -- AGENT` as the "
        "agent command of an editor: the editor drives, the page watches.",
    )
    parser.add_argument(
        "agent", nargs="*", metavar="AGENT", help="the agent's command and arguments, after --"
    )
    parser.add_argument(
        "--proxy", action="store_true", help="pass the editor's stdin and stdout to the agent"
    )
    parser.add_argument("--open", action="store_true", help="open the page in the default web browser")
    parser.add_argument("--port", type=int, default=0, help="the page's port (default: a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="127.0.0.1 (default), ::1 or localhost")
    parser.add_argument("--url-file", metavar="FILE", help="also write the page's address to FILE")
    parser.add_argument(
        "--capture",
        metavar="FILE",
        help="the SQLite file the run is kept in (default: a new file under $XDG_STATE_HOME/acpio/inspect)",
    )
    parser.add_argument(
        "--root",
        metavar="DIR",
        default=".",
        help="the directory the agent's file reads and writes and commands are confined to (default: .)",
    )
    parser.add_argument(
        "--long-line", type=int, default=1 << 20, metavar="BYTES", help="warn about lines longer than this"
    )
    parser.add_argument("--open-run", metavar="FILE", help="show a run kept by --capture again (no agent)")
    parser.add_argument(
        "--export-trace", metavar="OUT", help="with --open-run: write the run as a trace file and exit"
    )
    parser.add_argument(
        "--diff",
        nargs=2,
        metavar=("RUN", "OTHER"),
        help="print what two runs exchanged differently (exit status 1 when they differ) and exit",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Carry out ``acpio inspect``."""
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise CliError("acpio inspect needs the inspect extra: pip install 'acpio[inspect]'") from exc
    if args.diff:
        return _diff(*args.diff)
    if args.open_run:
        return _reopen(args)
    if not args.agent:
        raise CliError("no agent: give its command after --, as in `acpio inspect -- acpio testy`")
    if args.export_trace:
        raise CliError("--export-trace goes with --open-run FILE (the run to export)")
    return run_main(_inspect(args))


def _reopen(args: argparse.Namespace) -> int:
    from acpio.inspector.capture import Capture
    from acpio.inspector.record import Inspection

    try:
        capture = Capture.open_existing(args.open_run)
    except OSError as exc:
        raise CliError(str(exc)) from exc
    with capture:
        if args.export_trace:
            count = capture.export_trace(args.export_trace)
            print(
                f"{args.export_trace}: {count} events (acpio trace view {args.export_trace})", file=sys.stderr
            )
            return 0
        inspection = Inspection.replay(capture)
    return run_main(_serve_until_interrupted(args, inspection))


def _diff(before: str, after: str) -> int:
    from acpio.inspector.capture import Capture
    from acpio.inspector.compare import diff_runs

    try:
        with Capture.open_existing(before) as one, Capture.open_existing(after) as other:
            lines = diff_runs(one, other)
    except OSError as exc:
        raise CliError(str(exc)) from exc
    sys.stdout.write("".join(line + "\n" for line in lines))
    return 1 if lines else 0


def _capture_path(args: argparse.Namespace) -> Path:
    if args.capture:
        return Path(args.capture)
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(state) / "acpio" / "inspect" / f"run-{stamp}-{os.getpid()}.sqlite"


def _agent(args: argparse.Namespace, inspection: Inspection) -> Component:
    text = args.agent[0]
    if len(args.agent) == 1 and text.split("://", 1)[0].lower() in {"http", "https", "ws", "wss"}:
        try:
            from acpio.remote import RemoteAgent
        except ImportError as exc:
            raise CliError(
                f"{text}: an agent at a URL needs the remote extra: pip install 'acpio[remote]'"
            ) from exc
        return RemoteAgent(text, token=os.environ.get("ACPIO_TOKEN"))
    from acpio.transports import AcpAgent

    try:
        return AcpAgent.from_args(args.agent, stderr=inspection.record_stderr)
    except ValueError as exc:
        raise CliError(f"the agent command: {exc}") from exc


async def _inspect(args: argparse.Namespace) -> int:
    import shlex

    from acpio.errors import TransportError
    from acpio.inspector.answers import Answers
    from acpio.inspector.capture import Capture
    from acpio.inspector.checks import FrameChecker
    from acpio.inspector.connection import InspectedConnection
    from acpio.inspector.record import Inspection
    from acpio.transports import Stdio

    path = _capture_path(args)
    try:
        capture = Capture(path)
    except OSError as exc:
        raise CliError(f"--capture {path}: {exc}") from exc
    info = {
        "command": shlex.join(args.agent),
        "mode": "proxy" if args.proxy else "drive",
        "client": "editor (stdin/stdout)" if args.proxy else "acpio inspect (this page)",
        "capture": str(path.resolve()),
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    inspection = Inspection(info, capture=capture, checker=FrameChecker(long_line=args.long_line))
    component = _agent(args, inspection)
    try:
        agent = await component.open()
    except TransportError as exc:
        raise CliError(f"could not start the agent: {exc}", code=1) from exc
    try:
        if args.proxy:
            connection = InspectedConnection(inspection, agent, editor=Stdio())
        else:
            try:
                answers = Answers(Path(args.root))
            except ValueError as exc:
                raise CliError(f"--root: {exc}") from exc
            connection = InspectedConnection(inspection, agent, answers=answers)
        return await _serve_connection(args, inspection, connection)
    finally:
        await agent.aclose()
        capture.close()


async def _serve_connection(
    args: argparse.Namespace, inspection: Inspection, connection: InspectedConnection
) -> int:
    async with _server(args, inspection, connection) as server:
        _announce(args, server.url)
        try:
            await connection.run()
        finally:
            await connection.aclose()
        inspection.announce("exit", text="the agent's output ended")
        if connection.proxy:
            return 0
        print("The agent has ended; the page stays up until Ctrl-C.", file=sys.stderr, flush=True)
        await asyncio.Event().wait()
    return 0


async def _serve_until_interrupted(args: argparse.Namespace, inspection: Inspection) -> int:
    async with _server(args, inspection, None) as server:
        _announce(args, server.url)
        await asyncio.Event().wait()
    return 0


def _server(
    args: argparse.Namespace, inspection: Inspection, connection: InspectedConnection | None
) -> InspectorServer:
    from acpio.inspector.server import InspectorServer

    try:
        return InspectorServer(inspection, connection, host=args.host, port=args.port)
    except ValueError as exc:
        raise CliError(f"--host: {exc}") from exc


def _announce(args: argparse.Namespace, url: str) -> None:
    print(f"acpio inspect: {url}", file=sys.stderr, flush=True)
    if args.url_file:
        Path(args.url_file).write_text(url + "\n")
    if args.open:
        import webbrowser

        if not webbrowser.open(url):
            print(f"Could not open a web browser: open {url} yourself.", file=sys.stderr, flush=True)
