"""``acpio prompt`` in a real terminal: a tmux session of its own, read with ``capture-pane``.

Each :class:`TmuxTerminal` runs one command in a new tmux server on a socket of its own
(``tmux -L <unique name>``), in a window of a fixed size, and kills that server when done: tests
can run side by side (pytest-xdist) without seeing each other's panes. When the command ends,
the pane shows ``[tmux: exited N]`` and stays open for the test to read.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

needs_tmux = pytest.mark.skipif(
    shutil.which("tmux") is None,
    reason="tmux is not installed (make unit installs it with scripts/install_tmux.sh, as root)",
)

#: Seconds a wait for the screen may take before the test fails (generous: the machine may be busy).
WAIT = 30.0


class TmuxTerminal:
    """One command running in a tmux window ``width`` x ``height``; see the module docstring."""

    def __init__(self, socket: str) -> None:
        self.socket = socket

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=WAIT, check=False
        )
        if done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def screen(self) -> str:
        """What the window shows now, with its scrollback, wrapped lines joined, trailing blanks cut."""
        text = self.tmux("capture-pane", "-p", "-J", "-S", "-500", "-t", "main")
        return "\n".join(line.rstrip() for line in text.rstrip("\n").split("\n"))

    def wait_for(self, condition: Callable[[str], bool], what: str) -> str:
        """Poll the screen until ``condition`` holds; the screen then. Fails after :data:`WAIT` s."""
        deadline = time.monotonic() + WAIT
        while True:
            screen = self.screen()
            if condition(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"the screen never showed {what}; it shows:\n{screen}")
            time.sleep(0.05)

    def wait_for_text(self, text: str) -> str:
        return self.wait_for(lambda screen: text in screen, repr(text))

    def exited(self) -> tuple[int, str]:
        """Wait for the command to end; its exit code and the final screen (without the exit mark)."""
        screen = self.wait_for(lambda screen: "[tmux: exited " in screen, "the command's end")
        body, _, rest = screen.rpartition("[tmux: exited ")
        return int(rest.split("]", 1)[0]), body.rstrip("\n")

    def send_keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "main", *keys)

    def type_line(self, text: str) -> None:
        self.tmux("send-keys", "-t", "main", "-l", text)
        self.tmux("send-keys", "-t", "main", "Enter")


@contextmanager
def tmux_running(
    argv: list[str], *, cwd: Path, env: Mapping[str, str] | None = None, width: int = 120, height: int = 40
) -> Iterator[TmuxTerminal]:
    """Run ``argv`` in a fresh tmux server; kill the server (and so the command) at the end."""
    terminal = TmuxTerminal(f"acpio-test-{os.getpid()}-{uuid.uuid4().hex[:8]}")
    environment = dict(os.environ if env is None else env)
    environment.pop("NO_COLOR", None)
    environment.pop("TMUX", None)
    for size in ("COLUMNS", "LINES"):  # pytest-xdist's workers set them: the window's own size must count
        environment.pop(size, None)
    environment["TERM"] = "xterm-256color"
    shell = f'{shlex.join(argv)}; echo "[tmux: exited $?]"; exec sleep 600'
    subprocess.run(
        [
            "tmux",
            "-L",
            terminal.socket,
            "-f",
            "/dev/null",
            "new-session",
            "-d",
            "-s",
            "main",
            "-x",
            str(width),
            "-y",
            str(height),
            "-c",
            str(cwd),
            shell,
        ],
        env=environment,
        check=True,
        timeout=WAIT,
    )
    try:
        yield terminal
    finally:
        subprocess.run(
            ["tmux", "-L", terminal.socket, "kill-server"], capture_output=True, timeout=WAIT, check=False
        )
