"""A secret split across chunks, through a real conductor chain: the client and the trace never see it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from acpio import Client
from acpio import schema as acp
from acpio.session import RequestPermissionMessage
from acpio.transports import AcpAgent

from ._support import PYTHON, ROOT

REDACTING = f"{PYTHON} {ROOT / 'examples' / 'redacting_proxy.py'}"
TESTY = f"{PYTHON} -m acpio testy"
SECRET = "sk-abc123456789"
PATTERN = "sk-[A-Za-z0-9]{8,}"
#: testy sends each `stream 1 TEXT` as one agent_message_chunk: the key comes in three.
SPLIT_KEY = "stream 1 sk-\nstream 1 abc123\nstream 1 456789"


async def turn(argv: list[str], text: str, cwd: Path) -> str:
    async def main(cx: Any) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(cwd).start_session() as session:
            session.send_prompt(text)
            return "".join([message.text async for message in session if message.text is not None])

    return await Client.builder().connect_with(AcpAgent(argv, cwd=ROOT), main)


def agent_chunks(trace: Path) -> str:
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    return "".join(
        event["params"]["update"]["content"]["text"]
        for event in events
        if event.get("from") == "Agent"
        and event.get("method") == "session/update"
        and event["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


async def test_the_example_redacts_a_key_split_over_three_chunks_in_the_reply_and_the_trace(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "run.jsons"
    conductor = [PYTHON, "-m", "acpio", "conductor", "--trace", str(trace), "--redact", PATTERN]
    # the key at the end of the turn (flushed before the answer), then mid-message, then whole
    script = f"{SPLIT_KEY}\n"
    text = await turn([*conductor, "agent", REDACTING, TESTY], script, tmp_path)
    assert text == "[key removed]"
    mid = f"echo before\n{SPLIT_KEY}\nstream 1 .\necho after\necho {SECRET}"
    text = await turn([*conductor, "agent", REDACTING, TESTY], mid, tmp_path)
    assert text == "before\n[key removed].after\n[key removed]\n"
    written = trace.read_text()
    assert SECRET not in written
    # the agent's own chunks, on their way to the proxy, are redacted in the trace as a whole
    assert agent_chunks(trace) == "before\n[REDACTED].after\n[REDACTED]\n"
    assert "echo [REDACTED]" in written  # the prompt, on each hop


async def test_without_redact_the_trace_keeps_the_agents_raw_chunks(tmp_path: Path) -> None:
    """The control: what --redact removes is there without it."""
    trace = tmp_path / "run.jsons"
    conductor = [PYTHON, "-m", "acpio", "conductor", "--trace", str(trace)]
    text = await turn([*conductor, "agent", REDACTING, TESTY], SPLIT_KEY, tmp_path)
    assert text == "[key removed]"  # the proxy still redacts the reply
    assert agent_chunks(trace) == SECRET


async def test_a_v2_session_is_redacted_across_chunks_and_flushed_before_the_idle_state(
    tmp_path: Path,
) -> None:
    from acpio.proxies import redacting_proxy

    from .test_v2_chain import v2_chain

    async with v2_chain(redacting_proxy([PATTERN])) as peer:
        await peer.initialize()
        session = await peer.new_session(str(tmp_path))
        middle = await peer.turn(session, f"echo before\n{SPLIT_KEY}\nstream 1 .\necho after")
        end = await peer.turn(session, f"echo key:\n{SPLIT_KEY}")
    assert middle.text() == "before\n[REDACTED].after\n"
    assert end.text() == "key:\n[REDACTED]"
    assert SECRET not in str(middle.of("agent_message_chunk")) + str(end.of("agent_message_chunk"))
    assert [u["state"] for u in end.of("state_update")] == ["running", "idle"]


def test_mistakes_in_redact_options_are_one_line() -> None:
    import subprocess

    def acpio(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([PYTHON, "-m", "acpio", *args], capture_output=True, text=True, timeout=60)

    bad = acpio("proxy", "redact", "sk-(")
    assert (bad.returncode, bad.stderr.splitlines()[0]) == (
        2,
        "acpio: error: 'sk-(' is not a regular expression: missing ), unterminated subpattern at position 3",
    )
    untraced = acpio("conductor", "--redact", "sk-.*", "agent", TESTY)
    assert untraced.returncode == 2
    assert untraced.stderr.strip() == "acpio: error: --redact redacts the trace: give --trace FILE too"


async def test_held_text_reaches_the_client_before_the_permission_request_that_follows_it(
    tmp_path: Path,
) -> None:
    """``sk-abc`` may start a key: held back, then sent before the agent's question, not after it."""
    from acpio.agents.testy.serve import testy_component
    from acpio.conductor import Chain
    from acpio.proxies import redacting_proxy

    chain = Chain.agent("conductor", [redacting_proxy([PATTERN]), testy_component(protocols=(1,))])
    seen: list[str] = []

    async def main(cx: Any) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session(tmp_path).start_session() as session:
            session.send_prompt("stream 1 before sk-abc\npermission Go on\necho done")
            async for message in session:
                if isinstance(message, RequestPermissionMessage):
                    seen.append(f"asked {message.request.tool_call.title}")
                    message.respond(
                        acp.RequestPermissionResponse(
                            outcome=acp.SelectedPermissionOutcome(option_id="allow-once")
                        )
                    )
                elif message.update is not None and isinstance(message.update, acp.AgentMessageChunk):
                    seen.append(str(message.text))

    await Client.builder().connect_with(chain, main)
    assert seen == ["before ", "sk-abc", "asked Go on", "permission: allow-once\n", "done", "\n"]
