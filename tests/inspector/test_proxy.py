"""``acpio inspect --proxy`` as an editor launches it: a Zed-style settings entry, stdin and stdout piped.

The test is the editor: it writes the agent's requests on the process's stdin and reads the answers on
its stdout, while a page (a WebSocket client with the page's token) watches, pauses the traffic and
sends a request of its own. The run is then exported from its SQLite file as a trace that
``acpio trace show`` prints.
"""

from __future__ import annotations

import asyncio
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import websockets

#: What an editor's settings hold for an agent run under the inspector (Zed's ``agent_servers`` shape).
ZED_SETTINGS = """
{
  "agent_servers": {
    "testy, inspected": {
      "command": "%(python)s",
      "args": ["-m", "acpio", "inspect", "--proxy", "--url-file", "%(url_file)s", "--capture", "%(capture)s",
               "--", "%(python)s", "-m", "acpio", "testy"],
      "env": {}
    }
  }
}
"""


class Editor:
    """The editor's side of the pipes: one JSON message per line each way."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **message}).encode() + b"\n")
        self.process.stdin.flush()

    def answer(self, id: Any, timeout: float = 30) -> dict[str, Any]:
        """Read until the answer to ``id`` (every line read must be JSON-RPC: stdout is the protocol)."""
        deadline = time.monotonic() + timeout
        while True:
            message = json.loads(self.lines.get(timeout=max(0.01, deadline - time.monotonic())))
            assert message["jsonrpc"] == "2.0"
            assert message.get("id") != "inspect-0", "the page's own request was answered to the editor"
            if message.get("id") == id and "method" not in message:
                return message


def page_feed(url: str) -> tuple[str, str]:
    base, token = url.split("/?token=")
    return "ws" + base[len("http") :] + "/ws?token=" + token, base


async def watch(url: str, editor: Editor) -> list[dict[str, Any]]:
    ws_url, origin = page_feed(url)
    seen: list[dict[str, Any]] = []
    async with websockets.connect(ws_url, origin=origin) as page:  # type: ignore[arg-type]

        async def until(condition: Any) -> None:
            async with asyncio.timeout(30):
                while not any(condition(m) for m in seen):
                    seen.append(json.loads(await page.recv()))

        await until(lambda m: m["kind"] == "hello")
        hello = seen[0]
        assert hello["live"] is True
        assert hello["proxy"] is True
        await asyncio.to_thread(
            editor.send,
            {"id": 0, "method": "initialize", "params": {"protocolVersion": 1, "clientCapabilities": {}}},
        )
        assert "result" in await asyncio.to_thread(editor.answer, 0)
        await asyncio.to_thread(
            editor.send, {"id": 1, "method": "session/new", "params": {"cwd": "/", "mcpServers": []}}
        )
        session = (await asyncio.to_thread(editor.answer, 1))["result"]["sessionId"]

        # the page pauses: the editor's prompt waits until it resumes
        await page.send(json.dumps({"op": "pause", "paused": True}))
        await until(lambda m: m["kind"] == "paused" and m["paused"])
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "echo through the proxy"}]}
        await asyncio.to_thread(editor.send, {"id": 2, "method": "session/prompt", "params": prompt})
        await asyncio.sleep(1)
        assert editor.lines.empty()
        await page.send(json.dumps({"op": "pause", "paused": False}))
        answer = await asyncio.to_thread(editor.answer, 2)
        assert answer["result"]["stopReason"] == "end_turn"

        # the page's own request: answered to the page, not to the editor
        await page.send(json.dumps({"op": "send", "method": "session/list", "params": {}}))
        await until(
            lambda m: (
                m["kind"] == "frame" and m["event"]["type"] == "response" and m["event"]["id"] == "inspect-0"
            )
        )
        await asyncio.to_thread(editor.send, {"id": 3, "method": "session/list", "params": {}})
        assert "result" in await asyncio.to_thread(editor.answer, 3)
    return seen


@pytest.mark.slow
def test_proxy_mode_under_an_editor_launch(tmp_path: Path) -> None:
    capture = tmp_path / "run.sqlite"
    settings = ZED_SETTINGS % {"python": sys.executable, "url_file": tmp_path / "url", "capture": capture}
    (entry,) = json.loads(settings)["agent_servers"].values()
    process = subprocess.Popen(
        [entry["command"], *entry["args"]], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=tmp_path
    )
    try:
        editor = Editor(process)
        deadline = time.monotonic() + 30
        while not ((tmp_path / "url").exists() and (tmp_path / "url").read_text().endswith("\n")):
            assert process.poll() is None, "acpio inspect --proxy ended before serving its page"
            assert time.monotonic() < deadline, "acpio inspect --proxy did not serve its page within 30 s"
            time.sleep(0.05)
        seen = asyncio.run(watch((tmp_path / "url").read_text().strip(), editor))
    finally:
        assert process.stdin is not None
        process.stdin.close()  # the editor closes the agent's stdin: the inspector ends
        assert process.wait(20) == 0

    frames = [m for m in seen if m["kind"] == "frame"]
    methods = [(m["sender"], m["event"]["type"], m["event"].get("method")) for m in frames]
    assert ("client", "request", "initialize") in methods
    assert ("agent", "response", "initialize") in methods
    assert ("client", "request", "session/prompt") in methods
    assert ("agent", "notification", "session/update") in methods
    assert all(not m["findings"] for m in frames)

    # the run, kept in SQLite, exported as a trace that `acpio trace show` prints
    trace = tmp_path / "run.jsonl"
    subprocess.run(
        [sys.executable, "-m", "acpio", "inspect", "--open-run", str(capture), "--export-trace", str(trace)],
        check=True,
    )
    shown = subprocess.run(
        [sys.executable, "-m", "acpio", "trace", "show", str(trace)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for method in ("initialize", "session/new", "session/prompt", "session/list"):
        assert method in shown
    assert "echo through the proxy" in shown
