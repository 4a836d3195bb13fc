"""The policy proxy in a real chain: `acpio proxy policy FILE` between a client and `acpio testy`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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
