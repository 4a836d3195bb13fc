"""``acpio prompt --proxy``, ``--trace``, ``--add-dir`` and ``--mcp``: real processes, real files."""

from __future__ import annotations

import io
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acpio import Agent
from acpio import schema as acp
from acpio.errors import RequestError
from acpio.jsonrpc import Connection
from acpio.oneshot import ExitCode, PromptOptions, run_prompt
from acpio.oneshot.mcp_servers import parse_mcp

ROOT = Path(__file__).resolve().parents[2]
TESTY = shlex.join([sys.executable, "-m", "acpio", "testy"])
ARROW_PROXY = shlex.join([sys.executable, str(ROOT / "examples" / "arrow_proxy.py")])
TIMEOUT = 60


def acpio_prompt(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ACPIO_AGENT"}
    return subprocess.run(
        [sys.executable, "-m", "acpio", "prompt", "--deny", "--agent", TESTY, *args],  # piped: plain text
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=env,
        check=False,
    )


def test_a_proxy_in_front_of_the_agent_and_the_trace_of_every_hop(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsons"
    done = acpio_prompt(tmp_path, "--proxy", ARROW_PROXY, "--trace", str(trace), "hello there")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["> hello there", "[stop reason: end_turn]"]  # the proxy's quote
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[0]["type"] == "lanes"
    assert [lane["lane"] for lane in events[0]["lanes"]] == ["Client", "Proxy(0)", "Agent"]
    hops = {
        (event["from"], event["to"])
        for event in events
        if event["type"] == "request" and event["method"] == "session/prompt"
    }
    assert hops == {("Client", "Proxy(0)"), ("Proxy(0)", "Agent")}


def test_a_trace_without_proxies(tmp_path: Path) -> None:
    trace = tmp_path / "run.jsons"
    done = acpio_prompt(tmp_path, "--trace", str(trace), "hi")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    methods = [event.get("method") for event in events if event["type"] == "request"]
    assert methods[:3] == ["initialize", "session/new", "session/prompt"]


def test_option_mistakes_are_one_line(tmp_path: Path) -> None:
    missing = acpio_prompt(tmp_path, "--add-dir", str(tmp_path / "nowhere"), "hi")
    assert missing.returncode == 2
    assert missing.stderr.strip() == f"acpio: error: --add-dir {tmp_path / 'nowhere'}: no such directory"
    no_parent = acpio_prompt(tmp_path, "--trace", str(tmp_path / "no" / "t.jsons"), "hi")
    assert no_parent.returncode == 2
    assert "--trace" in no_parent.stderr
    # testy does not take more directories: said before anything is sent
    refused = acpio_prompt(tmp_path, "--add-dir", str(tmp_path), "hi")
    assert refused.returncode == 2, refused.stderr
    assert "--add-dir: the agent does not take more directories" in refused.stderr


def workspace_agent(seen: list[Any]) -> Any:
    """An agent that takes additionalDirectories and reads a file in the first one."""
    app = Agent.builder(name="workspace")

    @app.on_request
    async def initialize(req: acp.InitializeRequest) -> acp.InitializeResponse:
        return acp.InitializeResponse.model_validate(
            {
                "protocolVersion": 1,
                "agentCapabilities": {"sessionCapabilities": {"additionalDirectories": {}}},
            }
        )

    @app.on_request
    async def new_session(req: acp.NewSessionRequest) -> acp.NewSessionResponse:
        seen.append(req.additional_directories)
        return acp.NewSessionResponse(session_id="w-1")

    @app.on_request
    async def prompt(req: acp.PromptRequest, responder: Any, cx: Connection) -> None:
        async def turn() -> None:
            directory = seen[0][0]
            try:
                result = await cx.send_request(
                    acp.ReadTextFileRequest(session_id="w-1", path=f"{directory}/shared.txt")
                )
            except RequestError as exc:
                seen.append(exc.message)
            else:
                seen.append(result.content)
            responder.respond(acp.PromptResponse(stop_reason=acp.StopReason.END_TURN))

        cx.spawn(turn)

    return app


async def test_add_dir_is_sent_and_its_files_are_served(tmp_path: Path) -> None:
    project, shared = tmp_path / "project", tmp_path / "shared"
    project.mkdir()
    shared.mkdir()
    (shared / "shared.txt").write_text("from the other directory\n")
    seen: list[Any] = []
    options = PromptOptions(agent=workspace_agent(seen), prompt="read", cwd=project, add_dirs=(shared,))
    code = await run_prompt(options, stdout=io.StringIO(), stderr=io.StringIO(), handle_sigint=False)
    assert code == ExitCode.OK
    assert seen == [[str(shared)], "from the other directory\n"]


async def test_without_add_dir_the_other_directory_is_refused(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "shared.txt").write_text("secret\n")
    seen: list[Any] = []
    agent = workspace_agent(seen)
    seen.append([str(tmp_path)])  # where the agent reads: not a directory of the session
    options = PromptOptions(agent=agent, prompt="read", cwd=project)
    code = await run_prompt(options, stdout=io.StringIO(), stderr=io.StringIO(), handle_sigint=False)
    assert code == ExitCode.OK
    assert seen[-1].startswith(f"Refused to read {tmp_path}/shared.txt: it is outside {project}")


CALC_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
'''


def test_an_mcp_server_acpio_serves_over_acp(tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra (acpio[mcp]) is not installed")
    (tmp_path / "calc.py").write_text(CALC_SERVER)
    agent = f"{TESTY} --mcp-acp"
    done = acpio_prompt(
        tmp_path,
        "--mcp",
        f"calc=python:{tmp_path / 'calc.py'}:server",
        "--agent",
        agent,
        'mcp calc add {"a": 2, "b": 40}',
    )
    assert done.returncode == 0, done.stderr
    assert "[completed] mcp calc add\n    tools: add\n    42\n" in done.stdout


def test_stdio_and_http_mcp_servers_are_declared(tmp_path: Path) -> None:
    done = acpio_prompt(
        tmp_path,
        "--json",
        "--mcp",
        "files=LOG=debug sh -c 'exec my-mcp-server .'",
        "--mcp",
        "docs=https://mcp.example.com/mcp",
        "hi",
    )
    assert done.returncode == 0, done.stderr
    sent = [json.loads(line)["message"] for line in done.stdout.splitlines()]
    new_session = next(message for message in sent if message.get("method") == "session/new")
    assert new_session["params"]["mcpServers"] == [
        {
            "name": "files",
            "command": shutil.which("sh"),  # the absolute path ACP wants
            "args": ["-c", "exec my-mcp-server ."],
            "env": [{"name": "LOG", "value": "debug"}],
        },
        {"type": "http", "name": "docs", "url": "https://mcp.example.com/mcp", "headers": []},
    ]


def test_mcp_mistakes_are_one_line(tmp_path: Path) -> None:
    for spec, says in [
        (f"calc=python:{tmp_path / 'missing.py'}:server", "no such file"),
        ("calc=python:server", "give the file or module and the server's name"),
        ("files=no-such-program-here --flag", "'no-such-program-here' is not found on PATH"),
    ]:
        with pytest.raises(ValueError) as caught:
            parse_mcp(spec)
        assert says in str(caught.value)
    done = acpio_prompt(tmp_path, "--mcp", "nonsense", "hi")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("acpio: error: --mcp: 'nonsense' is not NAME=SPEC"), done.stderr
    assert len(done.stderr.splitlines()) == 1
    pytest.importorskip("mcp", reason="the mcp extra (acpio[mcp]) is not installed")
    (tmp_path / "calc.py").write_text(CALC_SERVER)
    # testy without --mcp-acp does not advertise mcpCapabilities.acp: refused before session/new
    done = acpio_prompt(tmp_path, "--mcp", f"calc=python:{tmp_path / 'calc.py'}:server", "hi")
    assert done.returncode == 2, done.stderr
    assert "--mcp: the agent does not take this kind of MCP server" in done.stderr
