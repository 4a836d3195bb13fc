"""``acpio testy``: the deterministic test agent, on stdin and stdout.

The flags turn capabilities off (everything is advertised by default) or, with ``--auth``, require
authentication. ``--help`` documents the whole prompt language; its text is built from the
command table of :mod:`acpio.agents.testy.script`, which imports no protocol models, so
``acpio --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from acpio.agents.testy.script import MODES, STOP_REASONS, command_table
from acpio.cli import CliError, note_if_terminal, run_main

if TYPE_CHECKING:
    from acpio.cli import Subcommands

__all__ = ["register", "run"]

#: ``(flag, TestyOptions field, what is no longer advertised)``, in the order ``--help`` lists them.
_CAPABILITY_FLAGS: tuple[tuple[str, str, str], ...] = (
    ("--no-load-session", "load_session", "loadSession (session/load then answers -32601)"),
    ("--no-session-list", "session_list", "sessionCapabilities.list (session/list: -32601)"),
    ("--no-session-resume", "session_resume", "sessionCapabilities.resume (session/resume: -32601)"),
    ("--no-session-close", "session_close", "sessionCapabilities.close (session/close: -32601)"),
    ("--no-session-delete", "session_delete", "sessionCapabilities.delete (session/delete: -32601)"),
    ("--no-image", "prompt_image", "promptCapabilities.image (image blocks in a prompt: -32602)"),
    ("--no-audio", "prompt_audio", "promptCapabilities.audio (audio blocks in a prompt: -32602)"),
    (
        "--no-embedded-context",
        "prompt_embedded_context",
        "promptCapabilities.embeddedContext (embedded resources in a prompt: -32602)",
    ),
    ("--no-mcp-http", "mcp_http", "mcpCapabilities.http (HTTP MCP servers in session setup: -32602)"),
)

_DESCRIPTION = """\
A deterministic ACP agent (v1; v2 or both with --protocol) for testing clients, proxies and
conductors. It speaks ACP on stdin and stdout (nothing else is ever written to stdout; logs go to
stderr) and does exactly what its prompts say, written in the small command language below.
Sessions live in memory for the life of the process, or with --store in a session store that
outlives it."""


def _language() -> str:
    return f"""\
prompt language:
  The prompt's text blocks are joined with newlines. If the first line that is neither blank nor a
  comment starts with a command word (or /word, as a slash command), the prompt is a script: each
  non-blank line is one command, run in order, and lines starting with # are comments. Any other
  prompt is echoed back as agent message chunks, one per word (spaces kept), ending with end_turn.

{command_table()}

  Paths are one word, or quoted with " or '; relative paths are resolved against the session's cwd,
  and fs and terminal requests carry absolute paths. In write's TEXT, \\n is a newline, \\t a tab and
  \\\\ a backslash. run splits its line into shell words. Reports (permission, run, errors) are
  message chunks ending with a newline.
  Modes: {", ".join(MODES)}. Stop reasons: {", ".join(STOP_REASONS)}.

  A script is checked before it runs: if any line is wrong (an unknown word, `progress x`,
  `fail abc`, `sleep -1`...), nothing runs and the answer is one agent message listing each bad
  line with what is wrong, then end_turn. read, write and run need the client to advertise
  fs.readTextFile, fs.writeTextFile and terminal; a client request that fails (or is not
  advertised) is reported in the tool call, which ends failed, and the script goes on.
  permission stops the script (end_turn, after "Permission denied: stopping.") unless the client
  picks allow-once or allow-always.

cancellation:
  session/cancel (or $/cancel_request for the prompt, or session/close or session/delete of the
  session) stops the running turn at its next step, at once while it sleeps or waits on the client
  (that request is abandoned with $/cancel_request), and the prompt is answered with stop reason
  cancelled.

sessions:
  session/new gives ids testy-1, testy-2...; modes chat (current) and plan; a select config option
  verbosity (brief: help lists only the words; normal; verbose: a thought chunk announces each
  command); to clients that advertise session.configOptions.boolean, a boolean option shout
  (messages in upper case). notice, compact and elicit/elicit-url send their updates and requests
  only to clients that advertise session.notices, session.compaction and elicitation.form/url.
  session/load replays the history (user and agent message chunks) before answering;
  session/list (cwd filter, newest first, one page), session/resume, session/close (the session
  stays listed and can be loaded again), session/delete, session/set_mode and
  session/set_config_option work on the sessions of the store (--store; in memory by default).
  An unknown session id gets -32602 (session/delete of an unknown id succeeds, as the spec asks).

ACP v2 (--protocol 2, or both):
  session/prompt answers {{messageId}} at once; the turn then sends user_message, state_update running,
  its updates (every chunk with its messageId, tool calls as tool_call_update upserts) and
  state_update idle with the stop reason (cancelled after session/cancel, after everything else).
  read, write and run do the work in testy's process (v2 has no client fs or terminals): write shows
  a diff as changes plus a git patch, run an agent terminal (terminal_update, terminal_output_chunk;
  terminal/cancel kills it); permission asks with a title and a tool_call subject, the turn
  requires_action meanwhile; plan sends plan_update. v2 only: work SECONDS TITLE (tool_call/cancel
  cancels it), background SECONDS TEXT (a message while idle), replace TEXT (an agent_message
  upsert). v1 only: mode, mcp, notice, compact, elicit, elicit-url. A script with fail is refused
  before it is accepted. session/resume with replayFrom {{"type": "start"}} replays the history.
  The v2 commands:

{command_table(version=2)}

a script (one prompt):
  # comments and blank lines are skipped
  plan read the notes; rewrite them
  read notes.txt
  progress 1
  write notes.txt first line\\nsecond line
  permission Rewrite notes.txt?
  run git diff --stat
  echo all done

usage examples:
  acpio testy
  acpio testy --auth --no-load-session
  acpio testy --terminal-auth /tmp/testy-login.json   # then: acpio prompt --auth testy-terminal-login
  acpio testy --store sqlite:////tmp/testy.db  # then: acpio prompt --session testy-1 ...
  acpio testy --protocol both    # v1 and v2 clients on one endpoint, sharing the sessions"""


def register(subparsers: Subcommands) -> None:
    """Add the ``testy`` subcommand."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "testy",
        help="run the deterministic test agent on stdin/stdout",
        description=_DESCRIPTION,
        epilog=_language(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    capabilities = parser.add_argument_group(
        "capabilities", "testy advertises everything below by default; each flag turns one off."
    )
    for flag, field, what in _CAPABILITY_FLAGS:
        capabilities.add_argument(flag, dest=field, action="store_false", help=f"do not advertise {what}")
    parser.add_argument(
        "--mcp-acp",
        action="store_true",
        help="advertise mcpCapabilities.acp (unstable): sessions may declare MCP servers the client or a "
        "proxy serves over mcp/message, which the mcp command calls",
    )
    parser.add_argument(
        "--auth",
        action="store_true",
        help="advertise the auth method testy-login (and auth.logout), and answer session/new, session/load "
        "and session/resume with -32000 until the client calls authenticate with it",
    )
    parser.add_argument(
        "--terminal-auth",
        metavar="FILE",
        help="advertise the terminal auth method testy-terminal-login (to clients that advertise "
        "auth.terminal; its args: --login, its env: ACPIO_TESTY_LOGIN=1) and set sessions up only once "
        "FILE says someone logged in; logout removes FILE",
    )
    parser.add_argument(
        "--login",
        action="store_true",
        help="with --terminal-auth FILE: the terminal login itself (what the client runs): ask for a "
        "name, write it to FILE, exit 0 (an empty name exits 1)",
    )
    parser.add_argument(
        "--protocol",
        choices=("1", "2", "both"),
        default="1",
        help="the ACP version(s) testy speaks: 1 (the default), 2, or both (chosen by each client's "
        "initialize); a v2-only testy answers a v1 initialize with -32022",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        default="memory:",
        help="where sessions are kept: memory: (the default: they end with the process), "
        "sqlite:///sessions.db (relative to the current directory; sqlite:////abs/path.db, four slashes, "
        "for an absolute path; sqlite: alone: in the user data directory) or "
        "postgresql://user@host/dbname (needs acpio[postgres]); a stored session can be loaded "
        "by a later testy process",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serve testy on stdin/stdout until the client closes its end."""
    import logging

    from acpio.agents.testy import TestyOptions
    from acpio.agents.testy.serve import testy_component
    from acpio.errors import AcpError
    from acpio.store import SessionStore, StoreError, open_store
    from acpio.transports import Stdio

    if args.login:
        if args.terminal_auth is None:
            raise CliError("--login is the terminal login of --terminal-auth FILE: give both", code=2)
        from acpio.agents.testy.login import terminal_login

        return terminal_login(args.terminal_auth)
    options = TestyOptions(
        terminal_auth=args.terminal_auth,
        auth=args.auth,
        mcp_acp=args.mcp_acp,
        **{field: getattr(args, field) for _, field, _ in _CAPABILITY_FLAGS},
    )
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="acpio testy: %(levelname)s: %(message)s"
    )
    protocols = (1, 2) if args.protocol == "both" else (int(args.protocol),)
    note_if_terminal("acpio testy")
    try:
        store = open_store(args.store)
    except (StoreError, ValueError) as error:
        raise CliError(f"--store: {error}", code=2) from None

    async def serve(store: SessionStore) -> None:
        async with store:
            await testy_component(options, store, protocols).serve(Stdio())

    try:
        run_main(serve(store))
    except AcpError as error:
        raise CliError(f"the connection to the client failed: {error}", code=1) from None
    return 0
