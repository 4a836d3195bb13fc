"""testy's prompt language on its own: what is a script, how each line parses, what bad lines say."""

from __future__ import annotations

import pytest

from acpio.agents.testy.script import (
    COMMAND_WORDS,
    COMMANDS,
    V2_COMMANDS,
    Background,
    Commands,
    Compact,
    Echo,
    Elicit,
    ElicitUrl,
    Exit,
    Fail,
    Hang,
    Help,
    Line,
    Mcp,
    Mode,
    Notice,
    Notify,
    Option,
    Permission,
    Plan,
    Progress,
    Read,
    Replace,
    Run,
    Script,
    ScriptError,
    Sleep,
    Stop,
    Stream,
    Think,
    Timeout,
    Title,
    Tool,
    Usage,
    Work,
    Write,
    command_table,
    is_script,
    parse_line,
    parse_prompt,
    split_words,
    unescape,
)


def commands_of(text: str) -> list[object]:
    script = parse_prompt(text)
    assert script is not None
    assert script.ok, script
    return [line.command for line in script.lines]


def error_of(line: str) -> ScriptError:
    script = parse_prompt(f"echo first\n{line}")
    assert script is not None
    assert len(script.errors) == 1, script
    return script.errors[0]


# --- script or echo ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    ["echo hi", "  \n\nhelp", "# a comment\n\necho hi", "/echo hi", "commands", "stop end_turn"],
)
def test_a_prompt_whose_first_command_line_starts_with_a_command_word_is_a_script(text: str) -> None:
    assert is_script(text)
    assert parse_prompt(text) is not None


@pytest.mark.parametrize(
    "text", ["Hello, agent!", "", "   \n ", "# only a comment", "Echo hi", "echoes hi", "hello\necho hi"]
)
def test_any_other_prompt_is_echoed(text: str) -> None:
    assert not is_script(text)
    assert parse_prompt(text) is None


def test_every_command_word_has_a_parser_and_help() -> None:
    assert {spec.name for spec in COMMANDS} == COMMAND_WORDS
    assert len(COMMAND_WORDS) == 28
    for spec in COMMANDS:
        assert spec.summary
        assert spec.usage.startswith(spec.name)


# --- each command -----------------------------------------------------------------------------------


def test_each_command_parses_into_its_arguments() -> None:
    text = "\n".join(
        [
            "echo hello   wide  world",
            "stream 3",
            "stream 2 ab cd",
            "think deeply now",
            "plan read it;  write it ; ;test it",
            "progress 2",
            "tool Search the web",
            "read notes.txt",
            'read "my notes.txt"',
            r"write out.txt line one\nline two\ttab \\n kept",
            "write 'a b.txt' x",
            "permission",
            "permission Deploy to prod?",
            "run ls -l 'a b'",
            'notify _x/ping {"n": 1}',
            "notify _x/ping",
            "notify _x/list [1, 2]",
            'mcp notes add {"a": 1}',
            "mcp notes list",
            "sleep 0.5",
            "hang 2",
            "exit 3",
            "exit 0 bye now",
            "fail -32042",
            "fail 7 custom message here",
            "stop max_tokens",
            "mode plan",
            "title My session",
            "commands",
            "usage",
            "help",
        ]
    )
    assert commands_of(text) == [
        Echo("hello   wide  world"),
        Stream(3, "."),
        Stream(2, "ab cd"),
        Think("deeply now"),
        Plan(("read it", "write it", "test it")),
        Progress(2),
        Tool("Search the web"),
        Read("notes.txt"),
        Read("my notes.txt"),
        Write("out.txt", "line one\nline two\ttab \\n kept"),
        Write("a b.txt", "x"),
        Permission(None),
        Permission("Deploy to prod?"),
        Run("ls", ("-l", "a b")),
        Notify("_x/ping", {"n": 1}),
        Notify("_x/ping", {}),
        Notify("_x/list", [1, 2]),
        Mcp("notes", "add", {"a": 1}),
        Mcp("notes", "list", {}),
        Sleep(0.5),
        Hang(2.0),
        Exit(3, "testy exits on request"),
        Exit(0, "bye now"),
        Fail(-32042, "testy failure"),
        Fail(7, "custom message here"),
        Stop("max_tokens"),
        Mode("plan"),
        Title("My session"),
        Commands(),
        Usage(),
        Help(),
    ]


def test_comments_and_blank_lines_are_skipped_and_line_numbers_count_every_line() -> None:
    script = parse_prompt("# setup\necho a\n\n   # indented comment\n\techo b  \n")
    assert script == Script(lines=script.lines)
    assert [(line.number, line.text, line.command) for line in script.lines] == [
        (2, "echo a", Echo("a")),
        (5, "echo b", Echo("b")),
    ]


def test_a_leading_slash_makes_a_slash_command_of_any_line() -> None:
    assert commands_of("/plan a; b\n/progress 1") == [Plan(("a", "b")), Progress(1)]


def test_echo_without_text_and_write_without_text_are_allowed() -> None:
    assert commands_of("echo\nwrite empty.txt") == [Echo(""), Write("empty.txt", "")]


# --- bad lines --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("mcp notes", "mcp needs a TOOL after the SERVER name"),
        ("mcp notes add [1]", "mcp the tool arguments must be a JSON object"),
        ("progress x", "progress N must be a whole number (0 or more), not 'x' (usage: progress N)"),
        ("progress -1", "progress N must be a whole number"),
        ("progress", "progress needs a count N"),
        ("fail abc", "fail CODE must be an integer JSON-RPC error code (like -32000), not 'abc'"),
        ("fail 1.5", "fail CODE must be an integer"),
        ("fail 99999999999", "fail CODE must be an integer"),
        ("sleep -1", "sleep SECONDS must be a number, 0 or more, not '-1' (usage: sleep SECONDS)"),
        ("sleep nan", "sleep SECONDS must be a number"),
        ("sleep inf", "sleep SECONDS must be a number"),
        ("sleep soon", "sleep SECONDS must be a number"),
        ("hang -1", "hang SECONDS must be a number, 0 or more, not '-1' (usage: hang SECONDS)"),
        ("exit", "exit needs an exit CODE (usage: exit CODE [MESSAGE])"),
        ("exit 256", "exit CODE must be an exit code from 0 to 255, not '256'"),
        ("exit -1", "exit CODE must be an exit code from 0 to 255"),
        ("frobnicate now", "unknown command 'frobnicate'; the commands are: echo, stream,"),
        ("stream many", "stream N must be a whole number"),
        ("think", "think needs the TEXT to think"),
        ("plan ; ;", "plan needs at least one STEP"),
        ("tool", "tool needs a TITLE"),
        ("read", "read needs a PATH"),
        ("read a b", "read takes one PATH; quote a path that has spaces"),
        ('read "unclosed', "the quoted path has no closing"),
        ("write", "write needs a PATH"),
        ("run", "run needs a COMMAND"),
        ("run echo 'unclosed", "run cannot split into shell words"),
        ("run '' x", "run needs a COMMAND, not an empty word"),
        ("notify ping", "notify METHOD must start with `_`"),
        ("notify _x {oops", "notify the params are not valid JSON"),
        ("notify _x 42", "notify the params must be a JSON object or array"),
        ("stop cancelled", "REASON must be one of end_turn, max_tokens, max_turn_requests, refusal"),
        ("stop", "stop needs a REASON"),
        ("mode ask", "testy's modes are chat, plan, not 'ask'"),
        ("title", "title needs the TEXT of the title"),
        ("help me", "help takes no arguments"),
        ("usage now", "usage takes no arguments"),
    ],
)
def test_a_bad_line_becomes_an_error_naming_the_line_and_the_problem(line: str, message: str) -> None:
    error = error_of(line)
    assert error.number == 2
    assert error.text == line
    assert message in error.message
    assert str(error).startswith(f"line 2: `{line}`: ")


def test_every_bad_line_is_reported_and_the_good_ones_are_kept() -> None:
    script = parse_prompt("echo ok\nprogress x\nfail abc\nsleep -1\nwhat now\necho still ok")
    assert script is not None
    assert not script.ok
    assert [error.number for error in script.errors] == [2, 3, 4, 5]
    assert [line.command for line in script.lines] == [Echo("ok"), Echo("still ok")]


def test_a_script_whose_first_word_is_a_command_with_bad_arguments_is_still_a_script() -> None:
    script = parse_prompt("help me with this bug")
    assert script is not None
    assert [error.message for error in script.errors] == ["help takes no arguments (usage: help)"]


# --- text helpers -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "chunks"),
    [
        ("Hello, agent!", ["Hello, ", "agent!"]),
        ("  lead  and trail  ", ["  lead  ", "and ", "trail  "]),
        ("two\nlines", ["two\n", "lines"]),
        ("   ", ["   "]),
        ("", []),
    ],
)
def test_split_words_keeps_every_space(text: str, chunks: list[str]) -> None:
    assert split_words(text) == chunks
    assert "".join(split_words(text)) == text


def test_unescape_turns_backslash_n_into_a_newline() -> None:
    assert unescape(r"a\nb\tc\\nd\qe\\") == "a\nb\tc\\nd\\qe\\"


@pytest.mark.parametrize(
    ("line", "parsed"),
    [
        ("notice warning Disk full -- 3% left", Notice("warning", "Disk full", "3% left")),
        ("notice info Hello", Notice("info", "Hello")),
        ("compact We did things", Compact("We did things")),
        ("option shout true", Option("shout", "true")),
        ("elicit", Elicit()),
        ("elicit Who are you?", Elicit("Who are you?")),
        ("elicit-url https://example.com/a Open it", ElicitUrl("https://example.com/a", "Open it")),
        ("timeout 1.5 sleep 9", Timeout(1.5, "sleep", ("9",))),
    ],
)
def test_the_commands_of_the_newer_update_kinds_parse(line: str, parsed: object) -> None:
    assert parse_line(1, line) == Line(1, line, parsed)  # type: ignore[arg-type]  # parsed: a Command


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ("notice loud Hi", "SEVERITY must be one of info, warning, error, not 'loud'"),
        ("notice info", "needs a TITLE after the SEVERITY"),
        ("option shout", "needs a VALUE after the option ID"),
        ("elicit-url example.com", "URL must be an absolute URL"),
        ("timeout x sleep 1", "SECONDS must be a number"),
        ("timeout 1", "needs a COMMAND"),
    ],
)
def test_the_newer_commands_say_what_is_wrong(line: str, says: str) -> None:
    error = parse_line(1, line)
    assert isinstance(error, ScriptError)
    assert says in error.message


# --- the v2 language --------------------------------------------------------------------------------


def test_v2_has_work_background_and_replace_and_parses_them() -> None:
    script = parse_prompt("work 2.5 compile it\nbackground 0 later on\nreplace all new\nrun make", version=2)
    assert script is not None
    assert script.ok, script
    assert [line.command for line in script.lines] == [
        Work(2.5, "compile it"),
        Background(0.0, "later on"),
        Replace("all new"),
        Run("make"),
    ]


def test_v2_only_commands_are_not_commands_on_v1() -> None:
    # On v1 a prompt starting with a v2 word stays an echo, as before v2 existed.
    assert parse_prompt("work 1 a thing") is None
    [error] = parse_prompt("echo hi\nreplace x").errors  # type: ignore[union-attr]
    assert error.message == "'replace' is a command of ACP v2 only, not of v1"


def test_v1_only_commands_are_refused_on_v2_with_the_reason() -> None:
    script = parse_prompt("echo hi\nmode plan\nelicit\nmcp srv tool", version=2)
    assert script is not None
    assert [error.message for error in script.errors] == [
        f"{word!r} is a command of ACP v1 only, not of v2" for word in ("mode", "elicit", "mcp")
    ]
    assert parse_prompt("mode plan", version=2) is None  # not a command word on v2: an echo


def test_v2_commands_check_their_arguments() -> None:
    script = parse_prompt("echo x\nwork soon it\nwork 3\nbackground -1 x\nreplace", version=2)
    assert script is not None
    assert [str(error) for error in script.errors] == [
        "line 2: `work soon it`: work SECONDS must be a number, 0 or more, not 'soon' "
        "(usage: work SECONDS TITLE)",
        "line 3: `work 3`: work needs a TITLE after the SECONDS (usage: work SECONDS TITLE)",
        "line 4: `background -1 x`: background SECONDS must be a number, 0 or more, not '-1' "
        "(usage: background SECONDS TEXT)",
        "line 5: `replace`: replace needs the TEXT the message is replaced with (usage: replace TEXT)",
    ]


def test_each_version_has_its_own_help_table() -> None:
    v1_words = {spec.name for spec in COMMANDS}
    v2_words = {spec.name for spec in V2_COMMANDS}
    assert v1_words - v2_words == {"mode", "mcp", "notice", "compact", "elicit", "elicit-url"}
    assert v2_words - v1_words == {"work", "background", "replace"}
    assert "fs/read_text_file" in command_table()
    v2_table = command_table(version=2)
    assert "read a file (testy reads it) in a tool call" in v2_table
    assert "fs/read_text_file" not in v2_table
    assert "tool_call/cancel" in v2_table
