"""``acpio testy``, made hard to stop: a test agent for the process lifecycle tests.

Run as ``python stubborn_testy.py LOG``. It ignores SIGTERM, SIGHUP and SIGINT, stays alive when its
stdin closes, and starts a ``sleep`` of its own in its process group (not as a new group), so
that only SIGKILL sent to the whole group ends everything. LOG gets one line per event:
``agent PID``, ``grandchild PID``, ``SIGTERM ignored`` (and ``SIGHUP``, ``SIGINT``), ``stdin closed``.
Otherwise it is testy: ``run COMMAND`` asks the client for a terminal.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

from acpio.agents.testy import testy_agent
from acpio.transports import Stdio


def note(text: str) -> None:
    with open(sys.argv[1], "a") as log:
        log.write(text + "\n")


def main() -> None:
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, lambda number, _frame: note(f"{signal.Signals(number).name} ignored"))
    grandchild = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)
    note(f"agent {os.getpid()}")
    note(f"grandchild {grandchild.pid}")
    try:
        asyncio.run(testy_agent().serve(Stdio()))
    except Exception as exc:  # the connection may break when the client is killed: stay anyway
        note(f"connection failed: {exc!r}")
    note("stdin closed")
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
