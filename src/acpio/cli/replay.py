"""``acpio replay CASSETTE``: a recorded agent, replayed on stdin and stdout as a deterministic fake agent.

::

    acpio prompt --record run.jsonl --agent "acpio agent --offline" "say hi"
    acpio prompt --agent "acpio replay run.jsonl" "say hi"         # the same output, no model
    acpio prompt --agent "acpio replay --cut-at 5 run.jsonl" "say hi"   # a client's robustness test

See ``docs/testing-clients.md``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from acpio.cli import CliError, note_if_terminal, run_main

if TYPE_CHECKING:
    from acpio.cli import Subcommands
    from acpio.testing.agent_replay import Faults
    from acpio.trace.cassette import Cassette

__all__ = ["register", "run"]

_DESCRIPTION = """\
Replay a cassette (acpio prompt --record FILE, a CassetteRecorder, acpio prompt --json's log or a
conductor's --trace) as the agent, on stdin and stdout: each message the client sent in the
recording is answered with what the agent sent after it, with the client's own request ids and its
session directory in place of <cwd>. A message the cassette does not expect next is noted on stderr
(a request is answered -32603). The fault options make it a misbehaving agent.

exit codes: 0 the client ended the input; 1 a fault (--crash-at, --cut-at) ended the agent; 2 usage
mistake or unreadable cassette."""


def register(subparsers: Subcommands) -> None:
    """Add the ``replay`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "replay",
        help="replay a recorded agent from a cassette (a fake agent for testing clients)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("cassette", metavar="CASSETTE", type=Path, help="the cassette (or trace) file")
    parser.add_argument(
        "--delay", type=float, default=0.0, metavar="SECONDS", help="wait this long before each message"
    )
    parser.add_argument(
        "--garbage-at", type=int, metavar="N", help="write a line that is not JSON before message N"
    )
    parser.add_argument(
        "--cut-at", type=int, metavar="N", help="cut message N in the middle of its line, then exit 1"
    )
    parser.add_argument("--crash-at", type=int, metavar="N", help="exit 1 before writing message N")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Carry out ``acpio replay``."""
    from acpio.testing.agent_replay import Faults
    from acpio.trace.cassette import Cassette

    if args.delay < 0:
        raise CliError(f"--delay {args.delay}: must be 0 or more seconds")
    for option in ("garbage_at", "cut_at", "crash_at"):
        value = getattr(args, option)
        if value is not None and value < 1:
            raise CliError(f"--{option.replace('_', '-')} {value}: messages are counted from 1")
    try:
        cassette = Cassette.load(args.cassette)
    except (OSError, ValueError) as exc:
        raise CliError(f"cannot replay {args.cassette}: {exc}") from None
    faults = Faults(args.delay, args.garbage_at, args.cut_at, args.crash_at)
    note_if_terminal("acpio replay")
    return run_main(_serve(cassette, faults))


async def _serve(cassette: Cassette, faults: Faults) -> int:
    import asyncio

    from acpio.testing.agent_replay import AgentCrashed, replay_as_agent

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    out = sys.stdout.buffer

    async def read() -> bytes:
        return await reader.read(65536)

    async def write(data: bytes) -> None:
        out.write(data)
        out.flush()

    try:
        await replay_as_agent(cassette, read, write, faults=faults)
    except AgentCrashed as exc:
        print(f"acpio replay: {exc}", file=sys.stderr)
        return 1
    return 0
