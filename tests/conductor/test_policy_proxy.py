"""The policy proxy in a real chain: `acpio proxy policy FILE` between a client and `acpio testy`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from acpio import Client
from acpio import schema as acp
from acpio.transports import AcpAgent

from ._support import PYTHON, ROOT

TESTY = f"{PYTHON} -m acpio testy"
POLICY = """
default = "ask"

[[rule]]
name = "notes"
action = "allow"
title = "Rewrite notes*"

[[rule]]
name = "no deleting"
action = "deny"
title = "Delete *"
"""


async def test_the_proxy_decides_what_its_rules_say_and_asks_the_client_the_rest(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    trace = tmp_path / "run.jsons"
    conductor = [PYTHON, "-m", "acpio", "conductor", "--trace", str(trace), "agent"]
    chain = AcpAgent([*conductor, f"{PYTHON} -m acpio proxy policy {policy}", TESTY], cwd=ROOT)
    asked: list[str | None] = []

    async def client_answers(request: acp.RequestPermissionRequest) -> str:
        asked.append(request.tool_call.title)
        return "allow-always"

    script = "\n".join(
        [
            "permission Rewrite notes",  # the rule allows: the client is not asked
            "permission Publish it",  # the default asks: the client answers allow-always
            "permission Publish it",  # the grant answers: not asked again
            "permission Delete everything",  # the rule denies
            "echo not reached",
        ]
    )

    async def main(cx: Any) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(tmp_path).start_session() as session:
            session.send_prompt(script)
            return await session.read_to_string(permissions=client_answers)

    text = await Client.builder().connect_with(chain, main)
    assert asked == ["Publish it"]
    assert text == (
        "permission: allow-once\n"
        "permission: allow-always\n"
        "permission: allow-once\n"
        "permission: reject-once\n"
        "Permission denied: stopping.\n"
    )
    # every decision, in the trace, from the proxy's stderr
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    audit = [
        json.loads(event["line"].removeprefix("acpio-policy "))
        for event in events
        if event["type"] == "stderr" and event["line"].startswith("acpio-policy ")
    ]
    assert [(a["title"], a["rule"], a["decidedBy"], a["optionId"]) for a in audit] == [
        ("Rewrite notes", "notes", "rule", "allow-once"),
        ("Publish it", "default", "asked", "allow-always"),
        ("Publish it", "default", "grant", "allow-once"),
        ("Delete everything", "no deleting", "rule", "reject-once"),
    ]
    assert all(event["from"] == "Proxy(0)" for event in events if event["type"] == "stderr")
    # the client saw one permission request, the agent got four answers
    requests = [e for e in events if e["type"] == "request" and e["method"] == "session/request_permission"]
    assert [e["to"] for e in requests] == ["Proxy(0)", "Proxy(0)", "Client", "Proxy(0)", "Proxy(0)"]


def test_a_broken_policy_file_stops_the_proxy_with_one_line(tmp_path: Path) -> None:
    import subprocess

    policy = tmp_path / "policy.toml"
    policy.write_text('[[rule]]\nation = "allow"\n')
    done = subprocess.run(
        [PYTHON, "-m", "acpio", "proxy", "policy", str(policy)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"acpio: error: {policy}:2: rule 1, key 'ation': unknown key 'ation' (did you mean 'action'?)"
    )


async def test_the_proxy_merges_the_earlier_tool_call_and_resolves_paths_in_the_sessions_cwd(
    tmp_path: Path,
) -> None:
    """AgentApp asks with the tool call's id and title only: the kind and paths come from its tool_call."""
    from acpio import AgentApp, StopReasonName, Turn
    from acpio.client import PolicyDecision, Rule, RulePolicy
    from acpio.conductor import Chain
    from acpio.proxies import policy_proxy

    agent = AgentApp("editor", version="1.0")

    @agent.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        for path in ("docs/a.md", "docs/../../outside.md"):
            async with turn.tool_call(f"Edit {path}", kind="edit", locations=[path]) as call:
                allowed = await turn.ask_permission(call)
                await turn.say(f"{path}: {'allowed' if allowed else 'refused'}\n")
        return "end_turn"

    decisions: list[PolicyDecision] = []
    policy = RulePolicy([Rule("allow", kind=("edit",), paths=("docs/**",))], default="deny")
    chain = Chain.agent("conductor", [policy_proxy(policy, on_decision=decisions.append), agent.component()])
    asked: list[str] = []

    async def client_answers(request: acp.RequestPermissionRequest) -> str:
        asked.append(str(request.tool_call.title))
        return "allow"

    async def main(cx: Any) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(tmp_path).start_session() as session:
            session.send_prompt("go")
            return await session.read_to_string(permissions=client_answers)

    text = await Client.builder().connect_with(chain, main)
    assert text == "docs/a.md: allowed\ndocs/../../outside.md: refused\n"
    assert asked == []  # the policy decided both
    assert [(d.subject.kind, d.subject.paths, d.rule) for d in decisions] == [
        ("edit", (str(tmp_path / "docs/a.md"),), "rule 1"),
        ("edit", (str(tmp_path / "docs/../../outside.md"),), "default"),
    ]


def _audit(stderr: str) -> list[dict[str, Any]]:
    """The decisions the proxy wrote on stderr (its ``acpio-policy`` lines)."""
    prefix = "acpio-policy "
    return [json.loads(line.removeprefix(prefix)) for line in stderr.splitlines() if line.startswith(prefix)]


async def test_on_v2_the_proxy_decides_forwards_what_it_asks_and_answers_in_v2_shape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The v1 test's script, on v2: testy asks with a ``title`` and a tool-call ``subject``."""
    from acpio.agents.testy.serve import testy_component
    from acpio.client.policy_file import parse_policy
    from acpio.proxies import policy_proxy

    from .test_v2_chain import v2_chain

    rules = parse_policy(POLICY, "policy.toml")
    asked: list[dict[str, Any]] = []

    def client_answers(message: dict[str, Any]) -> dict[str, Any]:
        asked.append(message["params"])
        return {"outcome": "selected", "optionId": "allow-always"}

    script = "\n".join(
        [
            "permission Rewrite notes",
            "permission Publish it",
            "permission Publish it",
            "permission Delete everything",
            "echo not reached",
        ]
    )
    async with v2_chain(policy_proxy(rules), agent=testy_component(protocols=(2,))) as peer:
        await peer.initialize()
        session = await peer.new_session(str(tmp_path))
        turn = await peer.turn(session, script, permission=client_answers)
    # the client was asked once, in v2's shape (the agent's request as it sent it)
    assert [(params["title"], params["subject"]["type"]) for params in asked] == [("Publish it", "tool_call")]
    assert asked[0]["subject"]["toolCall"]["kind"] == "edit"
    # the agent read four v2 answers
    assert turn.text() == (
        "permission: allow-once\n"
        "permission: allow-always\n"
        "permission: allow-once\n"
        "permission: reject-once\n"
        "Permission denied: stopping.\n"
    )
    audit = _audit(capsys.readouterr().err)
    assert [
        (a["session"], a["title"], a["kind"], a["rule"], a["decidedBy"], a["optionId"]) for a in audit
    ] == [
        (session, "Rewrite notes", "edit", "notes", "rule", "allow-once"),
        (session, "Publish it", "edit", "default", "asked", "allow-always"),
        (session, "Publish it", "edit", "default", "grant", "allow-once"),
        (session, "Delete everything", "edit", "no deleting", "rule", "reject-once"),
    ]


async def test_on_v2_tool_calls_are_merged_paths_resolved_in_the_cwd_and_commands_judged_as_commands(
    tmp_path: Path,
) -> None:
    """An AgentApp on v2 asks about edits (the call's id and title only) and about commands (a subject)."""
    from acpio import AgentApp, StopReasonName, Turn
    from acpio.client import PolicyDecision, Rule, RulePolicy
    from acpio.proxies import policy_proxy
    from acpio.schema import v2

    from .test_v2_chain import v2_chain

    agent = AgentApp("editor", version="1.0", protocols=(2,))

    @agent.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        for path in ("docs/a.md", "docs/../../outside.md"):
            async with turn.tool_call(f"Edit {path}", kind="edit", locations=[path]) as call:
                allowed = await turn.ask_permission(call)
                await turn.say(f"{path}: {'allowed' if allowed else 'refused'}\n")
        for command in ("git status", "make test", "rm -rf build"):
            options = [
                v2.PermissionOption(option_id="yes", name="Run", kind="allow_once"),
                v2.PermissionOption(option_id="no", name="Skip", kind="reject_once"),
            ]
            subject = v2.CommandPermissionSubject(command=command, cwd=str(tmp_path))
            request = v2.RequestPermissionRequest(
                session_id=turn.session_id, title="Run", subject=subject, options=options
            )
            async with turn.waiting_for_user():
                answer = await turn.cx.send_request(request)
            await turn.say(f"{command}: {getattr(answer.outcome, 'option_id', 'cancelled')}\n")
        return "end_turn"

    decisions: list[PolicyDecision] = []
    rules = [
        Rule("allow", kind=("edit",), paths=("docs/**",)),
        Rule("allow", argv=("git status*",)),
        Rule("ask", command=("make",)),
    ]
    policy = RulePolicy(rules, default="deny")
    asked: list[dict[str, Any]] = []

    def client_answers(message: dict[str, Any]) -> dict[str, Any]:
        asked.append(message["params"])
        return {"outcome": "selected", "optionId": "yes"}

    async with v2_chain(policy_proxy(policy, on_decision=decisions.append), agent=agent.component()) as peer:
        await peer.initialize()
        session = await peer.new_session(str(tmp_path))
        turn = await peer.turn(session, "go", permission=client_answers)
    assert turn.text() == (
        "docs/a.md: allowed\ndocs/../../outside.md: refused\n"
        "git status: yes\nmake test: yes\nrm -rf build: no\n"
    )
    # only the command the rules ask about reached the client, as the agent sent it
    assert [params["subject"] for params in asked] == [
        {"type": "command", "command": "make test", "cwd": str(tmp_path)}
    ]
    assert [
        (d.subject.kind, d.subject.paths, d.subject.argv, d.rule, d.decided_by, d.option_id)
        for d in decisions
    ] == [
        ("edit", (str(tmp_path / "docs/a.md"),), None, "rule 1", "rule", "allow"),
        ("edit", (str(tmp_path / "docs/../../outside.md"),), None, "default", "default", "deny"),
        ("execute", (), ("git", "status"), "rule 2", "rule", "yes"),
        ("execute", (), ("make", "test"), "rule 3", "asked", "yes"),
        ("execute", (), ("rm", "-rf", "build"), "default", "default", "no"),
    ]
    assert decisions[2].subject.title == f"Run: $ git status in {tmp_path}"
    assert (decisions[2].subject.cwd, decisions[2].subject.inferred) == (str(tmp_path), None)


async def test_on_v2_a_resumed_session_resolves_paths_in_the_cwd_it_is_resumed_in(tmp_path: Path) -> None:
    """A proxy that never saw the session's ``session/new`` learns its root from ``session/resume``."""
    from acpio import AgentApp, StopReasonName, Turn
    from acpio.client import PolicyDecision, Rule, RulePolicy
    from acpio.proxies import policy_proxy

    from .test_v2_chain import v2_chain

    agent = AgentApp("editor", version="1.0", protocols=(2,))

    @agent.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        async with turn.tool_call("Edit docs/a.md", kind="edit", locations=["docs/a.md"]) as call:
            allowed = await turn.ask_permission(call)
        await turn.say("allowed\n" if allowed else "refused\n")
        return "end_turn"

    def proxy(decisions: list[PolicyDecision]) -> Any:
        policy = RulePolicy([Rule("allow", kind=("edit",), paths=("docs/**",))], default="deny")
        return policy_proxy(policy, on_decision=decisions.append)

    async with v2_chain(proxy([]), agent=agent.component()) as peer:
        await peer.initialize()
        session = await peer.new_session(str(tmp_path))
    decisions: list[PolicyDecision] = []
    async with v2_chain(proxy(decisions), agent=agent.component()) as peer:
        await peer.initialize()
        resumed = await peer.call("session/resume", {"sessionId": session, "cwd": str(tmp_path)})
        assert "result" in resumed, resumed
        turn = await peer.turn(session, "edit")
    assert turn.text() == "allowed\n"
    assert [(d.subject.paths, d.rule) for d in decisions] == [((str(tmp_path / "docs/a.md"),), "rule 1")]
