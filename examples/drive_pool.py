"""50 prompts over a pool of 4 agent processes under a policy file; a wedged and a crashed agent survived.

Run it: ``python examples/drive_pool.py`` (``acpio testy``, sessions on SQLite so that a replaced
process resumes them). The prompts ask permission for edits: ``drive_pool.toml`` allows edits and
denies publishing. One prompt hangs past its timeout (ended, killed, respawned, resumed), one
makes the agent exit mid-turn. It prints the results, the permissions decided and the pool's steps.
"""

import asyncio
import sys
import tempfile
from collections import Counter
from pathlib import Path

from acpio import AgentPool, PoolEvent, load_policy

STEPS = "echo task {n}\ntool Inspect item {n}\nwrite out-{n}.txt done {n}\nusage\npermission {verb} item {n}"
WORK = [STEPS.format(n=n, verb="Publish" if n % 3 == 0 else "Edit") for n in range(48)]
PROMPTS = [*WORK, "permission Edit stuck\nhang 600", "echo crashing\nexit 3 testy crashed on purpose"]


def report(event: PoolEvent) -> None:
    print(f"pool: {type(event).__name__} in slot {event.slot}", file=sys.stderr)


async def main(work: str) -> None:
    agent = [sys.executable, "-m", "acpio", "testy", "--store", f"sqlite:///{work}/sessions.db"]
    policy = load_policy(Path(__file__).with_name("drive_pool.toml"))
    async with AgentPool(
        agent, size=4, turn_timeout=3, cancel_grace=1, permissions=policy, cwd=work, on_event=report
    ) as pool:
        results = await asyncio.gather(*(pool.prompt(prompt) for prompt in PROMPTS))
    print("results:", len(results), dict(Counter(r.stop_reason or "failed" for r in results)))
    print("tool calls:", sum(len(r.tool_calls) for r in results))
    print("files written:", sum(len(r.files_written) for r in results))
    print("usage reported:", sum(r.usage is not None for r in results))
    allowed = [ask.allowed for result in results for ask in result.permissions]
    print("permissions:", allowed.count(True), "allowed,", allowed.count(False), "denied")
    print("decided by:", dict(Counter(decision.rule for decision in policy.decisions).most_common()))
    for result in results:
        if not result.ok:
            steps = " -> ".join(type(event).__name__ for event in result.events)
            print(f"{result.stop_reason or result.error}: {steps}")


with tempfile.TemporaryDirectory() as work:
    asyncio.run(main(work))
