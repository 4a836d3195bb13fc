"""The example proxies (examples/arrow_proxy.py, examples/logging_proxy.py) as programs in a chain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acpio.conductor import Chain

from ._support import ARROW, LOGGING, SCRIPTED_AGENT, load_example, prompt_text, run_client
from .scripted_agent import ScriptedAgent


async def test_the_arrow_proxy_program_quotes_the_streamed_reply() -> None:
    async def main(cx: Any) -> str:
        return await prompt_text(cx, "echo one two three")

    assert await run_client(Chain.agent("conductor", [ARROW, SCRIPTED_AGENT]), main) == "> one two three"


async def test_the_logging_proxy_logs_both_directions_and_changes_nothing(tmp_path: Path) -> None:
    log = tmp_path / "proxy.log"
    agent = ScriptedAgent()

    async def main(cx: Any) -> str:
        return await prompt_text(cx, "echo hi there", meta={"k": 1})

    chain = Chain.agent("conductor", [f"{LOGGING} {log}", agent.builder()])
    assert await run_client(chain, main) == "hi there"
    assert agent.seen[-1]["params"]["_meta"] == {"k": 1}
    lines = log.read_text().splitlines()
    heads = [line.split("  ")[:2] for line in lines]
    assert heads == [
        ["client -> agent", "request proxy/initialize"],
        ["agent -> client", "result initialize"],
        ["client -> agent", "request session/new"],
        ["agent -> client", "result session/new"],
        ["client -> agent", "request session/prompt"],
        ["agent -> client", "notification session/update"],
        ["agent -> client", "notification session/update"],
        ["agent -> client", "result session/prompt"],
    ]
    assert '"text": "hi"' in lines[5]


def test_the_arrow_proxy_quotes_each_line_once_across_chunks() -> None:
    quote = load_example("arrow_proxy").quote
    assert quote("one\ntwo", True) == ("> one\n> two", False)
    assert quote(" more\n", False) == (" more\n", True)
    assert quote("\n\nthree", True) == ("> \n> \n> three", False)
