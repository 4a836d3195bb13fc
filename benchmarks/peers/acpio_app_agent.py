"""The benchmark agent on acpio as most users write one: an :class:`~acpio.AgentApp` and a prompt function.

The app declares one session mode, ``bench`` (the mode every benchmark round trip asks for), so that
it serves ``session/set_mode`` and answers it ``{}`` as the other benchmark agents do; ``session/new``
answers with its id and that mode. A prompt whose text reads ``stream N`` is answered with N
``turn.say("chunk")`` (each an ``agent_message_chunk`` with the text ``chunk``, the same update the
other agents send; ``say`` waits for the client when it has more than 256 KiB unread) and
``end_turn``. It runs on asyncio's event loop, as the floor and ``acpio_agent.py`` do. Run by a client
over stdio: ``python benchmarks/peers/acpio_app_agent.py``. It has no benchmark client: ``acpio_app`` is
an agent-only implementation in ``benchmarks/run.py``. With ``ACPIO_BENCH_STORE`` set to a store's URL
(``memory:``, ``sqlite:///path``) the app keeps its sessions there and records every update
(``benchmarks/agent_instructions.py --store``).
"""

from __future__ import annotations

import os

import acpio
from acpio import AgentApp, StopReasonName, Turn
from acpio.running import EVENT_LOOP_VARIABLE
from acpio.transports import Stdio

STREAM_PREFIX = "stream "
#: The mode the benchmark clients set in every round trip (``_harness.MODE_ID``).
MODE_ID = "bench"

#: The environment variable naming the store the app records its sessions in (none when unset).
STORE_VARIABLE = "ACPIO_BENCH_STORE"

app = AgentApp("bench-app-agent", store=os.environ.get(STORE_VARIABLE))
app.mode(MODE_ID, "Benchmark")


@app.prompt
async def prompt(turn: Turn) -> StopReasonName:
    text = turn.text
    count = int(text.removeprefix(STREAM_PREFIX)) if text.startswith(STREAM_PREFIX) else 0
    for _ in range(count):
        await turn.say("chunk")
    return "end_turn"


if __name__ == "__main__":
    os.environ[EVENT_LOOP_VARIABLE] = "asyncio"
    acpio.run(app.serve(Stdio()))
