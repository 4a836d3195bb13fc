"""``acpio prompt --policy FILE``: the real command against ``acpio testy``, both as processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_prompt_cli import one_error_line, prompt, script

POLICY = """
default = "deny"

[[rule]]
name = "notes"
action = "allow"
kind = "edit"
title = "Rewrite notes*"

[[rule]]
name = "pwd"
action = "allow"
command = "pwd"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "policy.toml").write_text(POLICY)
    return root


def test_the_policy_answers_permission_requests(project: Path) -> None:
    policy = str(project.parent / "policy.toml")
    done = prompt(
        project, "--policy", policy, script("permission Rewrite notes", "permission Publish it", "echo no")
    )
    assert done.returncode == 0, done.stderr
    assert "permission: allow-once" in done.stdout
    assert "[permission] Publish it: Reject (reject-once)" in done.stdout
    assert "Permission denied: stopping." in done.stdout
    assert "no\n" not in done.stdout
    # the audit of what no one was asked about, on stderr
    assert "acpio: policy: Rewrite notes: allow-once (allowed by notes)" in done.stderr
    assert "acpio: policy: Publish it: reject-once (denied by default)" in done.stderr


def test_the_policy_answers_the_agents_commands(project: Path) -> None:
    policy = str(project.parent / "policy.toml")
    done = prompt(project, "--policy", policy, script("run pwd", "run ls"))
    assert done.returncode == 0, done.stderr
    assert f"    {project.resolve()}\n" in done.stdout  # pwd ran, in the session's directory
    assert "[completed] pwd (execute)" in done.stdout
    assert "Refused to run ls: the policy refused it: denied by default" in done.stdout
    assert "acpio: policy: Run pwd: run (allowed by pwd)" in done.stderr


def test_a_broken_policy_file_is_one_error_line(project: Path) -> None:
    broken = project.parent / "broken.toml"
    broken.write_text('[[rule]]\naction = "alow"\n')
    done = prompt(project, "--policy", str(broken), "echo hi")
    assert done.returncode == 2
    line = one_error_line(done)
    assert f"{broken}:2: rule 1, key 'action': action = 'alow': write one of" in line
    missing = prompt(project, "--policy", str(project / "nope.toml"), "echo hi")
    assert "--policy " in one_error_line(missing)
    assert "no such file" in missing.stderr
