"""``acpio dev``: run an agent for an editor and restart it when its files change, keeping the sessions.

::

    acpio dev examples/wordcount_agent.py
    acpio dev --watch src -- my-agent --acp

Give it to the editor as the agent command. A ``.py`` file runs with this Python and its directory
is watched; any other command runs as it is and the current directory is watched (``--watch``
chooses). On a change the agent process is replaced and the client's sessions are reopened in the
new one (:mod:`acpio.dev`); events are logged on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acpio.cli import Subcommands

_DESCRIPTION = """\
Run an agent on stdin/stdout for a client (an editor, `acpio prompt -i`) and restart it when its
files change. The new process gets the client's `initialize` again and each open session back
(session/resume, else session/load without replaying the history to the client, else a new
session the client keeps addressing by its old id)."""

_EPILOG = """\
examples:
  acpio dev examples/wordcount_agent.py
  acpio prompt -i -- acpio dev examples/wordcount_agent.py
  acpio dev --watch src --pattern '*.py' --pattern '*.toml' -- my-agent --acp"""


def register(subparsers: Subcommands) -> None:
    """Add ``acpio dev``."""
    parser = subparsers.add_parser(
        "dev",
        help="run an agent, restarting it when its files change (sessions kept)",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--watch",
        metavar="PATH",
        action="append",
        type=Path,
        help="a file or directory to watch (repeatable; default: the agent file's directory, else .)",
    )
    parser.add_argument(
        "--pattern",
        action="append",
        help="the names of the files that count, shell-style (repeatable; default: *.py)",
    )
    parser.add_argument(
        "--interval", type=float, default=0.25, help="seconds between two looks at the files (default 0.25)"
    )
    parser.add_argument("agent", help="an AgentApp file (agent.py) or the agent's command")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the agent's arguments")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Relay stdio to the agent until the client closes it."""
    from acpio.cli import CliError, note_if_terminal, run_main
    from acpio.dev import DevRelay, FileWatcher
    from acpio.transports import AgentCommand, Stdio

    agent = Path(args.agent)
    if agent.suffix == ".py":
        if not agent.is_file():
            raise CliError(f"no agent file {args.agent}: give an AgentApp file or the agent's command")
        command = AgentCommand.from_args([sys.executable, str(agent), *args.args])
        watched = args.watch or [agent.resolve().parent]
    else:
        command = AgentCommand.from_args([args.agent, *args.args])
        watched = args.watch or [Path.cwd()]
    if args.interval <= 0:
        raise CliError(f"--interval must be positive, not {args.interval}")
    missing = [str(p) for p in watched if not p.exists()]
    if missing:
        raise CliError(f"nothing to watch at {', '.join(missing)}")
    watcher = FileWatcher(watched, patterns=args.pattern or ("*.py",), interval=args.interval)
    note_if_terminal("acpio dev")

    async def main() -> None:
        upstream = Stdio()
        try:
            await DevRelay(command, upstream, watcher).run()
        finally:
            await upstream.aclose()

    run_main(main())
    return 0
