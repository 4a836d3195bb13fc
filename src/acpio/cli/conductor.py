"""``acpio conductor``: run a chain of ACP proxies (and an agent) as one ACP endpoint on stdin/stdout.

::

    acpio conductor [--trace FILE] [--debug DIR] [--name NAME] [--mcp-bridge] agent "proxy ..." "agent ..."
    acpio conductor [--trace FILE] [--debug DIR] [--name NAME] proxy "proxy-cmd ..." ...

Each component is one command string (shell words, leading ``NAME=value`` words set variables, or a
JSON ``{"command", "args", "env"}`` config). In ``agent`` mode the last one is the agent; in ``proxy``
mode all are proxies and the chain's successor is this conductor's own. The components start when
the client sends ``initialize``. A clean end of stdin exits 0; a component that cannot start or
that dies exits 1 with the reason on stderr. ``--trace FILE`` records every message and the
components' stderr lines; ``--debug DIR`` writes one line log per component there.

Each component runs in a process group of its own. However the conductor ends (stdin closed,
SIGINT, SIGTERM, SIGHUP, its parent exiting, a component dying), it ends them all in order: their
stdin is closed, then each group gets SIGTERM after a grace period and SIGKILL after another, and
the conductor waits for that. A second signal meanwhile kills them at once. Exit codes after a
signal: 130 (SIGINT), 143 (SIGTERM), 129 (SIGHUP, or the parent exited). Under ``nohup`` (SIGHUP
ignored) neither SIGHUP nor the parent's exit stops the conductor. Stopped before the chain
answered the client's ``initialize`` (a component slow to start), it kills the components at once.
"""

from __future__ import annotations

import argparse
from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any, cast

from acpio.cli import CliError, note_if_terminal, run_main

if TYPE_CHECKING:
    from acpio.cli import Subcommands
    from acpio.redaction import Redactor
    from acpio.transports import AcpAgent

_DESCRIPTION = """\
Run a chain of ACP proxies, and in agent mode a final agent, as one ACP endpoint on stdin/stdout.
Each COMPONENT is one command string: quote commands that have arguments. The components are
started when the client sends `initialize`, and stopped when stdin ends, on SIGINT, SIGTERM or
SIGHUP, or when the parent process exits (exit codes 0, 130, 143, 129)."""

_EPILOG = """\
examples:
  acpio conductor agent "python examples/arrow_proxy.py" "python -m acpio testy"
  acpio conductor --trace run.jsons agent "python proxy.py --flag" "my-agent --acp"
  acpio conductor proxy "python examples/arrow_proxy.py" "python examples/logging_proxy.py"
  acpio conductor agent --mcp-bridge "python examples/mcp_notes_proxy.py" "acpio testy"
  acpio conductor --trace run.jsons --redact 'sk-[A-Za-z0-9]{8,}' agent \
      "acpio proxy redact 'sk-[A-Za-z0-9]{8,}'" "my-agent"

--trace writes one JSON event per line (read it with `acpio trace show` or `acpio trace view`).
--debug DIR writes DIR/0-client.log, DIR/1-proxy0.log, ...: every line each component got, sent and
wrote on stderr, with the time it did."""


def _add_options(parser: argparse.ArgumentParser, *, nested: bool) -> None:
    # The options are accepted before the mode (as documented) and after it; a value given after
    # the mode must not be reset by the mode parser's default, hence SUPPRESS there.
    default: Any = argparse.SUPPRESS if nested else None
    parser.add_argument(
        "--trace",
        metavar="FILE",
        default=default,
        help="write a trace of every message between the client, the proxies and the agent to FILE "
        "(newline-delimited JSON; the file is truncated at start)",
    )
    parser.add_argument(
        "--redact",
        metavar="REGEX",
        action="append",
        default=default,
        help="with --trace: replace what REGEX matches with [REDACTED] in the trace, also a match the "
        "agent's text chunks split (repeatable; run a redacting proxy to keep it from the client too)",
    )
    parser.add_argument(
        "--debug",
        metavar="DIR",
        default=default,
        help="write one line log per component in DIR (0-client.log, 1-proxy0.log, ...): every line "
        "sent to it, received from it and written on its stderr (files truncated at start)",
    )
    parser.add_argument(
        "-n",
        "--name",
        default=argparse.SUPPRESS if nested else "conductor",
        help="the conductor's name, shown in errors (default: conductor)",
    )


def _add_bridge(parser: argparse.ArgumentParser, *, nested: bool) -> None:
    # Before the mode as well as after it (agent mode only: checked in run, where the mode is known).
    parser.add_argument(
        "--mcp-bridge",
        action="store_true",
        default=argparse.SUPPRESS if nested else False,
        help="agent mode: run acpio's MCP-over-ACP bridge just before the agent: MCP servers the client "
        "or a proxy serves over ACP reach an agent that only takes HTTP MCP servers (needs acpio[mcp])",
    )


def register(subparsers: Subcommands) -> None:
    """Add the ``conductor`` subcommand, with its ``agent`` and ``proxy`` modes."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "conductor",
        help="run a chain of proxies (and an agent) as one ACP endpoint on stdio",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_options(parser, nested=False)
    _add_bridge(parser, nested=False)
    modes = parser.add_subparsers(title="modes", metavar="MODE", dest="mode", required=True)
    agent = modes.add_parser(
        "agent",
        help="proxies then an agent: act as an agent toward the client",
        description="Agent mode: every COMPONENT but the last is a proxy; the last one is the agent.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    agent.add_argument(
        "components", nargs="*", metavar="COMPONENT", help="a proxy command, then the agent command"
    )
    _add_bridge(agent, nested=True)
    _add_options(agent, nested=True)
    proxy = modes.add_parser(
        "proxy",
        help="proxies only: act as one proxy inside another conductor",
        description="Proxy mode: every COMPONENT is a proxy; the last one's successor is this "
        "conductor's own successor, so this conductor can be a proxy of another one.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    proxy.add_argument("components", nargs="*", metavar="COMPONENT", help="a proxy command")
    _add_options(proxy, nested=True)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve the conductor on stdio until stdin ends; return the exit code."""
    if not args.components:
        needs = "the agent command, after any proxy commands" if args.mode == "agent" else "a proxy command"
        raise CliError(f"`acpio conductor {args.mode}` needs at least one COMPONENT: {needs}")
    if args.mcp_bridge and args.mode != "agent":
        raise CliError(
            "--mcp-bridge runs the bridge just before the agent, so it takes agent mode: "
            '`acpio conductor agent --mcp-bridge "proxy ..." "agent ..."`'
        )

    from acpio.conductor import Chain, ConductorError, FileSink, Named, RedactingSink
    from acpio.conductor.components import resolve
    from acpio.errors import AcpError
    from acpio.transports import AgentCommand, Stdio

    components: list[Any] = []
    processes: list[AcpAgent] = []
    watch_stderr = args.trace is not None or args.debug is not None
    for text in args.components:
        try:
            command = AgentCommand.from_string(text)
        except (ValueError, TypeError) as exc:
            raise CliError(f"cannot read the component {text!r}: {exc}") from None
        # With --trace or --debug, the process's stderr lines go to the trace and the log.
        member = resolve(Named(text.strip(), command), stderr=watch_stderr)
        processes.append(cast("AcpAgent", member.component))  # a command resolves to its process
        components.append(member)
    if args.mcp_bridge:
        try:
            from acpio.mcp import mcp_http_bridge
        except ImportError as exc:
            raise CliError(f"--mcp-bridge needs the mcp package: pip install 'acpio[mcp]' ({exc})") from None
        components.insert(len(components) - 1, Named("mcp-http-bridge", mcp_http_bridge()))
    chain = Chain.agent(args.name, components) if args.mode == "agent" else Chain.proxy(args.name, components)
    redact = getattr(args, "redact", None)
    if redact and args.trace is None:
        raise CliError("--redact redacts the trace: give --trace FILE too")
    if args.trace is not None:
        try:
            sink = FileSink(args.trace)
        except OSError as exc:
            raise CliError(f"cannot write the trace file {args.trace!r}: {exc.strerror or exc}") from None
        chain.trace_to(RedactingSink(sink, _redactor(redact)) if redact else sink)
    if args.debug is not None:
        import os
        import sys

        try:
            os.makedirs(args.debug, exist_ok=True)
        except OSError as exc:
            reason = exc.strerror or exc
            raise CliError(f"cannot make the --debug directory {args.debug!r}: {reason}") from None
        chain.debug_to(args.debug)
        print(f"acpio: debug logs in {os.path.abspath(args.debug)} (one per component)", file=sys.stderr)

    async def serve() -> int:
        return await _serve_until_stopped(chain.serve(Stdio()), processes)

    note_if_terminal(f"acpio conductor {args.mode}")
    try:
        return run_main(serve())
    except ConductorError as exc:
        raise CliError(str(exc), code=1) from None
    except AcpError as exc:
        raise CliError(f"the conductor stopped: {exc}", code=1) from None


async def _serve_until_stopped(serving: Coroutine[Any, Any, None], processes: Sequence[AcpAgent]) -> int:
    """Run ``serving``; on SIGINT, SIGTERM, SIGHUP or the parent's exit, end it in order.

    Cancelling the serve closes the chain's components, each process group with its grace periods
    (see :mod:`acpio.transports.subprocess`), and waits for them; a second signal SIGKILLs the
    groups at once. Returns 0 after a clean end of stdin, else 128 + the signal's number.
    """
    import asyncio
    import signal
    import sys

    from acpio._process_control import handling_endings, signal_exit_code

    loop = asyncio.get_running_loop()
    task = loop.create_task(serving, name="acpio conductor")
    stopping: list[int] = []

    def stop(number: int, why: str) -> None:
        if stopping:
            print("acpio: stopping at once: killing the components", file=sys.stderr, flush=True)
            for process in processes:
                process.kill()
            return
        stopping.append(number)
        print(f"acpio: {why}; ending the components", file=sys.stderr, flush=True)
        task.cancel()

    with handling_endings(
        lambda number: stop(number, f"stopping on {number.name}"),
        lambda: stop(signal.SIGHUP, "stopping: the process that started acpio exited"),
    ):
        try:
            await asyncio.shield(task)  # a cancellation of ours (none expected) must not skip the ending
        except asyncio.CancelledError:
            if not stopping or not task.cancelled():
                raise
    return signal_exit_code(stopping[0]) if stopping else 0


def _redactor(patterns: Sequence[str]) -> Redactor:
    """The redactor of ``--redact``'s expressions; a bad one is a :class:`CliError`."""
    import re

    from acpio.redaction import Redactor

    try:
        return Redactor(patterns)
    except re.error as exc:
        raise CliError(f"--redact: {exc.pattern!r} is not a regular expression: {exc}") from None
