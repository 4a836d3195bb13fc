"""RulePolicy: each rule type, grants bound to what was granted, offered options only, the audit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acpio import schema as acp
from acpio.client import (
    AllowPolicy,
    PolicyDecision,
    Rule,
    RulePolicy,
    decide_permission,
)
from acpio.session import ToolCallView
from acpio.session.turn_view import DiffView, FileChange

OPTIONS = [
    acp.PermissionOption(option_id="yes", name="Allow", kind=acp.PermissionOptionKind.ALLOW_ONCE),
    acp.PermissionOption(option_id="always", name="Always", kind=acp.PermissionOptionKind.ALLOW_ALWAYS),
    acp.PermissionOption(option_id="no", name="Reject", kind=acp.PermissionOptionKind.REJECT_ONCE),
]
REJECT_ONLY = [OPTIONS[2]]


def request(options: list[acp.PermissionOption] | None = None, **call: Any) -> acp.RequestPermissionRequest:
    tool_call = acp.ToolCallUpdate(tool_call_id=call.pop("tool_call_id", "t1"), **call)
    return acp.RequestPermissionRequest(session_id="s1", tool_call=tool_call, options=options or OPTIONS)


def chosen(outcome: acp.SelectedPermissionOutcome | acp.CancelledPermissionOutcome) -> str:
    return outcome.option_id if isinstance(outcome, acp.SelectedPermissionOutcome) else "cancelled"


def execute(command: str, *args: str, cwd: str | None = None, env: dict[str, str] | None = None) -> Any:
    raw: dict[str, Any] = {"command": command, "args": list(args)}
    if cwd is not None:
        raw["cwd"] = cwd
    if env is not None:
        raw["env"] = env
    return request(kind=acp.ToolKind.EXECUTE, title=" ".join([command, *args]), raw_input=raw)


class Asker:
    """Whoever is asked: answers with ``answer`` and counts the questions."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked: list[acp.RequestPermissionRequest] = []

    async def decide(self, req: acp.RequestPermissionRequest) -> acp.SelectedPermissionOutcome:
        self.asked.append(req)
        return acp.SelectedPermissionOutcome(option_id=self.answer)


async def test_kind_rule_and_default(tmp_path: Path) -> None:
    policy = RulePolicy([Rule("allow", kind=("read",))], default="deny", root=tmp_path)
    assert chosen(await policy.decide(request(kind=acp.ToolKind.READ))) == "yes"
    assert chosen(await policy.decide(request(kind=acp.ToolKind.EDIT))) == "no"
    assert [d.rule for d in policy.decisions] == ["rule 1", "default"]


async def test_a_policy_in_code_needs_only_top_level_names(tmp_path: Path) -> None:
    # acpio exports RulePolicy and load_policy; a RulePolicy is made of Rules, so they are there too.
    import acpio

    policy = acpio.RulePolicy([acpio.Rule("allow", kind=("edit",))], default="deny", root=tmp_path)
    assert chosen(await policy.decide(request(kind=acp.ToolKind.EDIT))) == "yes"
    assert chosen(await policy.decide(request(kind=acp.ToolKind.EXECUTE))) == "no"


async def test_first_matching_rule_wins(tmp_path: Path) -> None:
    rules = [Rule("deny", name="no secrets", any_path=("**/.env",)), Rule("allow", kind=("edit",))]
    policy = RulePolicy(rules, default="ask", root=tmp_path)
    locations = [acp.ToolCallLocation(path="src/a.py"), acp.ToolCallLocation(path="config/.env")]
    outcome = await policy.decide(request(kind=acp.ToolKind.EDIT, locations=locations))
    assert chosen(outcome) == "no"
    assert policy.decisions[-1].rule == "no secrets"
    outcome = await policy.decide(request(kind=acp.ToolKind.EDIT, locations=locations[:1]))
    assert chosen(outcome) == "yes"


async def test_title_rule(tmp_path: Path) -> None:
    policy = RulePolicy([Rule("allow", title=("Read *",))], default="deny", root=tmp_path)
    assert chosen(await policy.decide(request(title="Read notes.txt"))) == "yes"
    assert chosen(await policy.decide(request(title="Write notes.txt"))) == "no"


async def test_paths_resolved_inside_the_root(tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    (root / "src" / "link").symlink_to(tmp_path / "outside")
    policy = RulePolicy([Rule("allow", paths=("src/**",))], default="deny", root=root)

    async def verdict(path: str) -> str:
        return chosen(
            await policy.decide(request(kind=acp.ToolKind.EDIT, locations=[acp.ToolCallLocation(path=path)]))
        )

    assert await verdict("src/app/main.py") == "yes"
    assert await verdict(str(root / "src" / "x.py")) == "yes"  # absolute, inside
    assert await verdict("src/../../outside/x.py") == "no"  # a ../ escape
    assert await verdict("src/link/x.py") == "no"  # a symlink out of the root
    assert await verdict("README.md") == "no"  # inside, but not under src
    # a call naming no path never matches `paths`
    assert chosen(await policy.decide(request(kind=acp.ToolKind.EDIT))) == "no"


async def test_outside_root_rule(tmp_path: Path) -> None:
    policy = RulePolicy([Rule("deny", outside_root=True), Rule("allow")], root=tmp_path)
    inside = request(locations=[acp.ToolCallLocation(path="a.txt")])
    outside = request(
        locations=[acp.ToolCallLocation(path="/etc/passwd"), acp.ToolCallLocation(path="a.txt")]
    )
    assert chosen(await policy.decide(inside)) == "yes"
    assert chosen(await policy.decide(outside)) == "no"


async def test_command_argv_and_shell_scripts(tmp_path: Path) -> None:
    rules = [Rule("allow", command=("git",), argv=("git status*", "git diff *"))]
    policy = RulePolicy(rules, default="deny", root=tmp_path)
    assert chosen(await policy.decide(execute("git", "status"))) == "yes"
    assert chosen(await policy.decide(execute("/usr/bin/git", "diff", "--stat"))) == "no"  # argv glob
    assert chosen(await policy.decide(execute("git", "push"))) == "no"
    # a command string with shell syntax is a script for sh, not git's argv
    script = request(kind=acp.ToolKind.EXECUTE, raw_input={"command": "git status; rm -rf ~"})
    assert chosen(await policy.decide(script)) == "no"
    assert policy.decisions[-1].subject.argv == ("sh", "-c", "git status; rm -rf ~")
    words = request(kind=acp.ToolKind.EXECUTE, raw_input={"command": "git status --short"})
    assert chosen(await policy.decide(words)) == "yes"


async def test_env_rule(tmp_path: Path) -> None:
    rules = [Rule("deny", name="loader", env=("LD_*", "PATH")), Rule("allow", kind=("execute",))]
    policy = RulePolicy(rules, root=tmp_path)
    assert chosen(await policy.decide(execute("make", env={"LD_PRELOAD": "/tmp/x.so"}))) == "no"
    assert chosen(await policy.decide(execute("make", env={"CC": "clang"}))) == "yes"
    assert policy.decisions[0].to_json()["env"] == ["LD_PRELOAD"]  # names only, never values


async def test_mcp_server_rule(tmp_path: Path) -> None:
    policy = RulePolicy([Rule("allow", mcp_server=("notes",))], default="deny", root=tmp_path)
    assert chosen(await policy.decide(request(title="mcp__notes__add"))) == "yes"
    assert chosen(await policy.decide(request(name="mcp__web__fetch", title="Fetch"))) == "no"


async def test_ask_and_allow_always_grant_bound_to_argv_and_cwd(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    asker = Asker("always")
    policy = RulePolicy([], default="ask", root=tmp_path, ask=asker)
    assert chosen(await policy.decide(execute("npm", "test"))) == "always"
    assert len(asker.asked) == 1
    # the same command in the same directory: the grant answers, nobody is asked
    assert chosen(await policy.decide(execute("npm", "test", cwd=str(tmp_path)))) == "yes"
    assert len(asker.asked) == 1
    assert policy.decisions[-1].decided_by == "grant"
    # another argument, another directory, another session: asked again
    await policy.decide(execute("npm", "test", "--all"))
    await policy.decide(execute("npm", "test", cwd=str(tmp_path / "other")))
    other_session = execute("npm", "test").model_copy(update={"session_id": "s2"})
    await policy.decide(other_session)
    assert len(asker.asked) == 4


async def test_allow_once_is_used_up(tmp_path: Path) -> None:
    asker = Asker("yes")
    policy = RulePolicy([], root=tmp_path, ask=asker)
    await policy.decide(execute("npm", "test"))
    await policy.decide(execute("npm", "test"))
    assert len(asker.asked) == 2


async def test_grants_never_override_a_deny_rule(tmp_path: Path) -> None:
    asker = Asker("always")
    policy = RulePolicy([Rule("deny", argv=("rm *",))], root=tmp_path, ask=asker)
    assert chosen(await policy.decide(execute("rm", "-rf", "build"))) == "no"
    assert asker.asked == []


async def test_never_an_unoffered_option(tmp_path: Path) -> None:
    policy = RulePolicy([Rule("allow")], root=tmp_path)
    assert chosen(await policy.decide(request(REJECT_ONLY))) == "no"
    assert "offered no allow option" in policy.decisions[-1].reason
    reject_always = acp.PermissionOption(
        option_id="nope", name="No", kind=acp.PermissionOptionKind.REJECT_ALWAYS
    )
    assert chosen(await policy.decide(request([reject_always]))) == "nope"
    deny = RulePolicy([Rule("deny")], root=tmp_path)
    assert chosen(await deny.decide(request(OPTIONS[:2]))) == "cancelled"
    assert "offered no reject option" in deny.decisions[-1].reason
    # whoever is asked cannot choose an option the agent did not offer either
    liar = RulePolicy([], root=tmp_path, ask=Asker("sudo"))
    assert chosen(await liar.decide(request())) == "cancelled"
    assert "did not offer" in liar.decisions[-1].reason


async def test_ask_with_no_one_to_ask_refuses_and_says_so(tmp_path: Path) -> None:
    policy = RulePolicy([], default="ask", root=tmp_path)
    assert chosen(await policy.decide(request())) == "no"
    assert "no one to ask" in policy.decisions[-1].reason


async def test_kind_inferred_from_the_call_and_audited(tmp_path: Path) -> None:
    policy = RulePolicy([Rule("allow", kind=("edit",), paths=("**",))], default="deny", root=tmp_path)
    diff = acp.Diff(path=str(tmp_path / "notes.txt"), old_text="a", new_text="b")
    outcome = await policy.decide(request(title="Rewrite notes.txt", content=[diff]))
    assert chosen(outcome) == "yes"
    decision = policy.decisions[-1]
    assert decision.subject.kind == "edit"
    assert "inferred: the tool call carries a diff" in decision.reason
    await policy.decide(request(raw_input={"command": ["ls", "-l"]}))
    assert policy.decisions[-1].subject.kind == "execute"
    assert policy.decisions[-1].to_json()["kindInferred"] == "the tool call's rawInput holds a command"


async def test_decide_permission_hands_the_merged_view(tmp_path: Path) -> None:
    """The request repeats only the id; the view of the earlier tool_call has the kind and the diff."""
    policy = RulePolicy([Rule("allow", kind=("edit",), paths=("docs/**",))], default="deny", root=tmp_path)
    view = ToolCallView("t1", title="Edit docs/a.md", kind="edit")
    view.content.append(DiffView((FileChange("modify", str(tmp_path / "docs" / "a.md")),)))
    bare = request()
    assert chosen(await decide_permission(policy, bare, view)) == "yes"
    assert chosen(await decide_permission(policy, bare, None)) == "no"
    # a policy with decide(request) only still works through the same function
    assert chosen(await decide_permission(AllowPolicy(), bare, view)) == "yes"


async def test_audit_callback_gets_every_decision(tmp_path: Path) -> None:
    seen: list[PolicyDecision] = []
    policy = RulePolicy(
        [Rule("allow", name="reads", kind=("read",))], default="deny", root=tmp_path, on_decision=seen.append
    )
    await policy.decide(request(kind=acp.ToolKind.READ, title="Read a"))
    await policy.decide(request(kind=acp.ToolKind.EXECUTE, title="Run b"))
    assert [(d.rule, d.action, d.option_id, d.option_kind) for d in seen] == [
        ("reads", "allow", "yes", "allow_once"),
        ("default", "deny", "no", "reject_once"),
    ]
    record = seen[0].to_json()
    assert (record["title"], record["decidedBy"], record["reason"]) == ("Read a", "rule", "allowed by reads")


def test_a_rule_with_an_unknown_action_is_refused() -> None:
    with pytest.raises(ValueError, match="use one of allow, deny, ask"):
        Rule("permit")  # type: ignore[arg-type]


async def test_a_command_with_an_unclosed_quote_is_a_shell_script(tmp_path: Path) -> None:
    policy = RulePolicy([Rule("allow", command=("git",))], default="deny", root=tmp_path)
    raw = {"command": 'git commit -m "unfinished'}
    req = request(kind=acp.ToolKind.EXECUTE, title="commit", raw_input=raw)
    assert chosen(await policy.decide(req)) == "no"
    assert policy.decisions[-1].subject.argv == ("sh", "-c", 'git commit -m "unfinished')


async def test_a_relative_cwd_is_taken_in_the_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "project"
    (root / "deep").mkdir(parents=True)
    monkeypatch.chdir(root / "deep")  # the process runs somewhere inside the root
    policy = RulePolicy([Rule("allow", paths=("**",))], default="deny", root=root)
    # cwd ".." from the root is tmp_path: the file is outside the root
    req = request(
        kind=acp.ToolKind.EDIT,
        title="edit",
        locations=[acp.ToolCallLocation(path="x")],
        raw_input={"cwd": ".."},
    )
    assert chosen(await policy.decide(req)) == "no"


async def test_a_grant_for_a_path_does_not_cover_the_same_name_in_another_cwd(tmp_path: Path) -> None:
    asker = Asker("always")
    policy = RulePolicy([Rule("ask", kind=("edit",))], root=tmp_path, ask=asker)

    def edit(cwd: str | None) -> acp.RequestPermissionRequest:
        raw = {} if cwd is None else {"cwd": cwd}
        return request(
            kind=acp.ToolKind.EDIT,
            title="edit passwd",
            locations=[acp.ToolCallLocation(path="passwd")],
            raw_input=raw,
        )

    assert chosen(await policy.decide(edit(None))) == "always"
    asker.answer = "no"
    assert chosen(await policy.decide(edit("/etc"))) == "no"
    assert len(asker.asked) == 2
