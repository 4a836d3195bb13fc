"""``acpio batch`` and the prompts file it reads."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from acpio.pool.batch import BatchPrompt, PromptFileError, read_prompts
from tests.pool._support import sqlite_testy


def test_prompts_are_read_from_json_lines_with_ids_defaulting_to_the_line_number() -> None:
    lines = [
        '{"prompt": "one", "id": "a"}',
        "",
        '{"prompt": "two", "cwd": "/tmp"}',
        '{"prompt": "three", "id": 7}',
    ]
    assert read_prompts(lines) == [
        BatchPrompt("one", "a"),
        BatchPrompt("two", "3", "/tmp"),
        BatchPrompt("three", "7"),
    ]


def test_every_bad_line_is_named_before_anything_runs() -> None:
    lines = [
        "not json",
        '["a list"]',
        '{"id": "x"}',
        '{"prompt": "p", "extra": 1}',
        '{"prompt": "a", "id": 2}',
    ]
    with pytest.raises(PromptFileError) as caught:
        read_prompts([*lines, '{"prompt": "b", "id": "2"}'])
    message = str(caught.value)
    assert "line 1: not JSON: Expecting value at column 1" in message
    assert "line 1 column" not in message  # json's own position would name a line 1 of every line
    assert "line 2: expected a JSON object, not list" in message
    assert 'line 3: "prompt" must be non-empty text' in message
    assert "line 4: unknown key(s) 'extra'" in message
    assert "line 6: the id '2' is taken by an earlier line (ids are unique)" in message


@pytest.mark.slow
def test_acpio_batch_runs_the_prompts_over_a_pool_and_writes_json_lines(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    lines = [
        {"prompt": "echo hello\ntool Look around\nusage", "id": "hello"},
        {"prompt": "hang 30", "id": "wedged"},
        {"prompt": "echo going\nexit 3 testy crashed on purpose", "id": "crash"},
        {"prompt": "just echo me"},
    ]
    prompts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    agent = " ".join(sqlite_testy(tmp_path / "t.db"))
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "batch", "--agent", agent, "--size", "2", "--timeout", "1.5",
         "--grace", "0.3", "--cwd", str(tmp_path), str(prompts)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr  # not every turn ended end_turn
    results = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    assert sorted(results) == ["4", "crash", "hello", "wedged"]
    hello = results["hello"]
    assert hello["ok"] is True
    assert hello["text"] == "hello\n"
    assert [call["title"] for call in hello["tool_calls"]] == ["Look around"]
    assert hello["usage"]["context_size"] == 200_000
    assert results["4"]["text"] == "just echo me"
    wedged = results["wedged"]
    assert wedged["stop_reason"] == "cancelled"
    assert [e["event"] for e in wedged["events"]] == [
        "TurnTimedOut", "CancelSent", "TurnAbandoned", "ProcessKilled", "ProcessStarted", "SessionResumed",
    ]  # fmt: skip
    crash = results["crash"]
    assert crash["ok"] is False
    assert "exited with exit code 3" in crash["error"]
    assert "testy crashed on purpose" in crash["stderr_tail"]
    assert crash["events"][0]["event"] == "ProcessDied"
    stderr = done.stderr
    assert "acpio batch: ProcessKilled(slot=" in stderr
    assert "acpio batch: [4/4] " in stderr
    assert "acpio batch: 4 prompts, 2 ok, 2 not ok" in stderr


def test_acpio_batch_refuses_a_bad_prompts_file(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "fine"}\n{"text": "wrong key"}\n')
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "batch", "--agent", "acpio testy", str(prompts)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stdout == ""
    assert "acpio: error: " in done.stderr
    assert "line 2: unknown key(s) 'text'" in done.stderr


POLICY = """
default = "deny"

[[rule]]
name = "publishing"
action = "deny"
title = "*publish*"

[[rule]]
name = "edits"
action = "allow"
kind = "edit"
"""


def test_acpio_batch_answers_permissions_by_a_policy_file(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    prompts = tmp_path / "prompts.jsonl"
    lines = [
        {"prompt": "permission Fix the typo\necho fixed", "id": "edit"},
        {"prompt": "permission Publish the notes\necho published", "id": "publish"},
        {"prompt": "run echo hi", "id": "command"},
    ]
    prompts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "batch", "--agent", " ".join(sqlite_testy(tmp_path / "t.db")),
         "--size", "2", "--policy", str(policy), "--cwd", str(tmp_path), "--quiet", str(prompts)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    asked = {key: [(p["option_id"], p["allowed"]) for p in r["permissions"]] for key, r in results.items()}
    assert asked == {
        "edit": [("allow-once", True)],
        "publish": [("reject-once", False)],
        "command": [("refuse", False)],  # no rule for echo: the default refuses to run it
    }
    assert results["edit"]["text"].endswith("fixed\n")
    assert "published" not in results["publish"]["text"]


def test_acpio_batch_names_the_line_of_a_bad_policy_file(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('default = "deny"\n\n[[rule]]\naction = "allow"\nkinds = "edit"\n')
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "echo hi"}\n')
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "batch", "--agent", "acpio testy", "--policy", str(policy),
         str(prompts)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"--policy: {policy}:5: " in done.stderr
    assert "kinds" in done.stderr


def test_acpio_batch_answers_the_agents_forms_from_the_values_given(tmp_path: Path) -> None:
    prompts = tmp_path / "prompts.jsonl"
    lines = [{"prompt": "elicit Who are you?", "id": "first"}, {"prompt": "elicit", "id": "second"}]
    prompts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"name": "Ada", "tags": ["python"]}))
    testy = shlex.join([sys.executable, "-m", "acpio", "testy"])
    done = subprocess.run(
        [sys.executable, "-m", "acpio", "batch", "--agent", testy, "--size", "1", "--answers", str(answers),
         "--answer", "age=36", "--cwd", str(tmp_path), "--quiet", str(prompts)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    results = {r["id"]: r for r in map(json.loads, done.stdout.splitlines())}
    sent = {"name": "Ada", "age": 36, "subscribe": False, "colour": "green", "tags": ["python"]}
    for key in ("first", "second"):  # the same values for every form asking those fields
        [form] = results[key]["forms"]
        assert (form["action"], form["content"]) == ("accept", sent)
    assert 'elicitation: accept {"age":36,' in results["first"]["text"]  # what the agent received
