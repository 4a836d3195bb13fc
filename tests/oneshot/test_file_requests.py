"""``acpio prompt`` answers the agent's file requests without stopping its event loop, long paths at once.

A scripted agent (``_hostile.py``) sends ``fs/read_text_file`` to ``run_prompt``.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from acpio.client.files import ConfinedFiles
from acpio.schema import ReadTextFileRequest, ReadTextFileResponse

from ._support import TIMEOUT
from .test_consent import error, run


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("notes\n")
    return root.resolve()


async def test_a_path_of_five_thousand_components_is_refused_at_once(project: Path) -> None:
    path = f"{project}{'/a' * 5000}/x.txt"
    done = await run(
        [("fs/read_text_file", {"path": path}), ("fs/read_text_file", {"path": str(project / "notes.txt")})],
        project,
    )
    refused = error(done.answers[0])
    assert refused["code"] == -32602
    assert refused["data"]["components"] == path.count("/")
    assert f"it has {path.count('/')} components" in refused["message"]
    assert done.answers[1] == {"result": {"content": "notes\n"}}  # the agent's next request is answered
    assert "[fs/read_text_file failed] Refused to read " in done.out
    assert path not in done.out  # shortened


async def test_a_file_read_runs_beside_the_event_loop(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While a read takes long, the event loop goes on (here: it is what lets the read finish)."""
    reading, finish = threading.Event(), threading.Event()
    read = ConfinedFiles.read

    def slow_read(self: ConfinedFiles, request: ReadTextFileRequest) -> ReadTextFileResponse:
        reading.set()
        if not finish.wait(TIMEOUT):
            raise RuntimeError("the event loop stood still while the file was read")
        return read(self, request)

    monkeypatch.setattr(ConfinedFiles, "read", slow_read)

    async def finish_once_reading() -> None:
        await asyncio.to_thread(reading.wait, TIMEOUT)
        finish.set()

    helper = asyncio.create_task(finish_once_reading())
    done = await run([("fs/read_text_file", {"path": str(project / "notes.txt")})], project)
    await helper
    assert done.answers == [{"result": {"content": "notes\n"}}]
