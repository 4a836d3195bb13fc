"""``acpio batch``: run the prompts of a JSON lines file over a pool of agent processes.

Each prompt runs in a session of its own, on one of ``--size`` warm processes, under the pool's
watchdog (``--timeout``, ``--grace``). One JSON line per result goes to stdout (or ``--output``)
as each turn ends, so in completion order, each with its prompt's ``id``; progress, and every step
the pool takes on its own (a process killed, replaced, a session resumed), go to stderr.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, TextIO

from acpio.cli import CliError, run_main
from acpio.cli.prompt_controls import add_form_answers, form_values

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from acpio.cli import Subcommands
    from acpio.client import RulePolicy
    from acpio.pool import PoolEvent, SupervisedTurn
    from acpio.pool.batch import BatchPrompt

__all__ = ["register", "run"]

_EPILOG = """\
prompts file (JSON lines, one prompt per line; blank lines skipped):
  {"prompt": "Summarize README.md", "id": "readme", "cwd": "/work/project"}
  {"prompt": "List the TODOs"}
  prompt is required; id (text or a number) defaults to the line number; cwd is the session's
  directory (default: --cwd). Every line is checked before anything runs.

output (JSON lines, one per prompt, in the order the turns end):
  {"id": "readme", "ok": true, "stop_reason": "end_turn", "text": "...", "tool_calls": [...],
   "events": [...], "error": null, "stderr_tail": null, "duration": 1.2, "slot": 0, ...}
  events lists what the pool did for the turn: TurnTimedOut, CancelSent, CancelHonoured,
  TurnAbandoned, ProcessKilled, ProcessDied, ProcessStarted, SessionResumed, SessionLost.

exit status: 0 if every turn ended end_turn without error, 1 otherwise, 2 for a usage mistake.

example:
  acpio batch --agent "acpio testy" --size 4 --timeout 60 --allow prompts.jsonl > results.jsonl
  acpio batch --agent "acpio testy" --policy examples/policy.toml prompts.jsonl"""


def register(subparsers: Subcommands) -> None:
    """Add the ``batch`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "batch",
        help="run many prompts over a pool of agent processes, JSON lines of results out",
        description=__doc__.split("\n\n")[1].replace("``", "") if __doc__ else None,
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("prompts", metavar="FILE", help="the prompts, as JSON lines ('-': stdin)")
    parser.add_argument(
        "--agent",
        metavar="CMD",
        default=os.environ.get("ACPIO_AGENT"),
        help="the agent command, in shell words or JSON as for acpio prompt (default: $ACPIO_AGENT)",
    )
    parser.add_argument("--size", type=_count, default=4, help="agent processes (default: 4)")
    parser.add_argument(
        "--sessions-per-process",
        type=_count,
        default=1,
        metavar="N",
        help="sessions each process runs at once (default: 1)",
    )
    parser.add_argument(
        "--timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="how long a turn may run before it is cancelled (default: no limit)",
    )
    parser.add_argument(
        "--grace",
        type=_seconds,
        default=2.0,
        metavar="SECONDS",
        help="how long an agent has to end a cancelled turn before its process is killed, replaced "
        "and the session resumed (default: 2)",
    )
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        default=".",
        help="the sessions' directory when a prompt names none; the agent may read and write files "
        "only inside it (default: the current directory)",
    )
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument(
        "--allow", dest="permissions", action="store_const", const="allow", help="grant every permission"
    )
    policy.add_argument(
        "--deny",
        dest="permissions",
        action="store_const",
        const="deny",
        help="refuse every permission request (the default)",
    )
    policy.add_argument(
        "--policy",
        metavar="FILE",
        help="answer permission requests and the agent's commands by the rules of the TOML policy FILE "
        "(see examples/policy.toml); what it would ask about is refused (no one to ask)",
    )
    add_form_answers(
        parser.add_argument_group(
            "forms (the agent asks for input)",
            "Without these flags forms are not advertised; with them, every form is answered from the "
            "values given and the fields' defaults (URL elicitations are never advertised).",
        )
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the results there, not to stdout")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    parser.set_defaults(run=run, permissions="deny")


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number, 1 or more, not {text!r}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of seconds, 0 or more, not {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    """Read the prompts, run them, write the results; the exit status."""
    from acpio.pool.batch import PromptFileError, read_prompts

    if not args.agent:
        raise CliError("no agent: give --agent CMD (or set ACPIO_AGENT)")
    if not os.path.isdir(args.cwd):
        raise CliError(f"--cwd {args.cwd!r} is not a directory")
    try:
        if args.prompts == "-":
            prompts = read_prompts(sys.stdin)
        else:
            with open(args.prompts, encoding="utf-8") as file:
                prompts = read_prompts(file)
    except OSError as exc:
        raise CliError(f"cannot read the prompts file {args.prompts!r}: {exc.strerror or exc}") from None
    except PromptFileError as exc:
        raise CliError(f"{args.prompts}: {exc}") from None
    if not prompts:
        raise CliError(f"{args.prompts}: no prompts in it")
    if args.policy is not None:
        args.permissions = _load_policy(args.policy)
    values = form_values(args)
    args.forms = "decline" if args.decline_elicitations else (values or None)
    try:
        output = sys.stdout if args.output is None else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:
        raise CliError(f"cannot write the results to {args.output!r}: {exc.strerror or exc}") from None
    try:
        return run_main(_batch(args, prompts, output))
    finally:
        if output is not sys.stdout:
            output.close()


def _load_policy(path: str) -> RulePolicy:
    from acpio.client import PolicyFileError, load_policy

    try:
        return load_policy(os.path.expanduser(path))
    except PolicyFileError as exc:
        raise CliError(f"--policy: {exc}") from None


async def _batch(args: argparse.Namespace, prompts: list[BatchPrompt], output: TextIO) -> int:
    from acpio.errors import AcpError
    from acpio.pool import AgentPool
    from acpio.pool.batch import run_prompts

    progress = _Progress(len(prompts), quiet=args.quiet)
    failed = 0
    try:
        async with AgentPool(
            args.agent,
            size=args.size,
            sessions_per_process=args.sessions_per_process,
            turn_timeout=args.timeout or None,
            cancel_grace=args.grace,
            permissions=args.permissions,
            forms=args.forms,
            cwd=args.cwd,
            on_event=progress.event,
        ) as pool:
            progress.start()
            async for result in run_prompts(pool, prompts):
                data = result.to_dict()
                data = {"id": data.pop("prompt_id"), **data}
                output.write(_json(data) + "\n")
                output.flush()
                failed += not result.ok
                progress.done(result)
    except AcpError as exc:
        raise CliError(f"the pool could not run: {exc}", code=1) from None
    finally:
        progress.stop()
    progress.finish(failed)
    return 1 if failed else 0


def _json(data: dict[str, object]) -> str:
    import json

    return json.dumps(data, ensure_ascii=False, separators=(",", ":"), default=str)


class _Progress:
    """Progress on stderr: a bar on a terminal, else a line per prompt; a line per step the pool took.

    ``--quiet``: nothing.
    """

    def __init__(self, total: int, *, quiet: bool) -> None:
        self._total = total
        self._quiet = quiet
        self._finished = 0
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def start(self) -> None:
        """The pool is up: show the bar (on a terminal)."""
        if self._quiet or not sys.stderr.isatty():
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._bar = Progress(
            TextColumn("acpio batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._bar.add_task("prompts", total=self._total)
        self._bar.start()

    def stop(self) -> None:
        """Remove the bar."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None

    def _say(self, text: str) -> None:
        if self._quiet:
            return
        if self._bar is not None:
            self._bar.console.print(f"acpio batch: {text}", markup=False, highlight=False)
        else:
            print(f"acpio batch: {text}", file=sys.stderr, flush=True)

    def event(self, event: PoolEvent) -> None:
        """A step the pool took (a process started is said only when it replaces one)."""
        from acpio.pool import ProcessStarted

        if isinstance(event, ProcessStarted) and not event.respawn:
            return
        fields = ", ".join(f"{k}={v!r}" for k, v in _fields(event).items() if k != "stderr_tail")
        self._say(f"{type(event).__name__}({fields})")

    def done(self, result: SupervisedTurn) -> None:
        """One prompt finished."""
        self._finished += 1
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task)
            if result.ok:
                return
        outcome = result.stop_reason if result.error is None else f"failed: {result.error.splitlines()[0]}"
        self._say(f"[{self._finished}/{self._total}] {result.prompt_id}: {outcome} ({result.duration:.1f} s)")

    def finish(self, failed: int) -> None:
        """All done."""
        self._say(f"{self._total} prompts, {self._total - failed} ok, {failed} not ok")


def _fields(event: PoolEvent) -> dict[str, object]:
    import dataclasses

    return {field.name: getattr(event, field.name) for field in dataclasses.fields(event)}
