"""An AgentApp that keeps its sessions in SQLite and can be told to ignore a cancel: the pool's test agent.

Run as ``python deaf_app.py DB``. Each turn answers ``turn N; earlier: A | B`` (N counts the
session's turns, the earlier prompts come from its stored history, so a session resumed by a new
process shows what it remembers), then acts on the prompt:

* ``hang``: sleeps for an hour and ignores every cancel (a wedged agent);
* ``sleep``: sleeps for an hour, and a cancel ends the turn (AgentApp's own handling);
* ``grandchild``: starts ``sleep 300`` in its process group, writes its pid on stderr, then hangs.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys

from acpio import AgentApp, StopReasonName, Turn
from acpio.schema import TextContent

app = AgentApp("deaf", version="1.0", store=f"sqlite:///{sys.argv[1]}")


async def _deaf_sleep() -> None:
    while True:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            continue  # wedged: the cancel is swallowed


@app.prompt
async def prompt(turn: Turn) -> StopReasonName:
    earlier = [
        "".join(block.text for block in exchange.prompt if isinstance(block, TextContent))
        for exchange in turn.history
    ]
    await turn.say(f"turn {len(earlier) + 1}; earlier: {' | '.join(earlier)}\n")
    if turn.text == "hang":
        await _deaf_sleep()
    elif turn.text == "sleep":
        await asyncio.sleep(3600)
    elif turn.text == "grandchild":
        child = subprocess.Popen(["sleep", "300"], stdin=subprocess.DEVNULL)  # noqa: ASYNC220 (quick)
        print(f"grandchild {child.pid}", file=sys.stderr, flush=True)
        await _deaf_sleep()
    return "end_turn"


if __name__ == "__main__":
    app.run()
