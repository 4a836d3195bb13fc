"""``acpio proxy``: ready-made proxies to put in a conductor chain, on stdin and stdout.

::

    acpio proxy policy FILE                 # answer permission requests by a TOML policy
    acpio proxy redact REGEX [REGEX ...]    # redact the agent's text, across chunk boundaries

Each is a component of ``acpio conductor`` (one quoted argument), like any proxy command:
``acpio conductor agent "acpio proxy policy policy.toml" "my-agent --acp"``.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from acpio.cli import CliError, note_if_terminal, run_main

if TYPE_CHECKING:
    from acpio.cli import Subcommands

__all__ = ["register", "run"]

_EPILOG = """\
examples:
  acpio conductor agent "acpio proxy policy examples/policy.toml" "python -m acpio testy"
  acpio conductor --trace run.jsons --redact 'sk-[A-Za-z0-9]{8,}' agent \\
      "acpio proxy redact 'sk-[A-Za-z0-9]{8,}'" "my-agent --acp"

The policy proxy writes each decision on stderr as `acpio-policy {JSON}` (a conductor's --trace
records it). What the policy asks about goes on to the client."""


def register(subparsers: Subcommands) -> None:
    """Add the ``proxy`` subcommand and its proxies."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "proxy",
        help="run a ready-made proxy (policy, redact) for a conductor chain on stdin/stdout",
        description="Run a ready-made ACP proxy on stdin/stdout, as a component of `acpio conductor`.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    kinds = parser.add_subparsers(title="proxies", metavar="PROXY", dest="proxy", required=True)
    policy = kinds.add_parser(
        "policy",
        help="answer the agent's permission requests by a TOML policy; forward what it asks to the client",
        description="Answer the agent's permission requests by the rules of a TOML policy file "
        "(see examples/policy.toml); forward what it asks to the client.",
    )
    policy.add_argument("file", metavar="FILE", help="the policy file")
    redact = kinds.add_parser(
        "redact",
        help="replace what regular expressions match in the agent's text, across chunk boundaries",
        description="Replace what the regular expressions match in the agent's message and thought "
        "chunks, also when a match is split across chunks.",
    )
    redact.add_argument("patterns", nargs="+", metavar="REGEX", help="a regular expression (Python syntax)")
    redact.add_argument(
        "--replacement", default="[REDACTED]", help="what replaces a match (default: [REDACTED])"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve the chosen proxy on stdio until stdin ends."""
    import re

    from acpio.client import PolicyFileError, load_policy
    from acpio.proxies import policy_proxy, redacting_proxy
    from acpio.transports import Stdio

    if args.proxy == "policy":
        try:
            app = policy_proxy(load_policy(args.file))
        except PolicyFileError as exc:
            raise CliError(str(exc)) from None
    else:
        try:
            app = redacting_proxy(args.patterns, replacement=args.replacement)
        except re.error as exc:
            raise CliError(f"{exc.pattern!r} is not a regular expression: {exc}") from None
    note_if_terminal(f"acpio proxy {args.proxy}")
    run_main(app.serve(Stdio()))
    return 0
