"""The ``acpio`` command itself: subcommands listed, version, and usage mistakes without tracebacks."""

from __future__ import annotations

import subprocess
import sys

import pytest

import acpio
from acpio.cli import CliError, main


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "acpio", *args], capture_output=True, text=True, timeout=60)


def test_help_lists_every_subcommand() -> None:
    done = run("--help")
    assert done.returncode == 0
    for name in ("testy", "prompt", "conductor", "trace"):
        assert f"    {name}" in done.stdout


def test_version() -> None:
    done = run("--version")
    assert done.returncode == 0
    version, schema = done.stdout.strip().splitlines()
    assert version == f"acpio {acpio.__version__}"
    assert schema.startswith("ACP v1 schema bundled in @agentclientprotocol/sdk ")
    assert schema.endswith(")")
    assert "schema.unstable.json sha256 " in schema


@pytest.mark.parametrize("args", [(), ("nosuch",)])
def test_a_usage_mistake_is_one_short_message_and_exit_2(args: tuple[str, ...]) -> None:
    done = run(*args)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("acpio: error: ")


@pytest.mark.parametrize(
    ("args", "suggestion"),
    [
        (["prompt", "--alow", "hi"], "--alow (did you mean --allow?)"),
        (["prompt", "--agent", "a", "--jsn=1", "hi"], "--jsn=1 (did you mean --json?)"),
        (["prompt", "--zzz", "hi"], "--zzz"),
    ],
)
def test_an_unknown_option_of_a_subcommand_gets_its_usage_and_a_suggestion(
    args: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as ended:
        main(args)
    assert ended.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: acpio prompt [-h] [--agent CMD]")  # the subcommand's options
    assert err.splitlines()[-1] == f"acpio prompt: error: unrecognized arguments: {suggestion}"


def test_cli_error_from_a_subcommand_is_printed_as_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(args: object) -> int:
        raise CliError("the agent command is empty: give --agent 'CMD ...'", code=3)

    import acpio.cli.testy

    real_register = acpio.cli.testy.register

    def register(subparsers: object) -> None:
        real_register(subparsers)
        subparsers.choices["testy"].set_defaults(run=refuse)  # type: ignore[attr-defined]

    monkeypatch.setattr(acpio.cli.testy, "register", register)
    assert main(["testy"]) == 3
    assert capsys.readouterr().err == "acpio: error: the agent command is empty: give --agent 'CMD ...'\n"
