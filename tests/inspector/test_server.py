"""The inspector's server in-process: a run reopened from its SQLite file, the token, the origin check."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import pytest
import websockets

from acpio.inspector import Capture, FrameChecker, Inspection, InspectorServer


def recorded_run(path: Path) -> None:
    """A short run, recorded as the inspector records one: initialize, then noise on the agent's stdout."""
    with Capture(path) as capture:
        inspection = Inspection(
            {"command": "my-agent --acp", "mode": "drive"}, capture=capture, checker=FrameChecker()
        )
        inspection.record(
            "client", b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}'
        )
        inspection.record("agent", b"booting...")
        inspection.record("agent", b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1}}')
        inspection.record_stderr("a line on stderr")


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


async def test_a_recorded_run_reopens_with_its_frames_and_warnings(tmp_path: Path) -> None:
    recorded_run(tmp_path / "run.sqlite")
    with Capture.open_existing(tmp_path / "run.sqlite") as capture:
        inspection = Inspection.replay(capture)
    async with InspectorServer(inspection) as server:
        base, token = server.url.split("/?token=")
        async with websockets.connect(f"ws{base[4:]}/ws?token={token}", origin=base) as page:  # type: ignore[arg-type]
            hello = json.loads(await page.recv())
            assert hello["live"] is False
            assert hello["info"]["command"] == "my-agent --acp"
            frames = [json.loads(await page.recv()) for _ in range(4)]
            assert [f["event"]["type"] for f in frames] == ["request", "stderr", "response", "stderr"]
            assert frames[2]["event"]["method"] == "initialize"  # the response names what it answers
            assert [x["rule"] for f in frames for x in f["findings"]] == ["stdout-noise"]
            await page.send(json.dumps({"op": "send", "method": "initialize", "params": {}}))
            note = json.loads(await page.recv())
            assert note == {
                "kind": "note",
                "level": "error",
                "text": "this run is a recording: reopen it live to drive an agent",
            }
        status, body = await asyncio.to_thread(get, f"{base}/events?token={token}&start=1&limit=2")
        assert status == 200
        window = orjson.loads(body)
        assert (window["start"], window["next"], window["total"]) == (1, 3, 4)
        assert window["lanes"]["lanes"][1] == {"lane": "Agent", "name": "my-agent --acp"}


@pytest.mark.parametrize("path", ["/", "/events", "/viewer", "/static/inspector.js"])
async def test_nothing_is_served_without_the_token(tmp_path: Path, path: str) -> None:
    async with InspectorServer(Inspection({"command": "x"})) as server:
        base, token = server.url.split("/?token=")
        status, body = await asyncio.to_thread(get, base + path)
        assert status == 403
        assert b"open the address acpio inspect printed" in body
        status, _ = await asyncio.to_thread(get, f"{base}{path}?token=not-{token}")
        assert status == 403
        status, _ = await asyncio.to_thread(get, f"{base}{path}?token={token}")
        assert status == 200


async def test_the_feed_refuses_another_origin(tmp_path: Path) -> None:
    async with InspectorServer(Inspection({"command": "x"})) as server:
        base, token = server.url.split("/?token=")
        with pytest.raises(websockets.exceptions.InvalidStatus):
            async with websockets.connect(f"ws{base[4:]}/ws?token={token}", origin="http://evil.example"):  # type: ignore[arg-type]
                pass


def test_the_server_listens_on_loopback_only() -> None:
    with pytest.raises(ValueError, match="not a loopback address"):
        InspectorServer(Inspection({}), host="0.0.0.0")
