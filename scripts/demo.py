"""The demo behind ``make demo``: ``acpio prompt`` -> conductor -> arrow proxy -> ``acpio testy``.

In a fresh temporary directory holding a small ``notes.txt``, it runs ``acpio prompt`` against the
deterministic test agent, behind a conductor that runs the arrow proxy (which quotes the agent's
text) and writes a trace. The prompt is a testy script that streams text, shows a thought and a
plan, reads the file, asks permission, edits the file (a diff) and runs a command in a terminal.
Permissions are granted with ``--allow`` so the demo needs no answer. It takes a few seconds and
ends with the command that opens the trace in the viewer.

    python scripts/demo.py [--trace FILE]    # default trace: .cache/demo/trace.jsons
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTES = "# Notes\n- buy milk\n"

SCRIPT = r"""think The user wants a tour: read the notes, then improve them.
plan Read the notes; Ask before editing; Add a line; Check the result
echo Hello! I am testy, a deterministic ACP agent. Let me read your notes first.
read notes.txt
progress 1
permission Edit notes.txt
progress 2
write notes.txt # Notes\n- buy milk\n- try acpio\n
progress 3
run cat notes.txt
progress 4
echo Done: notes.txt has one more line.
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", type=Path, default=ROOT / ".cache" / "demo" / "trace.jsons")
    args = parser.parse_args()
    args.trace.parent.mkdir(parents=True, exist_ok=True)
    python = sys.executable
    conductor = shlex.join(
        [python, "-m", "acpio", "conductor", "--trace", str(args.trace), "agent",
         f"{python} {ROOT / 'examples' / 'arrow_proxy.py'}", f"{python} -m acpio testy"]
    )  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="acpio-demo-") as workdir:
        (Path(workdir) / "notes.txt").write_text(NOTES)
        command = [python, "-m", "acpio", "prompt", "--agent", conductor, "--cwd", workdir, "--allow", SCRIPT]
        code = subprocess.call(command)
    print(f"\nTrace of every message between client, proxy and agent: {args.trace}")
    print(f"View it: acpio trace view {shlex.quote(str(args.trace))} --open")
    return code


if __name__ == "__main__":
    sys.exit(main())
