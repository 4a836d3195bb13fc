"""``acpio prompt``: send one prompt to an agent and show the turn as it happens.

::

    acpio prompt --agent "acpio testy" "Hello there"
    acpio prompt --agent "npx @zed-industries/claude-code-acp" --cwd ~/project --allow "Fix the failing test"
    acpio prompt --agent "acpio testy" --session testy-1 "And now?"
    echo "Summarise README.md" | acpio prompt --agent "..." --json -

See ``docs/prompt.md`` for what is shown, what the agent may do, and the exit codes.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from acpio.cli import prompt_controls
from acpio.profiles.profile import PROFILE_NAMES, load_profile

if TYPE_CHECKING:
    from acpio.cli import Subcommands
    from acpio.session import ProtocolChoice

__all__ = ["register"]

_DESCRIPTION = """\
Start an ACP agent, open a session (or continue one with --session), send one prompt and show the
turn as it happens: the agent's text streamed, thoughts set apart, tool calls with their status,
plans as checklists, diffs, then the stop reason. The agent's file reads and writes are served
inside --cwd only, its terminal commands run as real processes, and its permission requests are
answered by --allow, --deny or --ask. Ctrl-C cancels the turn; a second Ctrl-C stops at once.
SIGTERM, SIGHUP or the exit of the parent process end the agent and its commands, then acpio.
ACP v2 is negotiated (--protocol): a v2 agent's turn shows its state, agent-owned terminals and
structured diffs.
With -i, a conversation: after each turn acpio asks for the next prompt (:help lists its own
commands, such as :mode and :option; :quit or Ctrl-D leaves).

exit codes: 0 end_turn; 2 usage mistake; 3 the agent could not start, did not answer initialize in
time, or exited; 4 the agent answered with an error (with -i: any turn, and the conversation goes
on); 5 the turn stopped for another reason (max_tokens, max_turn_requests, refusal); 129 SIGHUP or
the parent exited; 130 cancelled; 143 SIGTERM."""


def register(subparsers: Subcommands) -> None:
    """Add the ``prompt`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "prompt",
        help="send one prompt to an agent and show the turn",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "text",
        nargs="*",
        metavar="TEXT",
        help="the prompt (several words are joined with spaces); '-' reads it from stdin",
    )
    parser.add_argument(
        "--agent",
        metavar="CMD",
        default=os.environ.get("ACPIO_AGENT"),
        help="the agent command: shell words ('npx my-agent --flag', leading NAME=value words set "
        'variables), JSON ({"command": ..., "args": [...], "env": {...}}), or the URL of a remote agent '
        "(ws://, wss://, http://, https://; $ACPIO_TOKEN is sent as its bearer token); default: $ACPIO_AGENT",
    )
    parser.add_argument(
        "--cwd",
        metavar="DIR",
        default=".",
        help="the session's working directory; the agent may read and write files only inside it "
        "(default: the current directory)",
    )
    parser.add_argument(
        "--session", metavar="ID", help="continue this session (session/load, or session/resume)"
    )
    parser.add_argument(
        "--attach",
        metavar="ID",
        help="(unstable) watch session ID, which another client runs on the remote --agent, instead of "
        "prompting: its history, then each turn live, until it closes. The agent must be an AgentApp "
        "with unstable=True served by `acpio serve --app` (see docs/remote.md)",
    )
    parser.add_argument(
        "--control",
        action="store_true",
        help="(unstable) with --attach: take part as a controller. Permission requests are answered by "
        "--allow or --deny (without either, the other clients answer them: the first answer wins); with "
        "TEXT, send it as a prompt once no turn runs and leave after its turn",
    )
    parser.add_argument(
        "--init-timeout",
        metavar="SECONDS",
        type=_seconds,
        default=None,
        help="how long the agent has to answer initialize before acpio gives up (exit code 3); "
        "0 waits forever (default: 30)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show the agent's stderr as it comes (dimmed), its extension notifications, and acpio's "
        "informational log",
    )
    policy = parser.add_mutually_exclusive_group()
    policy.add_argument(
        "--allow",
        dest="permissions",
        action="store_const",
        const="allow",
        help="grant every permission request",
    )
    policy.add_argument(
        "--deny",
        dest="permissions",
        action="store_const",
        const="deny",
        help="refuse every permission request",
    )
    policy.add_argument(
        "--ask",
        dest="permissions",
        action="store_const",
        const="ask",
        help="ask on the terminal (the default when stdin is a terminal; otherwise --deny is)",
    )
    policy.add_argument(
        "--policy",
        metavar="FILE",
        help="answer permission requests and the agent's commands by the rules of the TOML policy FILE "
        "(see examples/policy.toml); what it asks goes to the terminal when stdin is one, else is refused",
    )
    parser.add_argument(
        "--allow-env",
        metavar="NAME",
        action="append",
        default=[],
        help="with --allow, let the agent's commands set NAME, one of the variables that decide which "
        "program runs or what it loads (PATH, LD_PRELOAD, PYTHONPATH...), which --allow alone refuses "
        "(repeatable)",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument(
        "--json",
        action="store_true",
        help="print every ACP message of the connection as a JSON line instead of the rendered turn",
    )
    output.add_argument(
        "--color",
        dest="color",
        action="store_true",
        default=None,
        help="colours and in-place updates even when stdout is not a terminal",
    )
    output.add_argument(
        "--no-color",
        dest="color",
        action="store_false",
        help="plain text even on a terminal (also: the NO_COLOR environment variable)",
    )
    parser.add_argument(
        "-i",
        "--interactive",
        action="store_true",
        help="a conversation: after the turn, ask for the next prompt (Tab completes the agent's "
        "/commands; :mode, :option, :help; Ctrl-C cancels a turn; :quit or Ctrl-D leaves); the TEXT "
        "is then optional",
    )
    parser.add_argument(
        "--proxy",
        metavar="CMD",
        action="append",
        default=[],
        help="run this ACP proxy in front of the agent (repeatable: the first is nearest to acpio), "
        "through a conductor; shell words, JSON or a URL as for --agent",
    )
    parser.add_argument(
        "--protocol",
        choices=("1", "2", "negotiate"),
        default="negotiate",
        help="the ACP version to speak: negotiate (offer v2, fall back to v1 on the same connection), "
        "1 or 2 (an agent answering another version is an error); default: negotiate",
    )
    parser.add_argument(
        "--as",
        dest="editor",
        choices=PROFILE_NAMES,
        help="act as this editor (acpio.profiles): advertise its capabilities and clientInfo, drop what it "
        "drops (Zed: a session/update before the session/new answer) and warn of what it would not take; "
        "speaks ACP v1",
    )
    parser.add_argument(
        "--trace",
        metavar="FILE",
        help="write a trace of every message between acpio, the proxies and the agent to FILE "
        "(view it with `acpio trace view FILE`)",
    )
    parser.add_argument(
        "--record",
        metavar="FILE",
        help="record the conversation with the agent to FILE as a cassette, API keys, tokens and local "
        "paths redacted (replay it with `acpio replay FILE`; see docs/testing-clients.md)",
    )
    parser.add_argument(
        "--mcp",
        metavar="NAME=SPEC",
        action="append",
        default=[],
        help="offer the agent an MCP server (repeatable): NAME=https://... (HTTP), NAME=python:FILE.py:ATTR "
        "(an mcp package server that acpio serves over ACP; needs acpio[mcp]), or NAME=COMMAND (stdio)",
    )
    parser.add_argument(
        "--add-dir",
        metavar="DIR",
        action="append",
        default=[],
        help="another directory the session may use besides --cwd (repeatable): sent as "
        "additionalDirectories, and the agent may read and write files there too",
    )
    prompt_controls.add_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Carry out ``acpio prompt``."""
    from pathlib import Path

    from acpio.cli import CliError
    from acpio.oneshot import PolicyName, PromptOptions
    from acpio.oneshot.options import DEFAULT_INIT_TIMEOUT
    from acpio.transports import AgentCommand

    if not args.agent:
        raise CliError(
            "no agent: give its command with --agent CMD (or set ACPIO_AGENT), as in "
            "`acpio prompt --agent 'python my_agent.py' \"Hello\"`; the other words are the prompt"
        )
    agent: Any
    if args.agent.split("://", 1)[0].lower() in {"http", "https", "ws", "wss"}:
        try:
            from acpio.remote import RemoteAgent
        except ImportError as exc:
            raise CliError(
                f"--agent {args.agent}: needs the remote extra: pip install 'acpio[remote]'"
            ) from exc
        agent = RemoteAgent(args.agent, token=os.environ.get("ACPIO_TOKEN"))
    else:
        try:
            agent = AgentCommand.from_string(args.agent)
        except ValueError as exc:
            raise CliError(f"--agent: {exc}") from exc
    if args.editor and args.protocol == "2":
        raise CliError(f"--as {args.editor}: the editor speaks ACP v1; leave out --protocol 2")
    if args.attach:
        return _observe(args, agent)
    if args.control:
        raise CliError("--control takes part in another client's session: give it with --attach ID")
    cwd = Path(args.cwd).expanduser()
    if not cwd.is_dir():
        raise CliError(f"--cwd {args.cwd}: no such directory")
    proxies = tuple(_component("--proxy", text) for text in args.proxy)
    added = tuple(Path(directory).expanduser().resolve() for directory in args.add_dir)
    for directory, given in zip(added, args.add_dir, strict=True):
        if not directory.is_dir():
            raise CliError(f"--add-dir {given}: no such directory")
    trace = Path(args.trace).expanduser() if args.trace else None
    allow_env = _allowed_variables(args.allow_env)
    mcp_servers = []
    for spec in args.mcp:
        from acpio.oneshot.mcp_servers import parse_mcp

        try:
            mcp_servers.append(parse_mcp(spec))
        except ValueError as exc:
            raise CliError(f"--mcp: {exc}") from exc
    if trace is not None and not trace.parent.is_dir():
        raise CliError(f"--trace {args.trace}: no such directory {trace.parent}")
    record = Path(args.record).expanduser() if args.record else None
    if record is not None and not record.parent.is_dir():
        raise CliError(f"--record {args.record}: no such directory {record.parent}")
    if args.logout:
        return prompt_controls.logout(args, agent)
    managed = prompt_controls.manage_sessions(args, agent, cwd.resolve())
    if managed is not None:
        return managed
    from_stdin = args.text == ["-"]
    if from_stdin and args.interactive:
        raise CliError("-i reads the prompts from the terminal: give the first one as TEXT, not '-'")
    text = sys.stdin.read() if from_stdin else " ".join(args.text)
    if not text.strip() and not args.interactive:
        raise CliError("no prompt: give its text after the options, or '-' to read it from stdin")
    permissions: PolicyName = args.permissions or ("ask" if not from_stdin and sys.stdin.isatty() else "deny")
    policy_file = Path(args.policy).expanduser() if args.policy else None
    if policy_file is not None and not policy_file.is_file():
        raise CliError(f"--policy {args.policy}: no such file; write one as examples/policy.toml shows")
    elicitation, controls = prompt_controls.settings(
        args, agent, interactive=not from_stdin and sys.stdin.isatty()
    )
    options = PromptOptions(
        elicitation=elicitation,
        controls=controls,
        agent=agent,
        prompt=text,
        cwd=cwd.resolve(),
        session_id=args.session,
        permissions=permissions,
        policy=policy_file,
        allow_env=allow_env,
        output=_output_mode(args),
        answers_from_terminal=from_stdin,
        init_timeout=DEFAULT_INIT_TIMEOUT if args.init_timeout is None else args.init_timeout,
        verbose=args.verbose,
        proxies=proxies,
        trace=trace,
        record=record,
        add_dirs=added,
        interactive=args.interactive,
        mcp_servers=tuple(mcp_servers),
        protocol=1 if args.editor else _protocol(args.protocol),
        editor=load_profile(args.editor) if args.editor else None,
    )
    return prompt_controls.run(options)


def _protocol(text: str) -> ProtocolChoice:
    """``--protocol``'s value (argparse checked it is one of the choices)."""
    return "negotiate" if text == "negotiate" else 2 if text == "2" else 1


def _observe(args: argparse.Namespace, agent: Any) -> int:
    """``--attach ID``: watch a session of a remote agent, or take part in it (``--control``)."""
    from acpio.cli import CliError, run_main

    if args.session or args.interactive or (args.text and not args.control):
        raise CliError(
            "--attach watches another client's session: give no prompt (but with --control), --session "
            "nor -i with it"
        )
    if not args.agent.lower().startswith(("ws://", "wss://", "http://", "https://")):
        raise CliError(
            "--attach needs the URL of the remote agent running the session (--agent ws://HOST:PORT): "
            "a command would start an agent of its own, without that session"
        )
    if args.permissions not in (None, "allow", "deny"):
        raise CliError(
            "--attach --control answers permission requests with --allow or --deny, or leaves them"
        )
    import httpx

    from acpio.oneshot.observe import observe
    from acpio.remote import RemoteAgent

    def reroute(cookies: dict[str, str]) -> Any:
        return RemoteAgent(args.agent, token=os.environ.get("ACPIO_TOKEN"), cookies=httpx.Cookies(cookies))

    text = " ".join(args.text) or None
    try:
        return run_main(
            observe(
                agent,
                args.attach,
                control=args.control,
                prompt=text,
                permissions=args.permissions,
                reroute=reroute,
            )
        )
    except KeyboardInterrupt:
        return 130


def _component(option: str, text: str) -> Any:
    """A proxy's command (or URL) as given to ``option``; a mistake is a usage error."""
    from acpio.cli import CliError
    from acpio.transports import AgentCommand

    if text.split("://", 1)[0].lower() in {"http", "https", "ws", "wss"}:
        try:
            from acpio.remote import RemoteAgent
        except ImportError as exc:
            raise CliError(f"{option} {text}: needs the remote extra: pip install 'acpio[remote]'") from exc
        return RemoteAgent(text, token=os.environ.get("ACPIO_TOKEN"))
    try:
        return AgentCommand.from_string(text)
    except ValueError as exc:
        raise CliError(f"{option}: {exc}") from exc


def _allowed_variables(names: list[str]) -> frozenset[str]:
    """The ``--allow-env`` names; one that needs no consent is a usage mistake (a typo, say)."""
    from acpio.cli import CliError
    from acpio.oneshot.terminals import is_risky

    for name in names:
        if not is_risky(name):
            raise CliError(
                f"--allow-env {name}: the agent's commands may set {name} without it; only the variables "
                "that decide which program runs or what it loads need it (PATH, LD_*, PYTHONPATH... "
                "listed in docs/security.md), and their names are case-sensitive"
            )
    return frozenset(names)


def _seconds(text: str) -> float:
    """A number of seconds, 0 or more; anything else is a usage mistake (exit code 2)."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not seconds >= 0 or seconds == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a number of seconds, 0 or more: {text!r}")
    return seconds


def _output_mode(args: argparse.Namespace) -> Any:
    if args.json:
        return "json"
    if args.color is not None:
        return "rich" if args.color else "plain"
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return "plain"
    return "rich" if sys.stdout.isatty() else "plain"
