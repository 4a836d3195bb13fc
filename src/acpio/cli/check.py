"""``acpio check -- AGENT_CMD``: check any agent against acpio's requirement registry (``docs/check.md``).

The agent is started as an editor starts it, once per connection; the requirements of
:mod:`acpio.check.requirements` are checked and printed as a table (``--json`` for tools,
``--junit FILE`` for CI beside it). The exit code says whether the agent passed: ``1`` when a
MANDATORY requirement failed (or a CAPABILITY one, with ``--strict``), ``0`` otherwise.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from acpio.cli import CliError, run_main

if TYPE_CHECKING:
    from acpio.cli import Subcommands

__all__ = ["register", "run"]

_EPILOG = """\
tiers: MANDATORY (a MUST every agent meets: a failure fails the check), CAPABILITY (a MUST about a
feature the agent advertises; fails the check with --strict), ADVISORY (a SHOULD, or what Zed,
JetBrains IDEs and CodeCompanion.nvim need: reported only). Each answer has --timeout seconds, so a
hung agent gets a verdict. The default prompts are acpio testy's: give your agent's own with
--prompt, --busy-prompt (a turn that lasts until cancelled) and --permission-prompt (a turn that
asks permission).

example: acpio check --junit check.xml -- python my_agent.py"""


def register(subparsers: Subcommands) -> None:
    """Add ``acpio check`` to the ``acpio`` command."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "check",
        help="check an agent against acpio's ACP requirements (a table, JSON or JUnit XML)",
        description="Start an agent and check it against acpio's requirement registry: "
        "initialize and version negotiation, session ids, the prompt lifecycle, cancellation, "
        "requests only for advertised capabilities, load/resume replay order, stdout purity, "
        "-32601 for unknown methods, error shapes, then as Zed, JetBrains IDEs and CodeCompanion.nvim.",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("agent", nargs="*", metavar="AGENT_CMD", help="the agent's command, after --")
    parser.add_argument(
        "--protocol",
        choices=("1", "2", "both"),
        default="1",
        help="the requirements of ACP v1 (default), v2 or both",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON instead of a table")
    parser.add_argument("--junit", metavar="FILE", help="also write the report as JUnit XML to FILE (for CI)")
    parser.add_argument(
        "--strict", action="store_true", help="a CAPABILITY failure fails the check too (exit code 1)"
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, metavar="SECONDS", help="seconds each answer may take (10)"
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="seconds the agent has to answer initialize (30)",
    )
    parser.add_argument("--prompt", default=None, metavar="TEXT", help="a prompt the agent answers")
    parser.add_argument(
        "--busy-prompt", default=None, metavar="TEXT", help="a prompt that keeps it busy until cancelled"
    )
    parser.add_argument(
        "--permission-prompt", default=None, metavar="TEXT", help="a prompt under which it asks permission"
    )
    parser.add_argument(
        "--editors",
        default=None,
        metavar="NAMES",
        help="the editor profiles to check as, comma-separated (zed,jetbrains,codecompanion; none: skip)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Carry out ``acpio check``."""
    from dataclasses import replace

    from acpio.check import AgentNotFound, CheckOptions, as_json, as_junit, as_table, check_agent
    from acpio.profiles import PROFILE_NAMES

    options = CheckOptions(protocol=args.protocol, timeout=args.timeout, start_timeout=args.start_timeout)
    for name in ("prompt", "busy_prompt", "permission_prompt"):
        if getattr(args, name) is not None:
            options = replace(options, **{name: getattr(args, name)})
    if args.editors is not None:
        editors = tuple(e.strip() for e in args.editors.split(",") if e.strip() and e.strip() != "none")
        unknown = [e for e in editors if e not in PROFILE_NAMES]
        if unknown:
            raise CliError(
                f"--editors: no profile {', '.join(unknown)}; the profiles are {', '.join(PROFILE_NAMES)}"
            )
        options = replace(options, editors=editors)
    if args.timeout <= 0 or args.start_timeout <= 0:
        raise CliError("--timeout and --start-timeout take a number of seconds above 0")
    try:
        report = run_main(check_agent(tuple(args.agent), options))
    except AgentNotFound as exc:
        raise CliError(str(exc)) from None
    print(as_json(report, strict=args.strict) if args.json else as_table(report, strict=args.strict))
    if args.junit:
        try:
            Path(args.junit).write_text(as_junit(report, strict=args.strict) + "\n", encoding="utf-8")
        except OSError as exc:
            raise CliError(f"--junit {args.junit}: cannot write it ({exc.strerror})") from None
    return report.exit_code(strict=args.strict)
