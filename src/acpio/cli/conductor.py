"""``acpio conductor``: run a chain of ACP proxies (and an agent) as one ACP endpoint on stdin/stdout.

::

    acpio conductor [--trace FILE] [--name NAME] agent "proxy-cmd ..." ... "agent-cmd ..."
    acpio conductor [--trace FILE] [--name NAME] proxy "proxy-cmd ..." ...

Each component is one command string (shell words, leading ``NAME=value`` words set variables, or a
JSON ``{"command", "args", "env"}`` config). In ``agent`` mode the last one is the agent; in ``proxy``
mode all are proxies and the chain's successor is this conductor's own. The components start when
the client sends ``initialize``. A clean end of stdin exits 0; a component that cannot start or
that dies exits 1 with the reason on stderr.
"""

from __future__ import annotations

import argparse
from typing import Any

from acpio.cli import CliError

_DESCRIPTION = """\
Run a chain of ACP proxies, and in agent mode a final agent, as one ACP endpoint on stdin/stdout.
Each COMPONENT is one command string: quote commands that have arguments. The components are
started when the client sends `initialize`, and stopped when stdin ends."""

_EPILOG = """\
examples:
  acpio conductor agent "python examples/arrow_proxy.py" "python -m acpio testy"
  acpio conductor --trace run.jsons agent "python proxy.py --flag" "my-agent --acp"
  acpio conductor proxy "python examples/arrow_proxy.py" "python examples/logging_proxy.py"

--trace writes one JSON event per line (read it with `acpio trace`)."""


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
        "-n",
        "--name",
        default=argparse.SUPPRESS if nested else "conductor",
        help="the conductor's name, shown in errors (default: conductor)",
    )


def register(subparsers: Any) -> None:
    """Add the ``conductor`` subcommand, with its ``agent`` and ``proxy`` modes."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "conductor",
        help="run a chain of proxies (and an agent) as one ACP endpoint on stdio",
        description=_DESCRIPTION,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_options(parser, nested=False)
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

    import asyncio

    from acpio.conductor import Chain, ConductorError, FileSink, Named
    from acpio.errors import AcpError
    from acpio.transports import AgentCommand, Stdio

    components = []
    for text in args.components:
        try:
            command = AgentCommand.from_string(text)
        except (ValueError, TypeError) as exc:
            raise CliError(f"cannot read the component {text!r}: {exc}") from None
        components.append(Named(text.strip(), command))
    chain = Chain.agent(args.name, components) if args.mode == "agent" else Chain.proxy(args.name, components)
    if args.trace is not None:
        try:
            chain.trace_to(FileSink(args.trace))
        except OSError as exc:
            raise CliError(f"cannot write the trace file {args.trace!r}: {exc.strerror or exc}") from None

    async def serve() -> None:
        await chain.serve(Stdio())

    try:
        asyncio.run(serve())
    except ConductorError as exc:
        raise CliError(str(exc), code=1) from None
    except AcpError as exc:
        raise CliError(f"the conductor stopped: {exc}", code=1) from None
    return 0
