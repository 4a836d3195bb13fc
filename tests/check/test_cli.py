"""``acpio check`` on the command line: the table, ``--json``, ``--junit`` for CI, the exit code by tier."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest

import acpio

BROKEN = [sys.executable, str(Path(__file__).with_name("broken_agent.py"))]
SOURCE = str(Path(acpio.__file__).resolve().parents[1])


def check(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": SOURCE}
    command = [sys.executable, "-m", "acpio", "check", "--timeout", "5", "--editors", "none", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


def test_a_mandatory_failure_exits_1_and_the_junit_file_names_it(tmp_path: Path) -> None:
    junit = tmp_path / "check.xml"
    done = check("--junit", str(junit), "--", *BROKEN, "--fault", "version-echo")
    assert done.returncode == 1, done.stderr
    assert re.search(r"^V1-INIT-003 +MANDATORY +FAIL +a client asking for a version", done.stdout, re.M)
    assert "asked for 65535, got" in done.stdout
    assert done.stdout.rstrip().endswith("1 MANDATORY failure(s) fail the check")
    suite = ElementTree.parse(junit).getroot()
    failed = [case.get("name", "") for case in suite.iter("testcase") if case.find("failure") is not None]
    assert [name.split(":")[0] for name in failed] == ["V1-INIT-003"]
    assert suite.get("failures") == "1"


@pytest.mark.slow  # two checks, one after the other: over ten seconds on a busy machine
def test_a_capability_failure_fails_only_with_strict() -> None:
    args = ("--json", "--", *BROKEN, "--fault", "load-after-answer")
    lenient, strict = check(*args), check("--strict", *args)
    assert lenient.returncode == 0, lenient.stderr
    assert strict.returncode == 1, strict.stderr
    report = json.loads(lenient.stdout)
    assert report["passed"] is True
    failed = [r for r in report["results"] if r["outcome"] == "fail"]
    assert [(r["id"], r["tier"]) for r in failed] == [("V1-LOAD-001", "CAPABILITY")]
    assert failed[0]["spec"] == "https://agentclientprotocol.com/protocol/session-setup#loading-a-session"
    assert json.loads(strict.stdout)["passed"] is False


def test_an_agent_that_cannot_be_run_is_a_usage_error() -> None:
    done = check("--", "no-such-agent-program", "--acp")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "acpio: error: cannot run 'no-such-agent-program': no such program on PATH, or it is not executable"
    )
    done = check("--editors", "vscode", "--", *BROKEN)
    assert done.returncode == 2
    assert "--editors: no profile vscode; the profiles are zed, jetbrains, codecompanion" in done.stderr


def test_v2_requirements_fail_for_an_agent_that_speaks_only_v1() -> None:
    done = check("--protocol", "2", "--json", "--", *BROKEN)
    assert done.returncode == 1
    report = json.loads(done.stdout)
    outcomes = {r["id"]: r["outcome"] for r in report["results"]}
    assert outcomes["V2-INIT-001"] == outcomes["V2-INIT-002"] == "fail"
    assert all(r["protocol"] == 2 for r in report["results"])
