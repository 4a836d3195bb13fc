"""The demo behind ``make demo``: ``acpio prompt`` -> conductor -> arrow proxy -> ``acpio testy``,
then the reference agent (``acpio agent``) with its offline model, over two processes.

In a fresh temporary directory holding a small ``notes.txt``, it runs ``acpio prompt`` against the
deterministic test agent, behind a conductor that runs the arrow proxy (which quotes the agent's
text) and writes a trace. The prompt is a testy script that streams text, shows a thought and a
plan, reads the file, asks permission, edits the file (a diff) and runs a command in a terminal.
Permissions are granted with ``--allow`` so the demo needs no answer. It takes a few seconds and
ends with the command that opens the trace in the viewer.

Then ``acpio agent --offline`` (a scripted model: no key, no network) reads and edits the notes with
a permission, keeping its session in a SQLite file; a second ``acpio prompt --session ID`` starts a
new agent process that loads the session from that file (its history shown) and continues it.

    python scripts/demo.py [--trace FILE]    # default trace: .cache/demo/trace.jsons
"""

from __future__ import annotations

import argparse
import re
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


CODER_PROMPT = r"""think The notes need one more line; I will read them first.
plan Read the notes; Add a line
read notes.txt
edit notes.txt: - buy milk => - buy milk\n- try the reference agent
say The notes have one more line.
"""


def reference_agent(python: str) -> int:
    """Two ``acpio prompt`` runs against ``acpio agent --offline``: a turn, then the same session again."""
    print("\n=== The reference agent (acpio agent) with its offline model ===")
    with tempfile.TemporaryDirectory(prefix="acpio-agent-demo-") as workdir:
        (Path(workdir) / "notes.txt").write_text(NOTES)
        store = Path(workdir) / ".sessions.db"
        agent = shlex.join(
            [python, "-m", "acpio", "agent", "--offline", "--store", f"sqlite:///{store}",
             "--credentials", str(Path(workdir) / ".credentials.json")]
        )  # fmt: skip
        prompt = [python, "-m", "acpio", "prompt", "--agent", agent, "--cwd", workdir, "--allow"]
        first = subprocess.run([*prompt, CODER_PROMPT], stderr=subprocess.PIPE, text=True)
        sys.stderr.write(first.stderr)
        found = re.search(r"--session (\S+)\)", first.stderr)
        if first.returncode != 0 or found is None:
            return first.returncode or 1
        session = found.group(1)
        print(f"\n=== A new agent process continues session {session}, loaded from {store.name} ===")
        again = "read notes.txt\nsay Still here, after a restart."
        return subprocess.call([*prompt, "--session", session, again])


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
    return code or reference_agent(python)


if __name__ == "__main__":
    sys.exit(main())
