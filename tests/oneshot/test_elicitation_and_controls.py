"""acpio prompt against testy in-process: elicitation answered from settings, mode and option changes,
agent-method login, and how notices, compactions and config updates are shown; on the wire (--json)
and as the person reads it."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from acpio.agents.testy import TestyOptions, testy_agent
from acpio.client.forms import FormField, form_fields
from acpio.oneshot import ExitCode, OutputMode, PromptFailed, PromptOptions, run_prompt
from acpio.oneshot.controls import Controls
from acpio.oneshot.elicitation import ElicitationSettings, Elicitor
from acpio.schema import CreateElicitationRequest, ElicitationSchema


class Run:
    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def sent(self, method: str) -> list[dict[str, Any]]:
        """The params of what acpio sent for ``method`` (``--json`` runs)."""
        found = []
        for line in self.out.splitlines():
            entry = json.loads(line)
            message = entry.get("message", {})
            if entry["direction"] == "send" and message.get("method") == method:
                found.append(message.get("params"))
        return found

    def answers_to(self, method: str) -> list[dict[str, Any]]:
        """The results acpio sent back for the agent's ``method`` requests (``--json`` runs)."""
        ids = set()
        results = []
        for line in self.out.splitlines():
            entry = json.loads(line)
            message = entry.get("message", {})
            if entry["direction"] == "recv" and message.get("method") == method:
                ids.add(message["id"])
            elif entry["direction"] == "send" and "method" not in message and message.get("id") in ids:
                results.append(message.get("result", message.get("error")))
        return results


async def run(
    prompt: str,
    cwd: Path,
    *,
    agent: Any = None,
    output: OutputMode = "plain",
    elicitation: ElicitationSettings | None = None,
    controls: Controls | None = None,
) -> Run:
    out, err = io.StringIO(), io.StringIO()
    options = PromptOptions(
        agent=agent if agent is not None else testy_agent(),
        prompt=prompt,
        cwd=cwd,
        output=output,
        elicitation=elicitation or ElicitationSettings(),
        controls=controls or Controls(),
    )
    code = await run_prompt(options, stdout=out, stderr=err, handle_sigint=False)
    return Run(code, out.getvalue(), err.getvalue())


# --- elicitation ----------------------------------------------------------------------------------


async def test_a_form_is_answered_from_the_given_values_and_the_defaults(tmp_path: Path) -> None:
    settings = ElicitationSettings(
        values={"name": "Ann", "age": "41", "size": "Large", "tags": "rust, python"}
    )
    done = await run("elicit", tmp_path, output="json", elicitation=settings)
    assert done.code == ExitCode.OK
    assert done.sent("initialize")[0]["clientCapabilities"]["elicitation"] == {
        "form": {}
    }  # no url: no --urls
    assert done.answers_to("elicitation/create") == [
        {
            "action": "accept",
            "content": {
                "name": "Ann", "age": 41, "subscribe": False, "colour": "green", "size": "l",
                "tags": ["rust", "python"],
            },
        }
    ]  # fmt: skip


async def test_a_missing_required_field_or_a_bad_value_cancels_and_says_which(tmp_path: Path) -> None:
    done = await run(
        "elicit", tmp_path, elicitation=ElicitationSettings(values={"age": "old", "colour": "pink"})
    )
    assert "elicitation: cancel\n" in done.out
    assert "age 'old' is not a whole number" in done.err
    assert "colour 'pink' is not one of red, green, blue" in done.err
    assert "name is required (give it with --answer name=VALUE)" in done.err


async def test_json_values_from_a_file_are_checked_as_typed(tmp_path: Path) -> None:
    settings = ElicitationSettings(values={"name": "Bo", "ratio": 0.5, "subscribe": True, "age": 200})
    done = await run("elicit", tmp_path, elicitation=settings)
    assert "age must be at most 150" in done.err
    done = await run("elicit", tmp_path, elicitation=ElicitationSettings(values={"name": "Bo", "ratio": 0.5}))
    assert 'elicitation: accept {"colour":"green","name":"Bo","ratio":0.5,"subscribe":false}' in done.out


async def test_declining_declines_both_modes(tmp_path: Path) -> None:
    done = await run(
        "elicit\nelicit-url https://example.com/a",
        tmp_path,
        output="json",
        elicitation=ElicitationSettings(decline=True),
    )
    assert done.sent("initialize")[0]["clientCapabilities"]["elicitation"] == {"form": {}, "url": {}}
    assert done.answers_to("elicitation/create") == [{"action": "decline"}, {"action": "decline"}]


async def test_without_a_way_to_answer_elicitation_is_not_advertised(tmp_path: Path) -> None:
    done = await run("elicit", tmp_path, output="json")
    assert "elicitation" not in done.sent("initialize")[0]["clientCapabilities"]
    assert done.answers_to("elicitation/create") == []


async def test_a_mode_not_advertised_is_refused_with_invalid_params(tmp_path: Path) -> None:
    elicitor = Elicitor(ElicitationSettings(urls="print"), note=lambda _: None, write=lambda _: None)
    form = CreateElicitationRequest(
        session_id="s", mode="form", message="m", requested_schema=ElicitationSchema(properties={})
    )
    with pytest.raises(Exception, match="did not advertise form elicitations") as error:
        await elicitor.answer(form)
    assert getattr(error.value, "code", None) == -32602


async def test_an_accepted_url_is_printed_and_its_completion_noted(tmp_path: Path) -> None:
    done = await run(
        "elicit-url https://example.com/login Log in please",
        tmp_path,
        elicitation=ElicitationSettings(urls="print"),
    )
    assert "elicitation: accept\n" in done.out
    assert (
        "open this page to go on (Log in please): https://example.com/login (host: example.com)" in done.err
    )
    assert "the agent says the page was completed (elicitation elicitation-1)" in done.err


async def test_open_uses_the_browser_and_unknown_completions_are_ignored() -> None:
    opened: list[str] = []
    notes: list[str] = []
    elicitor = Elicitor(
        ElicitationSettings(urls="open"),
        note=notes.append,
        write=lambda _: None,
        open_url=lambda u: opened.append(u) or True,
    )
    request = CreateElicitationRequest(
        session_id="s", mode="url", message="m", elicitation_id="e-1", url="https://xn--80ak6aa92e.com/"
    )
    answer = await elicitor.answer(request)
    assert (answer.action, opened) == ("accept", ["https://xn--80ak6aa92e.com/"])
    elicitor.complete("unknown")
    elicitor.complete("e-1")
    elicitor.complete("e-1")  # already completed: ignored
    assert notes == ["the agent says the page was completed (elicitation e-1)"]


def _scripted(lines: list[str | None]) -> Any:
    pending = list(lines)

    async def read_line() -> str | None:
        return pending.pop(0) if pending else None

    return read_line


async def test_the_interactive_form_asks_each_field_shows_the_answers_and_lets_edit() -> None:
    from acpio.agents.testy.commands import ELICITATION_FORM

    written: list[str] = []
    typed: list[str | None] = [
        "", "Ann",  # name: required, asked again
        "ann@example", "ann@example.com",  # email checked
        "200", "41",  # age range
        "",  # ratio: optional, left out
        "y",  # subscribe
        "3",  # colour by number
        "medium",  # size by title
        "1, typescript",  # tags
        "e",  # edit: every field again, the answers as defaults
        "", "", "", "0.25", "", "", "", "",
        "y",
    ]  # fmt: skip
    elicitor = Elicitor(
        ElicitationSettings(ask=True), note=lambda _: None, write=written.append, read_line=_scripted(typed)
    )
    request = CreateElicitationRequest(
        session_id="s", mode="form", message="Who are you?", requested_schema=ELICITATION_FORM
    )
    answer = await elicitor.answer(request)
    assert answer.action == "accept"
    assert answer.content == {
        "name": "Ann", "email": "ann@example.com", "age": 41, "ratio": 0.25, "subscribe": True,
        "colour": "blue", "size": "m", "tags": ["python", "typescript"],
    }  # fmt: skip
    screen = "".join(written)
    assert "The agent asks: Who are you?" in screen
    assert "Name (string, required): " in screen
    assert "This field is required." in screen
    assert "'ann@example' is not an email address." in screen
    assert "Age (integer, 0 to 150) [41]: " in screen  # asked again with the answer as the default
    assert "must be at most 150." in screen
    assert "    2) Medium (m)" in screen
    assert "  Size: Medium\n" in screen
    assert "Send these answers? y) send  e) edit  d) decline  c) cancel: " in screen


@pytest.mark.parametrize(
    ("typed", "action"), [([":d"], "decline"), (["Ann", ":c"], "cancel"), ([], "cancel")]
)
async def test_the_interactive_form_can_be_declined_or_cancelled(
    typed: list[str | None], action: str
) -> None:
    from acpio.agents.testy.commands import ELICITATION_FORM

    elicitor = Elicitor(
        ElicitationSettings(ask=True), note=lambda _: None, write=lambda _: None, read_line=_scripted(typed)
    )
    request = CreateElicitationRequest(
        session_id="s", mode="form", message="m", requested_schema=ELICITATION_FORM
    )
    answer = await elicitor.answer(request)
    assert (answer.action, answer.content) == (action, None)


def test_every_field_kind_of_the_schema_becomes_a_field() -> None:
    from acpio.agents.testy.commands import ELICITATION_FORM

    fields = {f.name: f for f in form_fields(ELICITATION_FORM)}
    assert {name: f.kind for name, f in fields.items()} == {
        "name": "string", "email": "email", "age": "integer", "ratio": "number", "subscribe": "boolean",
        "colour": "choice", "size": "choice", "tags": "choices",
    }  # fmt: skip
    assert fields["size"].options == (("s", "Small"), ("m", "Medium"), ("l", "Large"))
    tags: FormField = fields["tags"]
    with pytest.raises(ValueError, match="pick at most 2"):
        tags.parse("rust, python, typescript")
    assert fields["subscribe"].parse("off") is False


# --- modes, options, login, and what is shown -----------------------------------------------------


async def test_mode_and_options_are_set_before_the_prompt(tmp_path: Path) -> None:
    controls = Controls(mode="plan", options=(("verbosity", "Brief"), ("shout", "on")))
    done = await run("echo quiet", tmp_path, output="json", controls=controls)
    assert done.code == ExitCode.OK
    session = done.sent("session/prompt")[0]["sessionId"]
    assert done.sent("session/set_mode") == [{"sessionId": session, "modeId": "plan"}]
    assert done.sent("session/set_config_option") == [
        {"sessionId": session, "configId": "verbosity", "value": "brief"},
        {"sessionId": session, "configId": "shout", "type": "boolean", "value": True},
    ]
    caps = done.sent("initialize")[0]["clientCapabilities"]
    assert caps["session"] == {"notices": {}, "compaction": {}, "configOptions": {"boolean": {}}}
    plain = await run("echo quiet", tmp_path, controls=controls)
    assert "QUIET" in plain.out
    assert "acpio: mode: plan\nacpio: option verbosity: brief\nacpio: option shout: on\n" in plain.err


@pytest.mark.parametrize(
    ("controls", "says"),
    [
        (Controls(mode="fast"), "mode 'fast': the agent's modes are chat, plan"),
        (
            Controls(options=(("speed", "1"),)),
            "option 'speed': the agent's config options are verbosity, shout",
        ),
        (
            Controls(options=(("verbosity", "loud"),)),
            "option 'verbosity' takes one of brief, normal, verbose, not 'loud'",
        ),
        (
            Controls(options=(("shout", "maybe"),)),
            "option 'shout' is on or off: give true or false, not 'maybe'",
        ),
    ],
)
async def test_a_choice_the_agent_does_not_offer_is_a_usage_error(
    tmp_path: Path, controls: Controls, says: str
) -> None:
    with pytest.raises(PromptFailed) as failed:
        await run("echo hi", tmp_path, controls=controls)
    assert failed.value.exit_code == ExitCode.USAGE
    assert says in failed.value.message


async def test_auth_with_an_agent_method_authenticates_first(tmp_path: Path) -> None:
    agent = testy_agent(TestyOptions(auth=True))
    with pytest.raises(PromptFailed) as failed:
        await run("echo hi", tmp_path, agent=agent)
    assert "log in with --auth METHOD (its methods: testy-login)" in failed.value.message
    done = await run(
        "echo hi", tmp_path, agent=agent, output="json", controls=Controls(auth_method="testy-login")
    )
    assert done.code == ExitCode.OK
    assert done.sent("authenticate") == [{"methodId": "testy-login"}]
    with pytest.raises(PromptFailed) as failed:
        await run("echo hi", tmp_path, agent=agent, controls=Controls(auth_method="nope"))
    assert (
        "--auth nope: the agent offers no such auth method (it offers: testy-login (agent))"
        in failed.value.message
    )


async def test_notices_compactions_and_config_updates_are_shown(tmp_path: Path) -> None:
    script = (
        "notice warning Disk almost full -- 3% left\ncompact We fixed the parser.\noption shout true\necho ok"
    )
    done = await run(script, tmp_path)
    assert done.out.splitlines() == [
        "[warning: Disk almost full: 3% left]",
        "[context compaction compaction-1: in_progress]",
        "(summary) We fixed the parser.",
        "[context compaction compaction-1: completed]",
        "[config: Verbosity=normal, Shout=on]",
        "OK",
        "[stop reason: end_turn]",
    ]


async def test_every_stable_update_kind_is_shown_plain_and_rich(tmp_path: Path) -> None:
    script = "\n".join(
        [
            "think Let me see",
            "plan Look; Fix",
            "tool Look around",
            "echo hello",
            "mode plan",
            "title Fixing things",
            "usage",
            "commands",
            "option verbosity brief",
            "notice info Heads up",
            "compact Short summary",
        ]
    )
    done = await run(script, tmp_path)
    assert done.code == ExitCode.OK, done.err
    lines = done.out.splitlines()
    for expected in [
        "(thinking) Let me see",
        "Plan:",
        "  [ ] Look",
        "[completed] Look around",
        "    Look around: done",
        "hello",
        "[mode: plan]",
        "[title: Fixing things]",
        "[config: Verbosity=brief, Shout=off]",
        "[info: Heads up]",
        "[context compaction compaction-1: in_progress]",
        "(summary) Short summary",
        "[context compaction compaction-1: completed]",
    ]:
        assert expected in lines, (expected, lines)
    assert any(line.startswith("[usage: ") and line.endswith(" of 200000 tokens]") for line in lines)
    assert any(line.startswith("[commands: /echo, /stream") for line in lines)
    rich = await run(script, tmp_path, output="rich")
    assert rich.code == ExitCode.OK, rich.err
    for words in (
        "Heads up",
        "Short summary",
        "context compaction compaction-1",
        "Fixing things",
        "Verbosity",
    ):
        assert words in rich.out


async def test_a_command_past_its_limit_is_killed_when_the_agent_asks(tmp_path: Path) -> None:
    out, err = io.StringIO(), io.StringIO()
    options = PromptOptions(
        agent=testy_agent(), prompt="timeout 0.3 sleep 30", cwd=tmp_path, permissions="allow"
    )
    code = await run_prompt(options, stdout=out, stderr=err, handle_sigint=False)
    assert code == ExitCode.OK, err.getvalue()
    assert "killed after 0.3 s" in out.getvalue()
    assert "signal SIGTERM" in out.getvalue()  # terminal/kill ended the real process


async def test_a_notice_is_coloured_by_its_severity_on_a_terminal(tmp_path: Path) -> None:
    done = await run("notice error Build broken\nnotice info FYI\nusage", tmp_path, output="rich")
    assert "\x1b[1;31m[error: Build broken]" in done.out  # bold red
    assert "\x1b[1m[info: FYI]" in done.out  # bold
    assert "\x1b[2m[usage: " in done.out  # the other updates stay dim


async def test_sessions_are_listed_closed_and_deleted(tmp_path: Path) -> None:
    from acpio.oneshot.sessions import SessionCommandFailed, close_session, delete_session, list_sessions

    agent = testy_agent()  # one builder: its sessions outlive each connection
    assert (await run("title Fixing the parser", tmp_path, agent=agent)).code == ExitCode.OK
    (line,) = await list_sessions(agent, tmp_path)
    assert line.startswith("testy-1  Fixing the parser  ")
    await close_session(agent, "testy-1")
    with pytest.raises(SessionCommandFailed, match="refused session/close of 'nope'"):
        await close_session(agent, "nope")
    await delete_session(agent, "testy-1")
    assert await list_sessions(agent, tmp_path) == []
    with pytest.raises(
        SessionCommandFailed, match=r"does not advertise agentCapabilities\.sessionCapabilities\.list"
    ):
        await list_sessions(testy_agent(TestyOptions(session_list=False)), tmp_path)
