"""docs/prompt.md's option table names every option of ``acpio prompt``, and no option it does not have."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from acpio.cli import build_parser

DOC = Path(__file__).resolve().parents[2] / "docs" / "prompt.md"


def prompt_options() -> set[str]:
    """The option strings of ``acpio prompt``'s parser (argparse lists them in private attributes only)."""
    commands = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    parser = commands.choices["prompt"]
    return {option for action in parser._actions for option in action.option_strings} - {"-h", "--help"}


def documented_options() -> set[str]:
    """The options named in the first column of the table under ``## Options``."""
    section = DOC.read_text().split("\n## Options\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `")]
    return {option for row in rows for option in re.findall(r"`(-[-\w]+)", row)}


def test_every_option_of_acpio_prompt_has_a_row_in_the_table() -> None:
    assert prompt_options() - documented_options() == set()


def test_the_table_names_no_option_acpio_prompt_lacks() -> None:
    assert documented_options() - prompt_options() == set()


def shell_prompt_commands() -> list[tuple[str, str]]:
    """Each ``acpio prompt`` command line of the pages' sh/bash blocks, with its page."""
    found = []
    for page in [*sorted(DOC.parent.rglob("*.md")), DOC.parents[1] / "README.md"]:
        for block in re.findall(r"```(?:sh|bash)\n(.*?)```", page.read_text(), flags=re.S):
            joined = block.replace("\\\n", " ")
            found += [(page.name, line) for line in joined.splitlines() if line.startswith("acpio prompt ")]
    return found


def test_every_documented_acpio_prompt_command_names_its_agent() -> None:
    # acpio prompt takes no agent command after "--" (those words are the prompt) and, with no
    # ACPIO_AGENT set, refuses to run without --agent: a reader copying such a line gets "no agent".
    assert shell_prompt_commands()
    unnamed = [
        (page, line) for page, line in shell_prompt_commands() if not re.search(r"--agent|--attach", line)
    ]
    assert unnamed == []
