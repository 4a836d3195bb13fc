"""``acpio check`` finds the one fault of each broken agent, by requirement id, and passes the unbroken one.

``broken_agent.py`` keeps every rule but the one its ``--fault`` breaks. Each test runs the whole
check against it (the v1 connection, the version probe and one connection per editor profile,
side by side) and expects exactly the requirements that fault breaks to fail.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import pytest

from acpio.check import CheckOptions, CheckReport, Outcome, Tier, check_agent

BROKEN = (sys.executable, str(Path(__file__).with_name("broken_agent.py")))
#: Short answers: the broken agent answers at once, except where the fault is a hang.
OPTIONS = CheckOptions(timeout=3.0)

FAULTS = {
    "stdout-noise": {"V1-STDOUT-001"},
    "version-echo": {"V1-INIT-003"},
    "reused-session-id": {"V1-SESSION-002"},
    "empty-session-id": {"V1-SESSION-001"},
    "no-cancelled": {"V1-CANCEL-001"},
    "permission-cancel-ignored": {"V1-CANCEL-002"},
    "hang-on-cancel": {"V1-CANCEL-001"},
    "late-update": {"V1-PROMPT-002"},
    "fs-without-capability": {"V1-CLIENTCAP-001"},
    "wrong-unknown-code": {"V1-JSONRPC-003"},
    "malformed-error": {"V1-JSONRPC-002"},
    "answers-notification": {"V1-JSONRPC-004"},
    "early-update": {"EDITOR-001"},
    "load-after-answer": {"V1-LOAD-001"},
    "resume-replays": {"V1-RESUME-001"},
    "terminal-assumed": {"EDITOR-002"},
    "no-exit": {"V1-SHUTDOWN-001"},
}


def failures(report: CheckReport) -> str:
    return "\n".join(f"{v.requirement.id}: {v.details}" for v in report.verdicts if v.outcome is Outcome.FAIL)


@pytest.mark.parametrize("fault", FAULTS)
async def test_the_check_finds_the_fault_by_requirement_id(fault: str) -> None:
    # the editor connections only where the fault is an editor's (three processes fewer elsewhere)
    editors = OPTIONS.editors if any(r.startswith("EDITOR-") for r in FAULTS[fault]) else ()
    report = await check_agent((*BROKEN, "--fault", fault), replace(OPTIONS, editors=editors))
    assert report.failed_ids() == FAULTS[fault], failures(report)
    mandatory = any(v.requirement.tier is Tier.MANDATORY for v in report.failures())
    assert report.exit_code() == (1 if mandatory else 0)


async def test_a_banner_on_stdout_is_quoted_and_sent_to_stderr() -> None:
    report = await check_agent((*BROKEN, "--fault", "stdout-noise"), replace(OPTIONS, editors=()))
    [verdict] = report.failures()
    assert verdict.details == (
        "the agent wrote 'broken agent 1.0 starting' on its stdout, not JSON: only ACP's JSON-RPC "
        "messages go there, one a line; write logs and banners to stderr",
    )


async def test_the_unbroken_agent_passes_every_requirement_of_every_tier() -> None:
    report = await check_agent(BROKEN, OPTIONS)
    assert not report.failed_ids(), failures(report)
    skipped = {v.requirement.id: v.details for v in report.verdicts if v.outcome is Outcome.SKIP}
    assert not skipped
    assert report.exit_code(strict=True) == 0


async def test_a_capability_failure_fails_the_check_only_when_strict() -> None:
    report = await check_agent((*BROKEN, "--fault", "load-after-answer"), OPTIONS)
    assert [v.requirement.tier for v in report.failures(strict=True)] == [Tier.CAPABILITY]
    assert report.exit_code() == 0
    assert report.exit_code(strict=True) == 1


V2_FAULTS = {"v2-no-cancelled": {"V2-CANCEL-001"}, "v2-fs-request": {"V2-V1GONE-001"}}
V2 = replace(OPTIONS, protocol="2")


@pytest.mark.parametrize("fault", V2_FAULTS)
async def test_the_v2_check_finds_the_fault_of_a_v2_agent(fault: str) -> None:
    report = await check_agent((*BROKEN, "--v2", "--fault", fault), V2)
    assert report.failed_ids() == V2_FAULTS[fault], failures(report)
    assert report.exit_code() == 1


async def test_the_unbroken_v2_agent_passes_the_v2_requirements() -> None:
    report = await check_agent((*BROKEN, "--v2"), V2)
    assert [v.requirement.id for v in report.verdicts if v.outcome is not Outcome.PASS] == []
    assert {v.requirement.protocol for v in report.verdicts} == {2}


def test_every_fault_of_the_broken_agent_is_checked() -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from broken_agent import FAULTS as AGENT_FAULTS  # type: ignore[import-not-found]
        from broken_agent import V2_FAULTS as AGENT_V2_FAULTS
    finally:
        sys.path.pop(0)
    assert set(AGENT_FAULTS) == set(FAULTS)
    assert set(AGENT_V2_FAULTS) == set(V2_FAULTS)
