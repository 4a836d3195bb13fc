"""``acpio inspect -- ws://...``: an agent served over WebSocket (by ``acpio serve``) driven from the page."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest
import websockets

from tests.inspector.conftest import StartInspect


async def initialize_from_the_page(url: str) -> dict[str, object]:
    base, token = url.split("/?token=")
    async with websockets.connect(f"ws{base[4:]}/ws?token={token}", origin=base) as page:  # type: ignore[arg-type]
        params = {"protocolVersion": 1, "clientCapabilities": {}}
        await page.send(json.dumps({"op": "send", "method": "initialize", "params": params}))
        async with asyncio.timeout(30):
            while True:
                message = json.loads(await page.recv())
                if message["kind"] == "frame" and message["event"]["type"] == "response":
                    return dict(message["event"])


@pytest.mark.slow
def test_an_agent_at_a_websocket_url(start_inspect: StartInspect, tmp_path: Path) -> None:
    serve = subprocess.Popen(
        [sys.executable, "-m", "acpio", "serve", "--port", "0", "--", sys.executable, "-m", "acpio", "testy"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert serve.stdout is not None
        line = serve.stdout.readline()
        assert line.startswith("listening on http://"), line
        agent_url = line.split()[2].replace("http://", "ws://", 1)
        page = start_inspect("--capture", str(tmp_path / "run.sqlite"), "--", agent_url)
        answer = asyncio.run(initialize_from_the_page(page))
        assert answer["method"] == "initialize"
        assert answer["from"] == "Agent"
        assert answer["payload"]["agentInfo"]["name"] == "acpio-testy"  # type: ignore[index]
    finally:
        serve.terminate()
        serve.wait(20)
