"""load_policy: the TOML form of a RulePolicy, its example file, and errors that say what to write."""

from __future__ import annotations

from pathlib import Path

import pytest

from acpio import schema as acp
from acpio.client import PolicyFileError, load_policy, parse_policy

EXAMPLE = Path(__file__).parents[2] / "examples" / "policy.toml"
OPTIONS = [
    acp.PermissionOption(option_id="yes", name="Allow", kind=acp.PermissionOptionKind.ALLOW_ONCE),
    acp.PermissionOption(option_id="no", name="Reject", kind=acp.PermissionOptionKind.REJECT_ONCE),
]


def request(**call: object) -> acp.RequestPermissionRequest:
    tool_call = acp.ToolCallUpdate.model_validate({"toolCallId": "t1", **call})
    return acp.RequestPermissionRequest(session_id="s1", tool_call=tool_call, options=OPTIONS)


async def test_the_example_file_decides_as_its_comments_say(tmp_path: Path) -> None:
    policy = load_policy(EXAMPLE, root=tmp_path)
    assert policy.default == "ask"
    cases = {
        "read the project": request(kind="read", locations=[{"path": "src/a.py"}]),
        "outside the project": request(kind="read", locations=[{"path": "../elsewhere/a.py"}]),
        "secrets": request(kind="read", locations=[{"path": "config/.env"}]),
        "edit sources": request(kind="edit", locations=[{"path": "src/a.py"}, {"path": "docs/x/b.md"}]),
        "git, read-only": request(kind="execute", rawInput={"command": "git", "args": ["diff", "--stat"]}),
        "tests": request(kind="execute", rawInput={"command": ["pytest", "-q"]}),
        "destructive commands": request(kind="execute", rawInput={"command": "rm", "args": ["-rf", "x"]}),
        "loader variables": request(kind="execute", rawInput={"command": "make", "env": {"LD_PRELOAD": "x"}}),
        "notes server": request(title="mcp__notes__add"),
        "publishing": request(title="Publish the results?"),
        "default": request(kind="edit", locations=[{"path": "setup.cfg"}]),
    }
    for rule, req in cases.items():
        assert policy.evaluate(req).rule == rule, rule
    outcome = await policy.decide(cases["read the project"])
    assert outcome == acp.SelectedPermissionOutcome(option_id="yes")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'default = "maybe"\n',
            r"policy\.toml:1: top level, key 'default': default = 'maybe': write one of \"allow\"",
        ),
        (
            'defualt = "ask"\n',
            r"policy\.toml:1: top level, key 'defualt': unknown key 'defualt' \(did you mean 'default'\?\)",
        ),
        (
            '[[rule]]\naction = "allow"\n\n[[rule]]\nname = "x"\naction = "permit"\n',
            r"policy\.toml:6: rule 2, key 'action': action = 'permit': write one of \"allow\", .*",
        ),
        (
            '[[rule]]\nname = "no action"\nkind = "read"\n',
            r"policy\.toml:1: rule 1: the rule has no action: add action = \"allow\"",
        ),
        (
            '[[rule]]\naction = "deny"\npath = ["**"]\n',
            r"policy\.toml:3: rule 1, key 'path': unknown key 'path' \(did you mean 'paths'\?\)",
        ),
        (
            '[[rule]]\naction = "deny"\nkind = "exec"\n',
            r"policy\.toml:3: rule 1, key 'kind': kind 'exec' is no tool kind \(did you mean 'execute'\?\)",
        ),
        (
            '[[rule]]\naction = "deny"\nargv = [1, 2]\n',
            r"policy\.toml:3: rule 1, key 'argv': argv = \[1, 2\]: write a string or a list of strings",
        ),
        (
            '[[rule]]\naction = "deny"\noutside_root = "yes"\n',
            r"policy\.toml:3: rule 1, key 'outside_root': .*write true or false",
        ),
        (
            '[rule]\naction = "deny"\n',
            r"policy\.toml: top level, key 'rule': rules are written as \[\[rule\]\] tables",
        ),
        ('[[rule]\naction = "deny"\n', r"policy\.toml:1: not valid TOML .*see examples/policy\.toml"),
    ],
)
def test_errors_name_the_file_line_key_and_the_fix(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(text)
    with pytest.raises(PolicyFileError, match=expected) as caught:
        load_policy(path)
    assert caught.value.path == str(path)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match=r"nothere\.toml: cannot read the policy file"):
        load_policy(tmp_path / "nothere.toml")


def test_strings_or_lists_and_defaults() -> None:
    policy = parse_policy('[[rule]]\naction = "allow"\nkind = "read"\ntitle = ["a*", "b*"]\n')
    rule = policy.rules[0]
    assert (rule.kind, rule.title, rule.name, policy.default) == (("read",), ("a*", "b*"), None, "ask")
