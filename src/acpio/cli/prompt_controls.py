"""The ``acpio prompt`` flags for logging in and out, modes, config options and elicitation answers.

They live beside :mod:`acpio.cli.prompt` so that its own options stay short: :func:`add_arguments`
adds them, :func:`settings` turns them into the :class:`~acpio.oneshot.PromptOptions` fields, and
:func:`run` runs the prompt after a terminal login when ``--auth`` names one (or only logs out
with ``--logout``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from acpio.cli import CliError, run_main

if TYPE_CHECKING:
    from acpio.oneshot import PromptOptions
    from acpio.oneshot.controls import Controls
    from acpio.oneshot.elicitation import ElicitationSettings
    from acpio.transports import AgentCommand, Component

__all__ = ["add_arguments", "logout", "manage_sessions", "run", "settings"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the flags to ``acpio prompt``'s parser."""
    session = parser.add_argument_group("session choices, logging in and out")
    session.add_argument(
        "--auth",
        metavar="METHOD",
        help="log in with the agent's auth method METHOD first: an agent method is passed to "
        "authenticate; a terminal method runs the agent's command with the method's args and env in "
        "this terminal, waits for it to exit 0, then starts the agent again",
    )
    session.add_argument(
        "--logout",
        action="store_true",
        help="log out (the agent's logout method) and end; takes no prompt",
    )
    session.add_argument(
        "--list-sessions",
        action="store_true",
        help="list the agent's sessions in --cwd (session/list) and end; takes no prompt",
    )
    session.add_argument(
        "--close-session", metavar="ID", help="close session ID (session/close) and end; takes no prompt"
    )
    session.add_argument(
        "--delete-session", metavar="ID", help="delete session ID (session/delete) and end; takes no prompt"
    )
    session.add_argument("--mode", metavar="ID", help="switch the session to mode ID before the prompt")
    session.add_argument(
        "--option",
        metavar="ID=VALUE",
        action="append",
        default=[],
        help="set config option ID before the prompt: one of a select option's values, or true/false "
        "for a boolean option (repeatable)",
    )
    forms = parser.add_argument_group(
        "elicitation (the agent asks for input)",
        "On a terminal, acpio asks each field of a form and asks before opening a URL; these flags "
        "answer instead (without them, and without a terminal, elicitation is not advertised).",
    )
    add_form_answers(forms)
    forms.add_argument(
        "--urls",
        choices=("print", "open"),
        help="accept the agent's URL requests without asking: print the URL, or open it in the browser",
    )


class ArgumentAdder(Protocol):
    """A parser or an argument group: what flags are added to."""

    def add_argument(self, *names: str, **options: Any) -> argparse.Action:
        """Add one flag."""
        ...


def add_form_answers(forms: ArgumentAdder) -> None:
    """``--answer``, ``--answers`` and ``--decline-elicitations`` (``acpio prompt`` and ``acpio batch``).

    :func:`form_values` reads the values they give.
    """
    forms.add_argument(
        "--answer",
        metavar="NAME=VALUE",
        action="append",
        default=[],
        help="the value of form field NAME (repeatable); fields left out take their default, and a "
        "required one without a value cancels the form",
    )
    forms.add_argument(
        "--answers",
        metavar="FILE",
        help="form field values as a JSON object in FILE (--answer wins over it)",
    )
    forms.add_argument(
        "--decline-elicitations",
        action="store_true",
        help="decline every elicitation without asking",
    )


def form_values(args: argparse.Namespace) -> dict[str, Any]:
    """The form field values ``--answers`` and ``--answer`` give (the latter winning)."""
    import orjson

    from acpio.oneshot.elicitation import parse_answers

    values: dict[str, Any] = {}
    if args.answers:
        try:
            loaded = orjson.loads(Path(args.answers).read_bytes())
        except OSError as exc:
            raise CliError(f"--answers {args.answers}: {exc.strerror}") from exc
        except orjson.JSONDecodeError as exc:
            raise CliError(f"--answers {args.answers}: not JSON ({exc})") from exc
        if not isinstance(loaded, dict):
            raise CliError(f"--answers {args.answers}: the file must hold a JSON object of field values")
        values.update(loaded)
    try:
        values.update(parse_answers(args.answer))
    except ValueError as exc:
        raise CliError(f"--answer: {exc}") from exc
    return values


def settings(
    args: argparse.Namespace, agent: AgentCommand | Component, *, interactive: bool
) -> tuple[ElicitationSettings, Controls]:
    """The elicitation settings and the session controls the flags ask for.

    ``interactive``: a person at a terminal can be asked (stdin is a terminal).
    """
    from acpio.oneshot.controls import Controls
    from acpio.oneshot.elicitation import ElicitationSettings
    from acpio.transports import AgentCommand

    values = form_values(args)
    options: list[tuple[str, str]] = []
    for pair in args.option:
        option_id, sep, value = pair.partition("=")
        if not sep or not option_id:
            raise CliError(f"--option {pair}: give ID=VALUE, as in --option model=fast")
        options.append((option_id, value))
    decline = bool(args.decline_elicitations)
    elicitation = ElicitationSettings(
        values=values, decline=decline, urls=args.urls, ask=interactive and not decline and not values
    )
    # a terminal login reruns the agent's command: not possible for a remote agent (a URL)
    is_command = isinstance(agent, AgentCommand)
    controls = Controls(
        mode=args.mode,
        options=tuple(options),
        auth_method=args.auth,
        terminal_auth=is_command,
    )
    return elicitation, controls


async def _prompt(options: PromptOptions) -> int:
    from acpio.oneshot import ExitCode, PromptFailed, run_prompt
    from acpio.oneshot.auth import LoginFailed, prepare_login
    from acpio.oneshot.controls import client_capabilities
    from acpio.transports import AgentCommand

    auth = options.controls.auth_method
    if auth is not None and isinstance(options.agent, AgentCommand):
        capabilities = client_capabilities(options.elicitation, terminal_auth=options.controls.terminal_auth)
        try:
            await prepare_login(options.agent, auth, capabilities, _note)
        except LoginFailed as exc:
            raise PromptFailed(str(exc), ExitCode.AGENT_ERROR) from exc
    return await run_prompt(options)


def _note(text: str) -> None:
    sys.stderr.write(f"acpio: {text}\n")
    sys.stderr.flush()


def run(options: PromptOptions) -> int:
    """Run the prompt (after a terminal login for ``--auth``); ``CliError`` with the exit code on failure."""
    from acpio.errors import AcpError
    from acpio.oneshot import PromptFailed

    try:
        return run_main(_prompt(options))
    except PromptFailed as exc:
        raise CliError(exc.message, code=exc.exit_code) from exc
    except AcpError as exc:  # the login's connection failed (the agent did not start, or exited)
        raise CliError(f"logging in failed: {exc}", code=3) from exc


def logout(args: argparse.Namespace, agent: AgentCommand | Component) -> int:
    """``--logout``: log out and end (exit 0); ``CliError`` when the agent cannot."""
    from acpio.errors import AcpError
    from acpio.oneshot.auth import LoginFailed
    from acpio.oneshot.auth import logout as log_out
    from acpio.oneshot.controls import client_capabilities
    from acpio.transports import AgentCommand

    if args.text:
        raise CliError("--logout takes no prompt: log out in a run of its own")
    if not isinstance(agent, AgentCommand):
        raise CliError("--logout needs an agent command (not a URL)")
    try:
        run_main(log_out(agent, client_capabilities(), _note))
    except LoginFailed as exc:
        raise CliError(str(exc), code=4) from exc
    except AcpError as exc:
        raise CliError(f"logging out failed: {exc}", code=3) from exc
    return 0


def manage_sessions(args: argparse.Namespace, agent: AgentCommand | Component, cwd: Path) -> int | None:
    """``--list-sessions``, ``--close-session ID``, ``--delete-session ID``: do it and end (exit 0).

    ``None`` when none of them was given. ``CliError`` when the agent does not offer the method or
    refuses it.
    """
    from acpio.errors import AcpError
    from acpio.oneshot.sessions import SessionCommandFailed, close_session, delete_session, list_sessions

    if not (args.list_sessions or args.close_session or args.delete_session):
        return None
    if args.text:
        raise CliError("--list-sessions, --close-session and --delete-session take no prompt")
    try:
        if args.list_sessions:
            for line in run_main(list_sessions(agent, cwd)):
                print(line)
        elif args.close_session:
            run_main(close_session(agent, args.close_session))
            _note(f"closed session {args.close_session}")
        else:
            run_main(delete_session(agent, args.delete_session))
            _note(f"deleted session {args.delete_session}")
    except SessionCommandFailed as exc:
        raise CliError(str(exc), code=4) from exc
    except AcpError as exc:
        raise CliError(f"the agent failed: {exc}", code=3) from exc
    return 0
