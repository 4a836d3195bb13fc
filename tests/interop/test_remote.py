"""ACP over HTTP and WebSocket with the official TypeScript SDK 2.4.0, both ways (issue 18).

* The SDK's experimental clients (``createHttpStream``, ``createWebSocketStream``: ``peers/ts/client.mjs
  --url``) run the full turn on ``acpio testy`` served by :class:`acpio.remote.RemoteServer`.
* acpio's client (:class:`acpio.remote.RemoteAgent`) runs the full turn on the SDK's ``AcpServer``
  (``peers/ts/agent.mjs --listen``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("uvicorn")

from acpio.agents.testy.agent import testy_agent
from acpio.remote import RemoteAgent, RemoteServer

from ._recording_client import RecordingClient
from ._support import (
    PEER_PROMPT,
    PEER_WAIT,
    RUN_TIMEOUT,
    TESTY_SCRIPT,
    TESTY_WAIT,
    TS_AGENT,
    TS_CLIENT,
    check_peer_agent_turn,
    check_testy_turn,
    context,
)

SCHEMES = pytest.mark.parametrize("scheme", ["http", "ws"], ids=["streamable-http", "websocket"])


async def run_ts_client(node: str, workdir: Path, url: str, *extra: str) -> dict[str, Any]:
    """``client.mjs --url``: the full turn, then a cancelled one; its JSON summary."""
    argv = [node, str(TS_CLIENT), "--cwd", str(workdir), "--timeout", "30", "--url", url, *extra]
    argv += ["--prompt", TESTY_SCRIPT, "--cancel-prompt", TESTY_WAIT]
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        stdin=asyncio.subprocess.DEVNULL,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    try:
        summary: dict[str, Any] = json.loads(out)
    except json.JSONDecodeError:
        raise AssertionError(
            f"client.mjs printed no summary\nstdout: {out[-3000:]!r}\nstderr: {err[-3000:]!r}"
        ) from None
    summary["clientStderr"] = err.decode("utf-8", "replace")[-8192:]
    return summary


@contextlib.asynccontextmanager
async def ts_server(node: str) -> AsyncIterator[str]:
    """``agent.mjs --listen 0``: the SDK's AcpServer on a loopback port; yields its URL."""
    process = await asyncio.create_subprocess_exec(
        node, str(TS_AGENT), "--listen", "0", stdout=asyncio.subprocess.PIPE, stdin=asyncio.subprocess.DEVNULL
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line.startswith(b"listening on "), line
        yield line.decode().split()[-1]
    finally:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 5)
        except TimeoutError:
            process.kill()
            await process.wait()


@SCHEMES
async def test_typescript_client_runs_the_full_turn_on_testy_served_remotely(
    node: str, workdir: Path, scheme: str
) -> None:
    async with RemoteServer(testy_agent(), port=0) as server:
        url = server.url.replace("http", scheme, 1)
        summary = await run_ts_client(node, workdir, url)

    check_testy_turn(summary, workdir, process=False)
    assert summary["newSession"]["sessionId"] == "testy-1", context(summary)


@SCHEMES
async def test_typescript_client_sends_the_token(node: str, workdir: Path, scheme: str) -> None:
    async with RemoteServer(testy_agent(), port=0, token="s3cret") as server:
        url = server.url.replace("http", scheme, 1)
        refused = await run_ts_client(node, workdir, url)
        summary = await run_ts_client(node, workdir, url, "--token", "s3cret")

    assert refused["fatal"] is not None, context(refused)
    assert refused["initialize"] is None, context(refused)
    check_testy_turn(summary, workdir, process=False)


@SCHEMES
async def test_acpio_client_runs_the_full_turn_on_the_typescript_server(
    node: str, workdir: Path, scheme: str
) -> None:
    async with ts_server(node) as url:
        agent = RemoteAgent(url.replace("http", scheme, 1))
        summary = await RecordingClient(workdir).run(agent, [PEER_PROMPT], PEER_WAIT)

    check_peer_agent_turn(summary, workdir, "ts-peer-agent", process=False)
