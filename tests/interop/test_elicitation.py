"""Elicitation across implementations: the official TypeScript SDK client answers acpio agents'
elicitations (testy's commands, and an agent made with ``turn.elicit``), and ``acpio prompt`` answers
the elicitations of an agent made with the TypeScript SDK. Real processes, both ways."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from ._support import PEERS, run_client

TS_ELICITATION = PEERS / "ts" / "elicitation.mjs"
ELICIT_APP = Path(__file__).with_name("elicit_app.py")


def _ts_client(node: str, workdir: Path, prompt: str, agent: list[str]) -> dict:
    return run_client(
        [node, str(TS_ELICITATION), "client", "--cwd", str(workdir), "--prompt", prompt, "--", *agent]
    )


def _said(summary: dict) -> str:
    return "".join(
        u["content"]["text"] for u in summary["updates"] if u["sessionUpdate"] == "agent_message_chunk"
    )


def test_the_typescript_client_answers_testy_form_and_url(node: str, workdir: Path) -> None:
    agent = [sys.executable, "-m", "acpio", "testy"]
    summary = _ts_client(node, workdir, "elicit\nelicit-url https://example.com/t Open it", agent)
    assert summary["fatal"] is None, summary
    assert summary["sdkErrors"] == [], summary
    form, url = summary["elicitations"]
    assert (form["mode"], url["mode"], url["elicitationId"]) == ("form", "url", "elicitation-1")
    assert set(form["requestedSchema"]["properties"]) == {
        "name", "email", "age", "ratio", "subscribe", "colour", "size", "tags"
    }  # fmt: skip
    said = _said(summary)
    assert (
        'elicitation: accept {"age":0,"colour":"red","email":"ts-peer@example.com","name":"ts-peer"' in said
    )
    assert "elicitation elicitation-1 complete" in said
    assert {"method": "elicitation/complete", "params": {"elicitationId": "elicitation-1"}} in summary[
        "notifications"
    ]


def test_the_typescript_client_answers_turn_elicit_with_typed_values(node: str, workdir: Path) -> None:
    summary = _ts_client(node, workdir, "hello", [sys.executable, str(ELICIT_APP)])
    assert summary["fatal"] is None, summary
    assert summary["sdkErrors"] == [], summary
    assert summary["stopReason"] == "end_turn"
    # the TS client sent the minimum of each number, the first choice of each list: typed on our side
    assert _said(summary) == "form: accept ts-peer 19 1.0 True red s x\nurl: accept\n"
    assert {"method": "elicitation/complete", "params": {"elicitationId": "acpio-url-1"}} in summary[
        "notifications"
    ]


def test_acpio_prompt_answers_a_typescript_agent(node: str, workdir: Path) -> None:
    agent = f"{node} {TS_ELICITATION} agent"
    env = {k: v for k, v in os.environ.items() if k != "ACPIO_AGENT"}
    argv = [
        sys.executable, "-m", "acpio", "prompt", "--agent", agent, "--cwd", str(workdir),
        "--answer", "name=Ann", "--answer", "age=7", "--answer", "tags=a,c", "--urls", "print", "go",
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, timeout=90, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert 'form: accept {"name":"Ann","age":7,"agree":false,"tags":["a","c"]}' in done.stdout
    assert "url: accept" in done.stdout
    assert "https://example.com/ts-authorize (host: example.com)" in done.stderr
    assert "the agent says the page was completed (elicitation ts-url-1)" in done.stderr
    declined = subprocess.run(
        [*argv[:6], "--decline-elicitations", "go"],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        check=False,
    )
    assert declined.returncode == 0, declined.stderr
    assert "form: decline null" in declined.stdout
    assert "url: decline" in declined.stdout
