"""Run 50 prompts over a pool of 4 agent processes; survive a wedged agent and a crashed one.

Run it: ``python examples/drive_pool.py`` (it drives ``acpio testy``, sessions on SQLite so that
a replaced process resumes them). One prompt hangs and ignores the cancel (the pool gives up on
it, kills the process, starts another and resumes the session), one makes the agent exit mid-turn
(a failed result with the agent's stderr). It prints what came back, and the pool's steps.
"""

import asyncio
import sys
import tempfile
from collections import Counter

from acpio import AgentPool, PoolEvent

WORK = [f"echo task {n}\ntool Inspect item {n}\nwrite out-{n}.txt done {n}\nusage" for n in range(48)]
PROMPTS = [*WORK, "echo stuck\nhang 600", "echo crashing\nexit 3 testy crashed on purpose"]


def report(event: PoolEvent) -> None:
    print(f"pool: {type(event).__name__} in slot {event.slot}", file=sys.stderr)


async def main(work: str) -> None:
    agent = [sys.executable, "-m", "acpio", "testy", "--store", f"sqlite:///{work}/sessions.db"]
    async with AgentPool(
        agent, size=4, turn_timeout=3, cancel_grace=1, permissions="allow", cwd=work, on_event=report
    ) as pool:
        results = await asyncio.gather(*(pool.prompt(prompt) for prompt in PROMPTS))
    print("results:", len(results), dict(Counter(r.stop_reason or "failed" for r in results)))
    print("tool calls:", sum(len(r.tool_calls) for r in results))
    print("files written:", sum(len(r.files_written) for r in results))
    print("usage reported:", sum(r.usage is not None for r in results))
    for result in results:
        if not result.ok:
            steps = " -> ".join(type(event).__name__ for event in result.events)
            print(f"{result.stop_reason or result.error}: {steps}")


with tempfile.TemporaryDirectory() as work:
    asyncio.run(main(work))
