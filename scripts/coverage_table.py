"""docs/coverage.md: for every stable ACP method and session update kind, what exercises it.

For each one the table names the ``acpio testy`` command (or flag) that produces or serves it, the
``acpio prompt`` behaviour that sends, answers or shows it, the agent-API call (``acpio.app``) that
sends or answers it, and a test that covers it on the wire. The stable methods come from the
method table (``acpio.schema.METHODS``), the update kinds from the ``SessionUpdate`` union of the
generated models, so a method or kind added to the schema without a row here fails
``tests/docs/test_coverage.py``, as does a row with an empty cell, a test that does not exist, or
a docs/coverage.md that is not this script's output.

    python scripts/coverage_table.py           # print the page
    python scripts/coverage_table.py --write   # write docs/coverage.md
"""

from __future__ import annotations

import sys
import typing
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "coverage.md"


@dataclass(frozen=True)
class Row:
    """What exercises one method or update kind (Markdown in every cell)."""

    testy: str
    prompt: str
    agent_api: str
    test: str  # tests/path.py::test_name


_T = "tests/oneshot/test_elicitation_and_controls.py"
_L = "tests/oneshot/test_login_and_forms.py"
_CLI = "tests/oneshot/test_prompt_cli.py"
_RUN = "tests/oneshot/test_run.py"
_SHOWN = f"{_T}::test_every_stable_update_kind_is_shown_plain_and_rich"

#: Every stable method, by wire name.
METHODS: dict[str, Row] = {
    "initialize": Row(
        "answers: its capabilities (the flags turn them off), `authMethods` with `--auth`, `--terminal-auth`",
        "sends it first: files, terminals, notices, compaction, boolean options, terminal auth, and "
        "elicitation in the modes it can answer",
        "`AgentApp` answers it; `@app.on_initialize` adds what only the agent knows (`authMethods`)",
        f"{_CLI}::test_json_prints_every_message_both_ways_in_order",
    ),
    "authenticate": Row(
        "`--auth`: `testy-login` is required before sessions",
        "`--auth METHOD` with an agent method",
        "`@app.on_request` on `async def authenticate(req: AuthenticateRequest)`",
        f"{_T}::test_auth_with_an_agent_method_authenticates_first",
    ),
    "logout": Row(
        "`--auth`, `--terminal-auth FILE`: ends the login (removes FILE)",
        "`--logout`",
        "`@app.on_request` on `async def logout(req: LogoutRequest)`",
        f"{_L}::test_a_terminal_login_runs_the_agent_with_the_method_args_then_the_prompt",
    ),
    "session/new": Row(
        "answers `testy-N` with modes and config options",
        "opens the run's session in `--cwd`",
        "`AgentApp` answers it (`@app.on_open` sees it)",
        f"{_RUN}::test_a_turn_ends_with_end_turn_and_names_the_session",
    ),
    "session/load": Row(
        "replays the history, then answers",
        "`--session ID` (the history shown dimmed)",
        "`AgentApp(store=...)` serves it from the session store",
        f"{_RUN}::test_session_load_on_the_wire",
    ),
    "session/resume": Row(
        "answers without replaying (`--no-load-session` makes clients use it)",
        "`--session ID` when the agent cannot load",
        "`AgentApp(store=...)`",
        f"{_RUN}::test_without_load_session_the_session_is_resumed",
    ),
    "session/list": Row(
        "lists the stored sessions (`title TEXT` names one)",
        "`--list-sessions`",
        "`AgentApp(store=...)`",
        f"{_T}::test_sessions_are_listed_closed_and_deleted",
    ),
    "session/close": Row(
        "closes the session, cancelling its turn",
        "`--close-session ID`",
        "`AgentApp(store=...)` (`@app.on_close` sees it)",
        f"{_T}::test_sessions_are_listed_closed_and_deleted",
    ),
    "session/delete": Row(
        "forgets the session, cancelling its turn",
        "`--delete-session ID`",
        "`AgentApp(store=...)`",
        f"{_T}::test_sessions_are_listed_closed_and_deleted",
    ),
    "session/prompt": Row(
        "runs the prompt as a script, or echoes it",
        "sends TEXT (or stdin with `-`) and shows the turn",
        "`@app.prompt` on `async def prompt(turn: Turn)`",
        f"{_CLI}::test_a_full_turn_rendered_as_plain_text",
    ),
    "session/cancel": Row(
        "stops the running turn (`sleep SECONDS` waits for one)",
        "Ctrl-C",
        "`AgentApp` cancels the prompt function; the turn answers `cancelled`",
        f"{_CLI}::test_sigint_cancels_the_turn_and_exits_130",
    ),
    "session/set_mode": Row(
        "modes `chat` and `plan`",
        "`--mode ID` (`acpio.oneshot.controls.set_mode`)",
        "`app.mode(...)` declares them; `AgentApp` answers",
        f"{_T}::test_mode_and_options_are_set_before_the_prompt",
    ),
    "session/set_config_option": Row(
        "`verbosity` (select) and `shout` (boolean)",
        "`--option ID=VALUE` (`acpio.oneshot.controls.set_option`)",
        "`app.select_option(...)`, `app.boolean_option(...)`; `AgentApp` answers",
        f"{_T}::test_mode_and_options_are_set_before_the_prompt",
    ),
    "$/cancel_request": Row(
        "sends it for a request a cancel abandoned; for its `session/prompt`, cancels the turn",
        "the engine marks the request it answers cancelled",
        "cancelling a turn withdraws the client request it awaits",
        "tests/agents/test_testy.py::test_cancel_abandons_the_client_request_in_flight",
    ),
    "fs/read_text_file": Row(
        "`read PATH`",
        "answers inside `--cwd` only",
        "`turn.read_file(path)`",
        f"{_CLI}::test_a_read_outside_cwd_is_refused_with_an_error_the_agent_sees",
    ),
    "fs/write_text_file": Row(
        "`write PATH TEXT`",
        "writes inside `--cwd` only, shows the diff",
        "`turn.write_file(path, text)`",
        f"{_CLI}::test_a_write_inside_cwd_changes_the_file_and_shows_the_diff",
    ),
    "session/request_permission": Row(
        "`permission [TITLE]`",
        "`--allow`, `--deny`, `--ask`",
        "`turn.ask_permission(call)`",
        f"{_CLI}::test_deny_refuses_the_permission",
    ),
    "terminal/create": Row(
        "`run COMMAND`, `timeout SECONDS COMMAND`",
        "a real process in `--cwd`, once the permission policy allows it",
        "`turn.run_command(...)`",
        f"{_CLI}::test_a_terminal_command_runs_in_cwd",
    ),
    "terminal/output": Row(
        "`run COMMAND`",
        "the output so far (shown under the tool call)",
        "`turn.run_command(...)`",
        f"{_CLI}::test_a_terminal_command_runs_in_cwd",
    ),
    "terminal/wait_for_exit": Row(
        "`run COMMAND`",
        "waits for the real process",
        "`turn.run_command(...)`",
        f"{_CLI}::test_a_failing_terminal_command",
    ),
    "terminal/kill": Row(
        "`timeout SECONDS COMMAND`",
        "ends the process (SIGTERM, then SIGKILL)",
        "`turn.run_command(..., kill_after=SECONDS)`",
        f"{_T}::test_a_command_past_its_limit_is_killed_when_the_agent_asks",
    ),
    "terminal/release": Row(
        "`run COMMAND` (and after a cancel)",
        "forgets the terminal, killing a process still running",
        "`turn.run_command(...)`, also when the turn is cancelled",
        "tests/agents/test_testy.py::test_cancel_during_run_releases_the_terminal",
    ),
    "elicitation/create": Row(
        "`elicit [MESSAGE]` (a form of every field kind), `elicit-url URL`",
        "a form asked field by field on a terminal, or `--answer`/`--answers`; a URL shown and opened "
        "with consent, or `--urls`; `--decline-elicitations`",
        "`await turn.elicit(message, Form)` (typed answer), `turn.elicit_url(message, url)`",
        f"{_T}::test_a_form_is_answered_from_the_given_values_and_the_defaults",
    ),
    "elicitation/complete": Row(
        "`elicit-url URL` after an accept",
        "notes that the page was completed (unknown ids ignored)",
        "`turn.complete_elicitation(elicitation_id)`",
        f"{_T}::test_an_accepted_url_is_printed_and_its_completion_noted",
    ),
    "session/update": Row(
        "every kind below",
        "shown as it arrives (the kinds below)",
        "`turn.update(update)` and the calls below",
        _SHOWN,
    ),
}

#: Every stable session update kind, by its ``sessionUpdate`` tag.
UPDATES: dict[str, Row] = {
    "user_message_chunk": Row(
        "`session/load` replays each prompt",
        "the replayed history, dimmed (`you> `)",
        "`AgentApp(store=...)` records prompts and replays them",
        f"{_RUN}::test_session_load_replays_the_history_dimmed_then_runs_the_turn",
    ),
    "agent_message_chunk": Row("`echo TEXT`", "streamed text", "`turn.say(text)`", _SHOWN),
    "agent_thought_chunk": Row("`think TEXT`", "`(thinking) ` lines", "`turn.think(text)`", _SHOWN),
    "tool_call": Row("`tool TITLE`", "a status line", "`async with turn.tool_call(title) as call`", _SHOWN),
    "tool_call_update": Row(
        "`tool TITLE`", "a status line per change; the content once it ends", "`call.update(...)`", _SHOWN
    ),
    "plan": Row("`plan STEP; STEP`, `progress N`", "a checklist", "`turn.plan(entries)`", _SHOWN),
    "available_commands_update": Row(
        "`commands`", "`[commands: /name, ...]`", "`app.command(name, description)`", _SHOWN
    ),
    "current_mode_update": Row("`mode ID`", "`[mode: ID]`", "`turn.set_mode(mode_id)`", _SHOWN),
    "config_option_update": Row(
        "`option ID VALUE`", "`[config: Name=value, ...]`", "`turn.set_option(option_id, value)`", _SHOWN
    ),
    "session_info_update": Row("`title TEXT`", "`[title: TEXT]`", "`turn.set_title(title)`", _SHOWN),
    "usage_update": Row("`usage`", "`[usage: N of M tokens]`", "`turn.report_usage(used, size)`", _SHOWN),
    "notice": Row(
        "`notice SEVERITY TITLE [-- DESCRIPTION]`",
        "`[SEVERITY: TITLE: DESCRIPTION]`",
        "`turn.notice(title, severity=..., description=...)`",
        _SHOWN,
    ),
    "compaction_update": Row(
        "`compact TEXT`", "`[context compaction ID: STATUS]`", "`turn.compact(summary)`", _SHOWN
    ),
    "compaction_summary_chunk": Row("`compact TEXT`", "`(summary) ` text", "`turn.compact(summary)`", _SHOWN),
}


def stable_methods() -> list[str]:
    """The wire names of the schema's stable methods, in the method table's order."""
    from acpio.schema import METHODS as TABLE

    names: list[str] = []
    for spec in TABLE:
        if spec.stable and spec.method not in names:
            names.append(spec.method)
    return names


def stable_update_kinds() -> list[str]:
    """The ``sessionUpdate`` tags of the stable variants of ``SessionUpdate``, in the schema's order."""
    from acpio import schema

    def variants(hint: object) -> list[type]:
        origin = typing.get_origin(hint)
        if origin is typing.Annotated:
            return variants(typing.get_args(hint)[0])
        if origin is typing.Union:
            return [v for arg in typing.get_args(hint) for v in variants(arg)]
        return [hint] if isinstance(hint, type) else []

    kinds: list[str] = []
    for model in variants(schema.SessionUpdate):
        field = getattr(model, "model_fields", {}).get("session_update")
        tag = getattr(field, "default", None)
        if isinstance(tag, str) and model.__name__ not in schema.UNSTABLE_TYPES:
            kinds.append(tag)
    return kinds


def _table(title: str, names: list[str], rows: dict[str, Row]) -> list[str]:
    lines = [
        f"## {title}",
        "",
        "| | `acpio testy` | `acpio prompt` | agent API (`acpio.app`) | on the wire |",
        "|---|---|---|---|---|",
    ]
    for name in names:
        row = rows.get(name)
        cells = (row.testy, row.prompt, row.agent_api, f"`{row.test}`") if row else ("", "", "", "")
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return [*lines, ""]


def render() -> str:
    """The text of docs/coverage.md."""
    lines = [
        "# Coverage of the stable protocol",
        "",
        "<!-- generated by scripts/coverage_table.py: edit the script, then run it with --write -->",
        "",
        "Every stable method and session update kind of the ACP v1 schema, and what exercises it: the",
        "[`acpio testy`](testy.md) command or flag that produces or serves it, the",
        "[`acpio prompt`](prompt.md) behaviour that sends, answers or shows it, the agent-API call",
        "(`acpio.app`) that sends or answers it, and a test that covers it on the wire.",
        "`tests/docs/test_coverage.py` regenerates this page and fails when it is stale, when a cell is",
        "empty, or when the schema gains a stable method or kind without a row.",
        "",
        *_table("Methods", stable_methods(), METHODS),
        *_table("Session update kinds", stable_update_kinds(), UPDATES),
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    """Print the page, or write it with ``--write``."""
    text = render()
    if argv == ["--write"]:
        PAGE.write_text(text)
    elif argv:
        print("usage: python scripts/coverage_table.py [--write]", file=sys.stderr)
        return 2
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
