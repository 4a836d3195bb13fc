"""Where the time of one typed ``session/update`` goes, stage by stage, on each side of the pipe.

    .venv/bin/python benchmarks/breakdown.py [--updates 50000] [--repeat 5]
    .venv/bin/python benchmarks/breakdown.py --instructions [--calls 2000]

In one process, without pipes: each stage timed on its own over ``--updates`` updates (the best of
``--repeat`` runs, in microseconds per update), then each side whole, as the benchmark agent and
client run it, over an in-memory transport. What the stages do not add up to is the engine and
asyncio around them (dispatch, the handler call, the event loop). The pipe and the other process
come on top (``run.py`` measures them together). Figures for the README come from this script.

``--instructions`` counts each stage's CPU instructions per update with valgrind's callgrind
instead: slower (about half a minute per stage), but a figure that other work on the machine
does not move, to compare two versions of a stage on a shared machine. It then counts the client
side whole, per update received, as a user's client receives it: through a typed handler
(``on_notification``), and through ``session.read_to_string()`` (a session reading a turn from an
in-process agent); each from the difference between two runs of different lengths, so that
setting the connection up is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import importlib.util
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import orjson
from _callgrind import collected

from acpio import Client
from acpio import schema as acp
from acpio.jsonrpc import Connection
from acpio.jsonrpc.messages import decode, encode_notification, notification_from_bytes, notification_head
from acpio.jsonrpc.typed import fast_validator
from acpio.session.turn_view import text_chunk
from acpio.transports import Lines
from acpio.transports.lines import LineSplitter


def _load_agent() -> Any:
    """``peers/acpio_agent.py`` (the benchmark agent itself, served in-process below), loaded by path."""
    spec = importlib.util.spec_from_file_location(
        "acpio_bench_agent", Path(__file__).parent / "peers" / "acpio_agent.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


acpio_agent = _load_agent()

SESSION = "bench-1"


def build() -> acp.SessionNotification:
    """A fresh typed update, as the benchmark agent builds each one."""
    chunk = acp.AgentMessageChunk(content=acp.TextContent(text="chunk"))
    return acp.SessionNotification(session_id=SESSION, update=chunk)


def per_update(work: Callable[[], object], updates: int, repeat: int) -> float:
    """The best time of ``repeat`` runs of ``updates`` calls, in microseconds per call."""
    work()
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(updates):
            work()
        best = min(best, time.perf_counter() - start)
    return best / updates * 1e6


async def _agent_side(updates: int) -> float:
    """The benchmark agent answering ``stream N`` over a transport that discards what it writes."""
    prompt = {"sessionId": SESSION, "prompt": [{"type": "text", "text": f"stream {updates}"}]}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt},
    ]
    chunks = [orjson.dumps(line) + b"\n" for line in lines]
    done = asyncio.Event()
    answered = 0

    async def read() -> bytes:
        if chunks:
            return chunks.pop(0)
        await done.wait()
        return b""

    async def write(data: bytes) -> None:
        nonlocal answered
        answered += data.count(b'"id":')
        if answered >= 2:
            done.set()

    start = time.perf_counter()
    await acpio_agent.app.serve(Lines(read, write))
    return time.perf_counter() - start


async def _client_side(updates: int) -> float:
    """The benchmark client's typed handler fed ``updates`` updates read from a transport."""
    line = encode_notification("session/update", build()) + b"\n"
    full, rest = divmod(updates, 256 * 1024 // len(line))
    chunks = [line * (256 * 1024 // len(line))] * full + ([line * rest] if rest else [])
    received = 0
    app = Client.builder(name="breakdown")

    @app.on_notification
    async def on_update(note: acp.SessionNotification, cx: Connection) -> None:
        nonlocal received
        if isinstance(note.update, acp.AgentMessageChunk):
            received += 1

    async def read() -> bytes:
        return chunks.pop() if chunks else b""

    async def write(data: bytes) -> None:
        pass

    start = time.perf_counter()
    await app.serve(Lines(read, write))
    elapsed = time.perf_counter() - start
    assert received == updates, received
    return elapsed


async def _reading_side(updates: int) -> float:
    """A session's ``read_to_string()`` reading a turn of ``updates`` text chunks from an agent in process.

    The agent is this transport: it answers ``initialize``, ``session/new`` and ``session/prompt``
    from the client's frames, the turn's updates written in one chunk before the prompt's answer.
    """
    line = encode_notification("session/update", build()) + b"\n"
    inbox: asyncio.Queue[bytes] = asyncio.Queue()
    results = {
        "initialize": {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []},
        "session/new": {"sessionId": SESSION},
        "session/prompt": {"stopReason": "end_turn"},
    }

    async def read() -> bytes:
        return await inbox.get()

    async def write(data: bytes) -> None:
        for sent in data.splitlines():
            message = orjson.loads(sent)
            result = results.get(message.get("method"))
            if result is None or "id" not in message:
                continue
            if message["method"] == "session/prompt":
                inbox.put_nowait(line * updates)
            inbox.put_nowait(orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + b"\n")

    async def main(cx: Any) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session("/tmp").start_session() as session:
            session.send_prompt("stream")
            text: str = await session.read_to_string()
            return text

    app = Client.builder(name="breakdown")
    start = time.perf_counter()
    text = await app.connect_with(Lines(read, write), main)
    elapsed = time.perf_counter() - start
    assert text == "chunk" * updates, len(text)
    return elapsed


#: The client side whole, as ``--instructions`` counts it per update: how a client receives them.
SIDES: list[tuple[str, Callable[[int], Any]]] = [
    ("whole side: a typed handler (on_notification)", _client_side),
    ("whole side: session.read_to_string()", _reading_side),
]


#: Client stages that stand for another: decoding the whole frame (a method no handler of the
#: builder names), the text of a session's text chunk read without its model (instead of
#: validating it). Shown with a ``*``, left out of the side's sum.
INSTEAD: Final = frozenset(
    {"envelope: decode (orjson.loads + classify)", "text: text_chunk on the decoded params"}
)


#: One stage: its side, its label, the work of one call, and how many updates one call handles.
Stage = tuple[str, str, Callable[[], object], int]


def stages() -> list[Stage]:
    """The stages timed one by one, each with its work (prepared here, once)."""
    text = acp.TextContent(text="chunk")
    chunk = acp.AgentMessageChunk(content=text)
    note = build()
    frame = encode_notification("session/update", note)
    params = orjson.loads(frame)["params"]
    validate = fast_validator(acp.SessionNotification)
    head = notification_head("session/update")
    assert head is not None
    splitter = LineSplitter()
    block = (frame + b"\n") * 1000
    return [
        ("agent", "TextContent(text=...)", lambda: acp.TextContent(text="chunk"), 1),
        ("agent", "AgentMessageChunk(content=...)", lambda: acp.AgentMessageChunk(content=text), 1),
        (
            "agent",
            "SessionNotification(session_id, update)",
            lambda: acp.SessionNotification(session_id=SESSION, update=chunk),
            1,
        ),
        (
            "agent",
            "frame: encode_notification (to_wire_json)",
            lambda: encode_notification("session/update", note),
            1,
        ),
        ("agent", "transport: frame + newline, queued", lambda: frame + b"\n", 1),
        ("client", "transport: LineSplitter.feed (per line)", lambda: splitter.feed(block), 1000),
        (
            "client",
            "envelope: params cut out and decoded",
            lambda: notification_from_bytes(frame, head, "session/update"),
            1,
        ),
        ("client", "envelope: decode (orjson.loads + classify)", lambda: decode(frame), 1),
        ("client", "validation: SessionNotification", lambda: validate(params), 1),
        ("client", "text: text_chunk on the decoded params", lambda: text_chunk(params, 1), 1),
    ]


def count_instructions(calls: int, stages_too: bool = True) -> int:
    """Each stage's CPU instructions per update, counted by callgrind: a figure the load does not move.

    Each stage runs ``calls`` times in a process of its own under ``valgrind --tool=callgrind``,
    counting only inside ``functools.reduce`` (the loop of calls, after the imports and a warm-up);
    an empty call measured the same way is subtracted. Then the whole sides (:data:`SIDES`); only
    those without ``stages_too``.
    """
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("--instructions needs valgrind (apt-get install valgrind)", file=sys.stderr)
        return 2
    print(f"{'side':<7} {'stage':<45} {'instructions/update':>20}")
    rows = [("", "(an empty call)", None, 1), *stages()] if stages_too else []
    empty = 0.0
    for index, (side, label, _, per_call) in enumerate(rows):
        per = _callgrind(valgrind, ["--run-stage", str(index - 1), "--calls", str(calls)]) / calls
        if index == 0:
            empty = per
            continue
        print(f"{side:<7} {label + ('*' if label in INSTEAD else ''):<45} {(per - empty) / per_call:>20,.0f}")
    if stages_too:
        print(f"\n{calls:,} calls per stage; an empty call ({empty:,.0f} instructions) subtracted;")
        print("* instead of another stage: what a frame read otherwise costs\n")
    short, long = SIDE_UPDATES
    for index, (label, _) in enumerate(SIDES):
        counts = [
            _callgrind(valgrind, ["--run-side", str(index), "--updates", str(n)]) for n in (short, long)
        ]
        print(f"{'client':<7} {label:<45} {(counts[1] - counts[0]) / (long - short):>20,.0f}")
    print(f"\nwhole sides: the difference between {long:,} and {short:,} updates, per update")
    return 0


#: The two lengths of run whose difference counts a whole side.
SIDE_UPDATES: Final = (1000, 3000)


def _callgrind(valgrind: str, args: list[str]) -> int:
    """The instructions counted inside ``functools.reduce`` in this script run with ``args``."""
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(
            [
                valgrind,
                "--tool=callgrind",
                "--collect-atstart=no",
                "--toggle-collect=functools_reduce",
                f"--callgrind-out-file={Path(tmp) / 'out'}",
                sys.executable,
                __file__,
                *args,
            ],
            capture_output=True,
            text=True,
            check=True,
        )
    return collected(done.stderr)


def run_side(index: int, updates: int) -> int:
    """Run one whole side over ``updates`` updates inside ``functools.reduce`` (``--instructions``)."""
    side = SIDES[index][1]
    functools.reduce(lambda count, _: asyncio.run(side(updates)) and count, range(1), 0)
    return 0


def run_stage(index: int, calls: int) -> int:
    """Run one stage ``calls`` times inside ``functools.reduce`` (what ``--instructions`` counts)."""
    work: Callable[[], object] = (lambda: None) if index < 0 else stages()[index][2]
    for _ in range(50):
        work()

    def step(count: int, _: int) -> int:
        work()
        return count

    functools.reduce(step, range(calls), 0)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Print the table of stages."""
    parser = argparse.ArgumentParser(prog="benchmarks/breakdown.py", description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=50_000, help="updates per timed run")
    parser.add_argument("--repeat", type=int, default=5, help="runs per stage (the best is kept)")
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count each stage's CPU instructions with valgrind's callgrind instead of timing it",
    )
    parser.add_argument("--calls", type=int, default=2000, help="calls per stage with --instructions")
    parser.add_argument(
        "--sides-only", action="store_true", help="with --instructions: count the whole client sides only"
    )
    parser.add_argument("--run-stage", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--run-side", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.run_stage is not None:
        return run_stage(args.run_stage, args.calls)
    if args.run_side is not None:
        return run_side(args.run_side, args.updates)
    if args.instructions:
        return count_instructions(args.calls, stages_too=not args.sides_only)
    n, repeat = args.updates, args.repeat

    rows: list[tuple[str, str, float]] = [
        (side, label, per_update(work, max(n // per_call, 10), repeat) / per_call)
        for side, label, work, per_call in stages()
    ]
    agent_total = min(asyncio.run(_agent_side(n)) for _ in range(repeat)) / n * 1e6
    client_total = min(asyncio.run(_client_side(n)) for _ in range(repeat)) / n * 1e6

    print(f"{'side':<7} {'stage':<45} {'us/update':>10}")
    for side, total in (("agent", agent_total), ("client", client_total)):
        own = [row for row in rows if row[0] == side]
        for _, stage, micros in own:
            print(f"{side:<7} {stage + ('*' if stage in INSTEAD else ''):<45} {micros:>10.2f}")
        rest = total - sum(micros for _, stage, micros in own if stage not in INSTEAD)
        print(f"{side:<7} {'engine and asyncio (the rest)':<45} {rest:>10.2f}")
        print(f"{side:<7} {'whole side, in process':<45} {total:>10.2f}")
    print("\n* instead of another stage: what a frame read otherwise costs", end="")
    print(
        f"\nbest of {repeat} runs of {n:,} updates each; load average {__import__('os').getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
