"""The ``acpio`` command: one module per subcommand, listed in ``_COMMANDS``.

Each subcommand lives in its own module with two functions: ``register(subparsers)`` adds its parser, and the
parser's ``run`` default (``run(args) -> int``) carries it out. Modules import their heavy dependencies inside
``run`` so that ``acpio --help`` stays fast.

A user mistake raises :class:`CliError`; :func:`main` prints it as one line on stderr and exits
non-zero, never with a traceback.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import sys
from collections.abc import Coroutine, Iterable, Sequence
from typing import Any, TypeAlias, TypeVar

__all__ = ["CliError", "main", "note_if_terminal", "run_main"]

_T = TypeVar("_T")

# Subcommand modules, in the order ``acpio --help`` lists them.
_COMMANDS = (
    "testy",
    "agent",
    "prompt",
    "batch",
    "check",
    "inspect",
    "dev",
    "replay",
    "conductor",
    "proxy",
    "serve",
    "trace",
)

#: Exit code for a usage or input mistake (argparse uses the same).
USAGE_EXIT = 2

#: What each subcommand's ``register`` is given: the ``acpio`` parser's collection of subcommands.
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # private-ok: add_subparsers()


class CliError(Exception):
    """A mistake the user can fix: printed as ``acpio: error: <message>`` and exit code ``code``."""

    def __init__(self, message: str, *, code: int = USAGE_EXIT) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def run_main(main: Coroutine[object, object, _T]) -> _T:
    """Run a subcommand's main with :func:`acpio.run` (uvloop when installed), imported only now.

    A wrong ``ACPIO_EVENT_LOOP`` is a :class:`CliError`, one line, not a traceback.
    """
    from acpio.running import EventLoopError, run

    try:
        return run(main)
    except EventLoopError as error:
        raise CliError(str(error)) from None


def note_if_terminal(command: str) -> None:
    """Tell someone who started an ACP endpoint by hand, in a terminal, what it waits for."""
    if sys.stdin.isatty():
        print(
            f"{command} speaks ACP (JSON-RPC, one message per line) on stdin and stdout: start it from an "
            "ACP client, for example `acpio prompt`. Waiting for input; Ctrl-D ends it.",
            file=sys.stderr,
        )


class _VersionAction(argparse.Action):
    """``--version``: the acpio version and the schema its models were generated from.

    The method table is imported only when the flag is given, so other commands do not pay for it.
    """

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        from acpio import __version__
        from acpio.schema.methods import SCHEMA_SOURCE

        print(f"acpio {__version__}\n{SCHEMA_SOURCE}")
        parser.exit()


class _Parser(argparse.ArgumentParser):
    """A parser that refuses the options it does not know itself, with its own usage and a suggestion.

    argparse hands what a subcommand does not know up to the top-level parser, which then prints
    ``acpio``'s usage: a user who mistyped an option of ``acpio prompt`` would see neither the
    options of ``acpio prompt`` nor the one meant. Every parser of the command is of this class
    (subparsers take their parent's), so the innermost one that parsed the word refuses it.
    """

    def parse_known_args(  # the namespace's type is the caller's: argparse's overloads take any
        self, args: Iterable[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        """Parse ``args``; a word it does not know is a usage mistake (exit code 2), with a suggestion."""
        parsed, unknown = super().parse_known_args(args, namespace)
        if unknown:
            self.error("unrecognized arguments: " + " ".join(self._suggest(word) for word in unknown))
        return parsed, unknown

    def _suggest(self, word: str) -> str:
        if not word.startswith("-"):
            return word
        known = list(self._option_string_actions)  # private-ok: argparse lists its options only there
        close = difflib.get_close_matches(word.partition("=")[0], known, n=1)
        return f"{word} (did you mean {close[0]}?)" if close else word


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser, with one subparser per subcommand."""
    parser = _Parser(
        prog="acpio",
        description="Tools for the Agent Client Protocol: a test agent, a one-shot client, a conductor "
        "for proxy chains, a trace viewer and an inspector.",
    )
    parser.add_argument(
        "--version", action=_VersionAction, help="print the acpio version and the ACP schema it follows"
    )
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for name in _COMMANDS:
        module = importlib.import_module(f"acpio.cli.{name}")
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``acpio`` command with ``argv`` (default: ``sys.argv[1:]``) and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.run(args)
    except CliError as error:
        print(f"acpio: error: {error.message}", file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader of our stdout went away (``acpio prompt ... | head``): not an error worth a traceback.
        return 1
    return code
