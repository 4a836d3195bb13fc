"""Benchmark acpio against the official ACP SDKs: client process <-> agent process over stdio pipes.

    .venv/bin/python benchmarks/run.py [--repeat 3] [--quick] [--scenarios roundtrip,pinned,stream,spawn]
                                       [--impls acpio,official,ts,bare]
                                       [--pairs CLIENT:AGENT,...|default|targets|all]
                                       [--requests N] [--updates N] [--spawns K] [--cpu N] [--output FILE]

Implementations: ``acpio`` (the builder style); ``acpio_app``, an ``AgentApp`` agent (an agent only: no
client); ``official``, the official Python SDK (``agent-client-protocol``, in its own virtualenv); ``ts``,
the official TypeScript SDK (``@agentclientprotocol/sdk`` on Node); ``bare``, a plain asyncio + orjson
loop with no ACP library, the floor; ``pydantic``, the floor's agent with pydantic models and nothing of
acpio, the typed floor (an agent only). Each has a benchmark agent and client in ``benchmarks/peers/``; the
peers are installed by ``peers/install.py`` on first use, and a pairing whose peer cannot be installed is
left out with the reason.

For each pairing, the client spawns the agent and measures (see ``benchmarks/peers/_harness.py``):

* ``roundtrip``: sequential typed ``session/set_mode`` requests, one in flight: req/s, p50, p99;
* ``pinned``: the same round trips with the client and its agent pinned to one CPU (``--cpu``, as
  ``taskset -c`` pins them), where a round trip costs the CPU work of both sides and not where the
  scheduler puts two processes on two cores;
* ``stream``: one ``session/prompt`` answered after N typed ``agent_message_chunk`` updates, each received
  as an SDK model by the client's typed handler: N / (send to answer with all N handled);
* ``spawn``: spawn to the ``initialize`` reply, a fresh agent each time (median of ``--spawns``);
* the agent's idle RSS after ``initialize`` + ``session/new``, and its peak RSS (VmHWM) after streaming.

Every scenario runs ``--repeat`` times (pairings interleaved); one table of medians goes to stdout, with
ratios to the official Python pair, the TypeScript pair and the floor, then issue 34's targets judged on
figures of the same run (ratios, not absolute figures: ``targets.py``), and the interpreter the Python
peers ran on and whether it is optimised (``interpreter.py``); all runs go to
``benchmarks/results/<timestamp>.json``. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import compileall
import dataclasses
import datetime
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType
from typing import Any

import interpreter
from targets import FLOOR, PAIRS_NEEDED, Judgement, targets_table

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PEERS = HERE / "peers"
RESULTS = HERE / "results"

IMPLEMENTATIONS = ("acpio", "acpio_app", "acpio_uvloop", "official", "ts", "bare", "pydantic")
#: The implementations with a benchmark agent and no client.
AGENTS_ONLY = ("acpio_app", "pydantic")
LABELS = {
    "acpio": "acpio, builder style (on asyncio's event loop, as the floor)",
    "acpio_app": "acpio's AgentApp, a prompt function calling turn.say (an agent only; on asyncio's loop)",
    "acpio_uvloop": "acpio on uvloop (acpio[fast]: acpio.run() and the acpio commands use it when installed)",
    "official": "official Python SDK",
    "ts": "TypeScript SDK",
    "bare": "bare asyncio+orjson loop (the floor, no validation)",
    "pydantic": "the floor's agent with pydantic models, nothing of acpio (the typed floor; an agent only)",
}
#: The pairings run by default (client, agent): each SDK with itself, the floor, the mixed pairs that
#: involve acpio, the AgentApp agent, and the floor's client against acpio's agents and the TS agent
#: (each agent on its own) and the floor's agent against acpio's client; issue 34's targets need
#: ``targets.PAIRS_NEEDED``, all among these.
DEFAULT_PAIRS = (
    ("acpio", "acpio"),
    ("acpio", "acpio_app"),
    ("acpio_uvloop", "acpio_uvloop"),
    ("official", "official"),
    ("ts", "ts"),
    ("bare", "bare"),
    ("acpio", "ts"),
    ("ts", "acpio"),
    ("acpio", "official"),
    ("official", "acpio"),
    ("bare", "acpio"),
    ("bare", "acpio_app"),
    ("bare", "ts"),
    ("bare", "pydantic"),
    ("acpio", "bare"),
)
assert set(PAIRS_NEEDED) <= set(DEFAULT_PAIRS)
SCENARIOS = ("roundtrip", "pinned", "stream", "spawn")
PRINT_OFFICIAL_VERSION = "import importlib.metadata as m; print(m.version('agent-client-protocol'))"
BASELINES = (("official", "official"), ("ts", "ts"), FLOOR)


@dataclasses.dataclass(frozen=True)
class Figure:
    """One line of figures in the table."""

    key: str
    label: str
    higher_is_better: bool
    scenario: str


FIGURES = (
    Figure("req_per_s", "round trips (req/s)", True, "roundtrip"),
    Figure("p50_us", "round trip p50 (us)", False, "roundtrip"),
    Figure("p99_us", "round trip p99 (us)", False, "roundtrip"),
    Figure("pinned_req_per_s", "round trips pinned to one CPU (req/s)", True, "pinned"),
    Figure("pinned_p50_us", "round trip p50 pinned (us)", False, "pinned"),
    Figure("msgs_per_s", "streaming (msgs/s)", True, "stream"),
    Figure("spawn_ms", "spawn -> initialize (ms)", False, "spawn"),
    Figure("idle_rss_mb", "agent idle RSS (MB)", False, "session"),
    Figure("peak_rss_mb", "agent peak RSS (MB)", False, "stream"),
)
#: The figures a pinned run reports, under the names the table gives them.
PINNED_KEYS = {"req_per_s": "pinned_req_per_s", "p50_us": "pinned_p50_us", "p99_us": "pinned_p99_us"}


@dataclasses.dataclass(frozen=True)
class Implementation:
    """How to start one implementation's benchmark client (``None``: it has none) and agent."""

    name: str
    client: list[str] | None
    agent: list[str]
    version: str
    #: The Python interpreter it runs on (``interpreter.describe``); ``None`` for Node.
    interpreter: dict[str, Any] | None = None


@dataclasses.dataclass
class Settings:
    """What to run, from the command line."""

    repeat: int
    requests: int
    updates: int
    spawns: int
    scenarios: tuple[str, ...]
    pairs: list[tuple[str, str]]
    timeout: float
    #: The CPU the ``pinned`` scenario pins both processes of a pair to.
    cpu: int

    @property
    def warmup_requests(self) -> int:
        """Untimed round trips before the timed ones (the JIT, caches and lazy models warm up)."""
        return max(self.requests // 10, 100)

    @property
    def warmup_updates(self) -> int:
        """Updates in an untimed prompt before the timed one."""
        return max(self.updates // 10, 1000)


class BenchmarkError(Exception):
    """A mistake in the command line or the environment; printed as one line, exit status 2."""


# --- the command line ---------------------------------------------------------------------------


def parse_settings(argv: Sequence[str] | None) -> tuple[Settings, Path | None]:
    """The settings and the JSON output path (``None``: a timestamped file in ``benchmarks/results``)."""
    parser = argparse.ArgumentParser(
        prog="benchmarks/run.py",
        description="Benchmark acpio against the official ACP SDKs (client process <-> agent process).",
        epilog=f"implementations: {', '.join(f'{name} ({LABELS[name]})' for name in IMPLEMENTATIONS)}",
    )
    parser.add_argument("--repeat", type=int, help="repetitions of every scenario (default 3; --quick: 1)")
    parser.add_argument("--quick", action="store_true", help="small sizes and one repetition: a smoke check")
    parser.add_argument(
        "--scenarios",
        default=",".join(SCENARIOS),
        help=f"comma-separated, from {', '.join(SCENARIOS)} (default: all; memory comes with the first two)",
    )
    parser.add_argument(
        "--impls",
        help="keep only the pairings whose client and agent are both among these (comma-separated)",
    )
    parser.add_argument(
        "--pairs",
        default="default",
        help="CLIENT:AGENT pairings, comma-separated; 'default' (SDKs with themselves, the floor, and the "
        "mixed pairs with acpio), 'targets' (only those issue 34's targets need) or 'all' (every client "
        "with every agent)",
    )
    parser.add_argument(
        "--requests", type=int, help="timed round trips per run (default 20000; --quick: 300)"
    )
    parser.add_argument(
        "--updates", type=int, help="streamed updates per run (default 100000; --quick: 2000)"
    )
    parser.add_argument("--spawns", type=int, help="spawns timed per run (default 5; --quick: 2)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds one client run may take")
    parser.add_argument(
        "--cpu",
        type=int,
        help="the CPU of the pinned round trips (default: the last one this process may run on)",
    )
    parser.add_argument(
        "--output", type=Path, help="the JSON file (default: benchmarks/results/<timestamp>.json)"
    )
    args = parser.parse_args(argv)
    try:
        settings = _settings(args)
    except BenchmarkError as error:
        parser.error(str(error))
    return settings, args.output


def _settings(args: argparse.Namespace) -> Settings:
    def pick(value: int | None, normal: int, quick: int, what: str) -> int:
        chosen = value if value is not None else (quick if args.quick else normal)
        if chosen < 1:
            raise BenchmarkError(f"{what} must be at least 1, not {chosen}")
        return chosen

    scenarios = tuple(_names(args.scenarios, SCENARIOS, "scenario"))
    allowed = sorted(os.sched_getaffinity(0))
    cpu = allowed[-1] if args.cpu is None else args.cpu
    if cpu not in allowed:
        raise BenchmarkError(
            f"--cpu {cpu} is not a CPU this process may run on: choose from {', '.join(map(str, allowed))}"
        )
    pairs = _pairs(args.pairs)
    if args.impls is not None:
        keep = set(_names(args.impls, IMPLEMENTATIONS, "implementation"))
        pairs = [pair for pair in pairs if set(pair) <= keep]
        if not pairs:
            raise BenchmarkError(f"no pairing of --pairs {args.pairs} has both ends in --impls {args.impls}")
    return Settings(
        repeat=pick(args.repeat, 3, 1, "--repeat"),
        requests=pick(args.requests, 20_000, 300, "--requests"),
        updates=pick(args.updates, 100_000, 2_000, "--updates"),
        spawns=pick(args.spawns, 5, 2, "--spawns"),
        scenarios=scenarios,
        pairs=pairs,
        timeout=args.timeout,
        cpu=cpu,
    )


def _names(text: str, known: Sequence[str], what: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise BenchmarkError(
            f"unknown {what} {', '.join(unknown) or repr(text)}: choose from {', '.join(known)}"
        )
    return names


def _pairs(text: str) -> list[tuple[str, str]]:
    if text == "default":
        return list(DEFAULT_PAIRS)
    if text == "targets":
        return list(PAIRS_NEEDED)
    if text == "all":
        clients = [name for name in IMPLEMENTATIONS if name not in AGENTS_ONLY]
        return [(client, agent) for client in clients for agent in IMPLEMENTATIONS]
    pairs = []
    for word in text.split(","):
        client, colon, agent = word.strip().partition(":")
        if not colon:
            raise BenchmarkError(
                f"--pairs takes CLIENT:AGENT pairings such as acpio:ts, not {word.strip()!r}"
            )
        _names(client, IMPLEMENTATIONS, "implementation")
        _names(agent, IMPLEMENTATIONS, "implementation")
        if client in AGENTS_ONLY:
            raise BenchmarkError(
                f"{client} is an agent only (it has no benchmark client): pair it as CLIENT:{client}"
            )
        pairs.append((client, agent))
    return pairs


# --- the implementations ------------------------------------------------------------------------


def _load_installer() -> ModuleType:
    """``peers/install.py``, loaded by path (``benchmarks/peers`` would shadow a ``peers`` import)."""
    spec = importlib.util.spec_from_file_location("acpio_peers_install", ROOT / "peers" / "install.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def locate(
    names: set[str], progress: Callable[[str], None]
) -> tuple[dict[str, Implementation], dict[str, str]]:
    """The implementations that can run, and why the others cannot."""
    found: dict[str, Implementation] = {}
    missing: dict[str, str] = {}
    python = sys.executable
    if names & {"acpio", "acpio_app", "acpio_uvloop", "bare", "pydantic"}:
        for module in ("acpio", "orjson"):
            if importlib.util.find_spec(module) is None:
                raise BenchmarkError(
                    f"{python} cannot import {module}: run the driver with the project's virtualenv, "
                    "`.venv/bin/python benchmarks/run.py` (or `make bench`)"
                )
        compile_acpio()
    if "acpio" in names:
        found["acpio"] = _python_impl("acpio", python, version("acpio"))
    if "acpio_app" in names:
        found["acpio_app"] = _python_impl("acpio_app", python, version("acpio"))
    if "acpio_uvloop" in names:
        try:
            uvloop = version("uvloop")
        except PackageNotFoundError:
            missing["acpio_uvloop"] = "uvloop is not installed: pip install 'acpio[fast]' (acpio[dev] has it)"
        else:
            versions = f"acpio {version('acpio')}, uvloop {uvloop}"
            found["acpio_uvloop"] = _python_impl("acpio_uvloop", python, versions)
    if "bare" in names:
        found["bare"] = _python_impl("bare", python, f"orjson {version('orjson')}")
    if "pydantic" in names:
        found["pydantic"] = _python_impl("pydantic", python, f"pydantic {version('pydantic')}")
    install = _load_installer() if names & {"official", "ts"} else None
    if "official" in names:
        assert install is not None
        progress("installing or finding the official Python SDK (peers/install.py) ...")
        try:
            official = str(install.official_python())
        except install.PeersUnavailable as error:
            missing["official"] = str(error)
        else:
            sdk = _output([official, "-c", PRINT_OFFICIAL_VERSION])
            found["official"] = _python_impl("official", official, f"agent-client-protocol {sdk}")
    if "ts" in names:
        assert install is not None
        progress("installing or finding the TypeScript SDK (peers/install.py) ...")
        try:
            modules, node = str(install.node_modules()), str(install.node())
        except install.PeersUnavailable as error:
            missing["ts"] = str(error)
        else:
            manifest = Path(modules) / "@agentclientprotocol" / "sdk" / "package.json"
            sdk = json.loads(manifest.read_text())["version"]
            tail = ["--node-modules", modules]
            found["ts"] = Implementation(
                "ts",
                client=[node, str(PEERS / "ts_client.mjs"), *tail],
                agent=[node, str(PEERS / "ts_agent.mjs"), *tail],
                version=f"@agentclientprotocol/sdk {sdk} on Node {_output([node, '--version'])}",
            )
    return found, missing


def compile_acpio() -> None:
    """Write acpio's bytecode, as installing a package does.

    A checkout run with ``PYTHONDONTWRITEBYTECODE`` (or just edited) would otherwise compile the
    schema's modules again in every process it spawns, and time that as start-up.
    """
    import acpio

    compileall.compile_dir(Path(acpio.__file__).parent, quiet=1)


def _python_impl(name: str, python: str, version: str) -> Implementation:
    described = interpreter.describe(python)
    return Implementation(
        name,
        client=None if name in AGENTS_ONLY else [python, str(PEERS / f"{name}_client.py")],
        agent=[python, str(PEERS / f"{name}_agent.py")],
        version=f"{version} on {interpreter.summary(described)}",
        interpreter=described,
    )


def _output(command: list[str]) -> str:
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


# --- running ------------------------------------------------------------------------------------


class RunFailed(Exception):
    """A client run failed; ``str()`` has the command's stderr tail."""


def run_client(
    client: Implementation,
    agent: Implementation,
    options: list[str],
    timeout: float,
    cpu: int | None = None,
) -> Any:
    """Run ``client`` against ``agent`` with ``options``; return the figures it reports.

    With ``cpu`` the client runs pinned to that CPU, as ``taskset -c`` pins it, and so does the
    agent it spawns (a child keeps its parent's CPU affinity).
    """
    assert client.client is not None, f"{client.name} has no benchmark client"
    command = [*client.client, "--agent", json.dumps(agent.agent), *options]

    def pin() -> None:
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})

    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout, cwd=ROOT, preexec_fn=pin
        )
    except subprocess.TimeoutExpired as error:
        raise RunFailed(f"timed out after {timeout:g} s (raise --timeout)") from error
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-6:])
        raise RunFailed(f"exit status {done.returncode}: {tail}")
    lines = done.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, ValueError) as error:
        raise RunFailed(f"the client reported no figures; stderr: {done.stderr.strip()[-500:]}") from error


def session_options(settings: Settings) -> list[str]:
    """The client options for one session run of the selected scenarios."""
    options = []
    if "roundtrip" in settings.scenarios:
        options += round_trip_options(settings)
    if "stream" in settings.scenarios:
        options += ["--updates", str(settings.updates), "--warmup-updates", str(settings.warmup_updates)]
    return options


def round_trip_options(settings: Settings) -> list[str]:
    """The client options for the round trips alone."""
    return ["--requests", str(settings.requests), "--warmup-requests", str(settings.warmup_requests)]


@dataclasses.dataclass
class PairResult:
    """Every run of one pairing."""

    client: str
    agent: str
    runs: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    #: The repetition (from 1) each value of ``runs`` comes from, in the same order.
    repetitions: dict[str, list[int]] = dataclasses.field(default_factory=dict)
    spawn_samples: list[float] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)

    @property
    def label(self) -> str:
        """``client -> agent``."""
        return f"{self.client} -> {self.agent}"

    def add(self, figures: dict[str, Any], repetition: int) -> None:
        """Record one run's figures (a spawn run's samples count as one run: their median)."""
        for key, value in figures.items():
            if key == "spawn_ms":
                self.spawn_samples.extend(value)
                value = statistics.median(value)
            self.runs.setdefault(key, []).append(float(value))
            self.repetitions.setdefault(key, []).append(repetition)

    def median(self, key: str) -> float | None:
        """The median over the runs of ``key``, or ``None`` if it was not measured."""
        values = self.runs.get(key)
        return statistics.median(values) if values else None

    def by_repetition(self, key: str) -> dict[int, float]:
        """Each repetition's value of ``key``, by repetition number (those that were measured)."""
        return dict(zip(self.repetitions.get(key, []), self.runs.get(key, []), strict=True))


def run_all(
    settings: Settings, impls: dict[str, Implementation], progress: Callable[[str], None]
) -> dict[tuple[str, str], PairResult]:
    """Every selected scenario for every pairing, ``settings.repeat`` times, pairings interleaved."""
    results = {pair: PairResult(*pair) for pair in settings.pairs if set(pair) <= impls.keys()}
    options = session_options(settings)
    for rep in range(1, settings.repeat + 1):
        for (client, agent), result in results.items():
            prefix = f"[{rep}/{settings.repeat}] {result.label}:"
            try:
                if options:
                    figures = run_client(impls[client], impls[agent], options, settings.timeout)
                    result.add(figures, rep)
                    progress(f"{prefix} {_summary(figures)}")
                if "pinned" in settings.scenarios:
                    pinned_options = round_trip_options(settings)
                    figures = run_client(
                        impls[client], impls[agent], pinned_options, settings.timeout, settings.cpu
                    )
                    result.add({PINNED_KEYS[key]: figures[key] for key in PINNED_KEYS}, rep)
                    progress(f"{prefix} pinned to CPU {settings.cpu}: {figures['req_per_s']:,.0f} req/s")
                if "spawn" in settings.scenarios:
                    spawn_options = ["--spawns", str(settings.spawns)]
                    figures = run_client(impls[client], impls[agent], spawn_options, settings.timeout)
                    result.add(figures, rep)
                    progress(f"{prefix} spawn -> initialize {statistics.median(figures['spawn_ms']):,.0f} ms")
            except RunFailed as error:
                result.errors.append(f"run {rep}: {error}")
                progress(f"{prefix} FAILED: {error}")
    return results


def _summary(figures: dict[str, Any]) -> str:
    parts = []
    if "req_per_s" in figures:
        parts.append(f"{figures['req_per_s']:,.0f} req/s")
    if "msgs_per_s" in figures:
        parts.append(f"{figures['msgs_per_s']:,.0f} msgs/s")
    parts.append(f"idle {figures['idle_rss_mb']:.1f} MB")
    return ", ".join(parts)


# --- the report ---------------------------------------------------------------------------------


def table(results: dict[tuple[str, str], PairResult], settings: Settings) -> str:
    """The one table: a row per figure and pairing, with medians and the ratios to the baselines."""
    header = (
        "figure",
        "client -> agent",
        "median",
        "vs official",
        "vs TS",
        "vs floor",
    )
    rows: list[tuple[str, ...]] = []
    for figure in FIGURES:
        if figure.scenario != "session" and figure.scenario not in settings.scenarios:
            continue
        if figure.scenario == "session" and not set(settings.scenarios) & {"roundtrip", "stream"}:
            continue
        baselines = [results[pair].median(figure.key) if pair in results else None for pair in BASELINES]
        arrow = "higher" if figure.higher_is_better else "lower"
        first = True
        for result in results.values():
            value = result.median(figure.key)
            label = f"{figure.label}, {arrow} is better" if first else ""
            first = False
            if value is None:
                rows.append((label, result.label, "failed" if result.errors else "-", "", "", ""))
                continue
            ratios = tuple(f"{value / base:.2f}x" if base else "-" for base in baselines)
            rows.append((label, result.label, _number(value), *ratios))
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    aligned = [str.ljust, str.ljust, str.rjust, str.rjust, str.rjust, str.rjust]

    def line(row: tuple[str, ...]) -> str:
        cells = (align(cell, width) for cell, width, align in zip(row, widths, aligned, strict=True))
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * width for width in widths)
    return "\n".join([line(header), rule, *(line(row) for row in rows)])


def _number(value: float) -> str:
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def footer(
    settings: Settings, impls: dict[str, Implementation], missing: dict[str, str], load: tuple[float, ...]
) -> str:
    """What was run, on what, and what could not be."""
    sizes = []
    if "roundtrip" in settings.scenarios:
        sizes.append(f"{settings.requests:,} round trips (+{settings.warmup_requests:,} warm-up)")
    if "pinned" in settings.scenarios:
        sizes.append(f"as many pinned to CPU {settings.cpu}")
    if "stream" in settings.scenarios:
        sizes.append(f"{settings.updates:,} updates (+{settings.warmup_updates:,} warm-up)")
    if "spawn" in settings.scenarios:
        sizes.append(f"{settings.spawns} spawns")
    runs = f"{settings.repeat} run{'s' if settings.repeat > 1 else ''}"
    lines = [
        f"medians of {runs}; per run: {', '.join(sizes)}",
        "ratios: this row / official -> official, / ts -> ts, and / bare -> bare (the floor)",
        f"driver: {interpreter.summary(interpreter.describe_self())}",
    ]
    for name, impl in impls.items():
        lines.append(f"{name}: {LABELS[name]}, {impl.version}")
    for name, reason in missing.items():
        lines.append(f"{name}: not run: {reason}")
    lines.append(
        f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} at the start and "
        f"{os.getloadavg()[0]:.2f} at the end (other work on the machine makes figures noisy)"
    )
    return "\n".join(lines)


def write_json(
    path: Path,
    settings: Settings,
    impls: dict[str, Implementation],
    missing: dict[str, str],
    results: dict[tuple[str, str], PairResult],
    started: datetime.datetime,
    load: tuple[float, ...],
    judgements: list[Judgement],
) -> None:
    """Every run, the medians, their ratios to the floor, the targets and the context, as JSON."""
    floor = results.get(FLOOR)
    document = {
        "started": started.isoformat(timespec="seconds"),
        "finished": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": sys.argv,
        "settings": {
            **{k: v for k, v in dataclasses.asdict(settings).items() if k != "pairs"},
            "warmup_requests": settings.warmup_requests,
            "warmup_updates": settings.warmup_updates,
        },
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_start": list(load),
            "loadavg_end": list(os.getloadavg()),
        },
        "interpreter": interpreter.describe_self(),
        "implementations": {name: dataclasses.asdict(impl) for name, impl in impls.items()},
        "unavailable": missing,
        "results": [
            {
                "client": result.client,
                "agent": result.agent,
                "medians": {key: result.median(key) for key in result.runs},
                "ratios_to_floor": _ratios(result, floor),
                "runs": result.runs,
                "run_repetitions": result.repetitions,
                "spawn_ms_samples": result.spawn_samples,
                "errors": result.errors,
            }
            for result in results.values()
        ],
        "targets": [judgement.as_json() for judgement in judgements],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")


def _ratios(result: PairResult, floor: PairResult | None) -> dict[str, float]:
    """Each median of ``result`` over the same median of the floor (``bare -> bare``), when it ran."""
    ratios = {}
    for key in result.runs:
        value, base = result.median(key), floor.median(key) if floor is not None else None
        if value is not None and base:
            ratios[key] = value / base
    return ratios


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmarks; print the table; write the JSON. Exit status 1 if a run failed."""
    settings, output = parse_settings(argv)
    started = datetime.datetime.now(datetime.UTC)
    load = os.getloadavg()

    def progress(text: str) -> None:
        print(text, file=sys.stderr, flush=True)

    try:
        impls, missing = locate({name for pair in settings.pairs for name in pair}, progress)
    except BenchmarkError as error:
        print(f"benchmarks/run.py: error: {error}", file=sys.stderr)
        return 2
    for name, reason in missing.items():
        progress(f"leaving out the pairings with {name}: {reason}")
    begin = time.perf_counter()
    results = run_all(settings, impls, progress)
    if not results:
        print("benchmarks/run.py: error: no pairing could run (see the reasons above)", file=sys.stderr)
        return 2
    progress(f"done in {time.perf_counter() - begin:.0f} s")
    path = output or RESULTS / f"{started.strftime('%Y%m%d-%H%M%S')}.json"
    goals, judgements = targets_table(results)
    write_json(path, settings, impls, missing, results, started, load, judgements)
    print(table(results, settings))
    print()
    on = interpreter.summary(interpreter.describe_self())
    print(
        f"issue 34's targets (each a ratio of two figures of this run; acpio's and the floor's peers "
        f"on {on}):"
    )
    print(goals)
    print()
    print(footer(settings, impls, missing, load))
    print(f"all runs: {path}")
    failures = [f"{result.label}: {failure}" for result in results.values() for failure in result.errors]
    for failure in failures:
        print(f"failed: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
