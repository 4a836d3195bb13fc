"""Looking at processes by pid and process group, for the lifecycle tests (Linux: reads ``/proc``).

A zombie (dead, not yet reaped by whoever adopted it) counts as gone everywhere here.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Iterable
from pathlib import Path

import pytest

#: Seconds a process may take to disappear once it should be gone (the machine may be busy).
GONE_WITHIN = 5.0

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")


def _stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name: state, ppid, pgrp, ..."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie counts as gone)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def group_members(pgid: int) -> list[int]:
    """The live processes of process group ``pgid``."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
                members.append(int(entry))
    return members


def children(pid: int) -> list[int]:
    """The live child processes of ``pid``."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and fields[0] != "Z" and int(fields[1]) == pid:
                found.append(int(entry))
    return found


async def wait_gone(pids: Iterable[int], groups: Iterable[int] = (), within: float = GONE_WITHIN) -> None:
    """Wait until every pid has ended and every process group is empty; fail after ``within`` s."""
    pids, groups = list(pids), list(groups)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        left = [pid for pid in pids if alive(pid)]
        crowded = {pgid: group_members(pgid) for pgid in groups}
        crowded = {pgid: members for pgid, members in crowded.items() if members}
        if not left and not crowded:
            return
        if loop.time() > deadline:
            raise AssertionError(f"still running after {within} s: pids {left}, groups {crowded}")
        await asyncio.sleep(0.02)


def kill_all(pids: Iterable[int], groups: Iterable[int] = ()) -> None:
    """Clean up after a failed test: SIGKILL whatever is left."""
    for pgid in groups:
        for pid in group_members(pgid):
            _kill(pid, signal.SIGKILL)
    for pid in pids:
        if alive(pid):
            _kill(pid, signal.SIGKILL)


def _kill(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, number)
