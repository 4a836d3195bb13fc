"""Parsing agent commands: argv lists, shell words with NAME=value prefixes, JSON configs."""

from __future__ import annotations

import pytest

from acpio.transports import AcpAgent, AgentCommand


def test_argv_list_is_taken_literally() -> None:
    command = AgentCommand.parse(["python", "agent.py", "A=b"])
    assert command == AgentCommand("python", ("agent.py", "A=b"))
    assert command.argv == ["python", "agent.py", "A=b"]


def test_shell_words() -> None:
    assert AgentCommand.parse("node server.js --port 8080 --verbose") == AgentCommand(
        "node", ("server.js", "--port", "8080", "--verbose")
    )


def test_shell_words_with_quotes() -> None:
    assert AgentCommand.parse("python 'my agent.py' \"--name=a b\"").args == ("my agent.py", "--name=a b")


def test_leading_assignments_become_environment() -> None:
    command = AgentCommand.parse("RUST_LOG=debug API_KEY='a b' python agent.py X=1")
    assert command == AgentCommand("python", ("agent.py", "X=1"), {"RUST_LOG": "debug", "API_KEY": "a b"})


def test_from_args_with_only_assignments_is_an_error() -> None:
    with pytest.raises(ValueError, match="names no program"):
        AgentCommand.from_args(["A=1"])


def test_json_config() -> None:
    text = '{"command": "python", "args": ["agent.py"], "env": {"DEBUG": "1"}}'
    assert AgentCommand.parse(text) == AgentCommand("python", ("agent.py",), {"DEBUG": "1"})


def test_mapping_config_defaults() -> None:
    assert AgentCommand.parse({"command": "agent"}) == AgentCommand("agent")


def test_config_round_trip_omits_empty_collections() -> None:
    command = AgentCommand("python", ("agent.py",), {"A": "1"})
    assert AgentCommand.from_string(command.to_json()) == command
    assert AgentCommand("agent").to_config() == {"command": "agent"}


def test_mcp_server_shaped_json_is_rejected() -> None:
    with pytest.raises(ValueError, match=r"Unknown field.*'name'.*MCP server"):
        AgentCommand.parse('{"type": "stdio", "name": "fs", "command": "mcp-fs"}')


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "names no program"),
        ([], "empty argv"),
        ("{not json", "not valid JSON"),
        ("python 'unclosed", "Cannot split"),
        ({"args": []}, "needs a non-empty string 'command'"),
        ({"command": "a", "args": "b"}, "'args'.*list of strings"),
        ({"command": "a", "env": {"A": 1}}, "'env'.*string values"),
    ],
)
def test_bad_commands_say_what_is_wrong(spec: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AgentCommand.parse(spec)  # type: ignore[arg-type]


def test_acp_agent_constructors() -> None:
    assert AcpAgent.from_string("DEBUG=1 agent --x").command == AgentCommand(
        "agent", ("--x",), {"DEBUG": "1"}
    )
    assert AcpAgent.from_args(["DEBUG=1", "agent"]).command.env == {"DEBUG": "1"}
    agent = AcpAgent(["agent"], env={"B": "2"})
    assert agent.command.env == {"B": "2"}
    assert agent.pid is None
    assert agent.returncode is None
    assert repr(agent) == "AcpAgent('agent')"
