"""What one streamed update costs a whole benchmark agent process, in instructions (callgrind).

    python benchmarks/agent_instructions.py                       # bare, pydantic, acpio, acpio_app
    python benchmarks/agent_instructions.py --agent acpio_app     # one (repeat the option for more)
    python benchmarks/agent_instructions.py --quick               # fewer updates, to check the script runs
    python benchmarks/agent_instructions.py --agent acpio_app --store memory --store sqlite

Each agent is the process ``benchmarks/run.py`` streams from (``peers/<name>_agent.py``), run under
callgrind and driven over its stdin and stdout by this script: ``initialize``, ``session/new``, then
one ``session/prompt`` of ``stream N``, read to its answer. The figure is the difference between the
instructions of a run with ``3N`` updates and one with ``N``, divided by ``2N``: the agent's whole
cost of an update (building it, writing the frame, the event loop, backpressure), with start-up and
the handshake cancelled out. Unlike ``run.py``'s rates it does not move with the machine's load or
with where the scheduler puts the two processes, and unlike ``breakdown.py`` it counts everything
the agent does, not stage by stage. The client side is this script's, outside callgrind. Needs
``valgrind``; a few minutes.

``--store KIND`` measures the ``AgentApp`` agent again with a session store that records every
update: ``memory`` (``memory:``) or ``sqlite`` (a new SQLite file for each run), the agent's
``ACPIO_BENCH_STORE``. Each such line also says what the store adds to an update.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import IO

import orjson
from _callgrind import collected

PEERS = Path(__file__).resolve().parent / "peers"
sys.path.insert(0, str(PEERS))
from _harness import stream_prompt  # noqa: E402  (benchmarks/peers/_harness.py)

#: The agents measured by default: the floor, the typed floor, and acpio's two styles.
AGENTS = ("bare", "pydantic", "acpio", "acpio_app")
#: The agents that take a store (``--store``), and the stores they can be measured with.
STORED_AGENTS = ("acpio_app",)
STORES = ("memory", "sqlite")


def _frame(request_id: int, method: str, params: dict[str, object]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}) + b"\n"


def _answer(stdout: IO[bytes], request_id: int) -> dict[str, object]:
    """The result of request ``request_id``, skipping what comes before it (the streamed updates)."""
    while line := stdout.readline():
        message = orjson.loads(line)
        if message.get("id") == request_id:
            if "result" not in message:
                raise RuntimeError(f"the agent answered request {request_id} with {message}")
            result: dict[str, object] = message["result"]
            return result
    raise RuntimeError(f"the agent exited before answering request {request_id}")


def instructions(agent: str, updates: int, store: str | None = None) -> int:
    """The instructions of one agent process that streams ``updates`` updates in one prompt.

    ``store``: the kind of store the agent records in (one of :data:`STORES`), or none.
    """
    with tempfile.TemporaryDirectory(prefix="acpio-bench-") as directory:
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        env.pop("ACPIO_BENCH_STORE", None)
        if store is not None:
            env["ACPIO_BENCH_STORE"] = (
                "memory:" if store == "memory" else f"sqlite:///{directory}/sessions.db"
            )
        return _run(agent, updates, env)


def _run(agent: str, updates: int, env: dict[str, str]) -> int:
    script = PEERS / f"{agent}_agent.py"
    if not script.exists():
        raise SystemExit(f"there is no agent {agent!r}: {script} does not exist")
    command = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, str(script)]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=PEERS, env=env
    ) as agent_process:
        stdin, stdout = agent_process.stdin, agent_process.stdout
        assert stdin is not None
        assert stdout is not None
        stdin.write(_frame(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))
        stdin.write(_frame(2, "session/new", {"cwd": "/bench", "mcpServers": []}))
        try:
            stdin.flush()
            _answer(stdout, 1)
            session_id = _answer(stdout, 2)["sessionId"]
            prompt = [{"type": "text", "text": stream_prompt(updates)}]
            stdin.write(_frame(3, "session/prompt", {"sessionId": session_id, "prompt": prompt}))
            stdin.flush()
            _answer(stdout, 3)
        except (RuntimeError, OSError) as exc:  # the agent failed: say why, from its own stderr
            agent_process.kill()
            assert agent_process.stderr is not None
            tail = agent_process.stderr.read()[-2000:].decode(errors="replace")
            raise RuntimeError(f"{agent}: {exc}; its stderr ends:\n{tail}") from None
        stdin.close()  # the agent exits at the end of its input; callgrind then prints its count
        assert agent_process.stderr is not None
        stderr = agent_process.stderr.read()
    return collected(stderr)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    default = ", ".join(AGENTS)
    parser.add_argument("--agent", action="append", help=f"an agent to measure (default: {default})")
    parser.add_argument("--quick", action="store_true", help="200 and 600 updates instead of 1,000 and 3,000")
    parser.add_argument("--repeat", type=int, default=1, help="runs per figure (the median is shown)")
    parser.add_argument(
        "--store",
        action="append",
        choices=STORES,
        default=[],
        help=f"also measure {', '.join(STORED_AGENTS)} recording in this store (repeat for both)",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("agent_instructions.py needs valgrind (Debian: apt-get install valgrind)")
    agents = args.agent or AGENTS
    stored = [agent for agent in agents if agent in STORED_AGENTS]
    if args.store and not stored:
        raise SystemExit(f"--store needs an agent that takes a store: --agent {' or '.join(STORED_AGENTS)}")
    n = 200 if args.quick else 1000

    def per_update(agent: str, store: str | None) -> float:
        extra = [
            instructions(agent, 3 * n, store) - instructions(agent, n, store) for _ in range(args.repeat)
        ]
        return statistics.median(extra) / (2 * n)

    for agent in agents:
        alone = per_update(agent, None)
        print(f"{agent:10}: {alone:9,.0f} instructions/update")
        for store in args.store if agent in stored else []:
            recorded = per_update(agent, store)
            label = f"{agent} + {store}"
            print(f"{label:10}: {recorded:9,.0f} instructions/update, {recorded - alone:+,.0f} for the store")


if __name__ == "__main__":
    main()
