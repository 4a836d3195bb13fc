"""acpio.run(): the event loop it picks, and its errors."""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import os
import subprocess
import sys
import warnings

import pytest

import acpio
from acpio.running import EVENT_LOOP_VARIABLE, EventLoopError

needs_uvloop = pytest.mark.skipif(
    importlib.util.find_spec("uvloop") is None, reason="uvloop is not installed (the acpio[fast] extra)"
)


async def loop_module() -> str:
    return type(asyncio.get_running_loop()).__module__


@needs_uvloop
def test_uvloop_is_used_when_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EVENT_LOOP_VARIABLE, raising=False)
    assert acpio.run(loop_module()).startswith("uvloop")


@needs_uvloop
def test_the_variable_can_ask_for_uvloop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EVENT_LOOP_VARIABLE, "uvloop")
    assert acpio.run(loop_module()).startswith("uvloop")


def test_the_variable_keeps_asyncio_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EVENT_LOOP_VARIABLE, "asyncio")
    assert acpio.run(loop_module()).startswith("asyncio")


def test_without_uvloop_asyncio_loop_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EVENT_LOOP_VARIABLE, raising=False)
    monkeypatch.setitem(sys.modules, "uvloop", None)  # as if it were not installed
    assert acpio.run(loop_module()).startswith("asyncio")


def test_asking_for_uvloop_without_it_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EVENT_LOOP_VARIABLE, "uvloop")
    monkeypatch.setitem(sys.modules, "uvloop", None)
    with pytest.raises(RuntimeError, match=r"uvloop is not installed.*acpio\[fast\]"):
        acpio.run(loop_module())


def test_an_unknown_loop_name_is_refused_without_a_stray_coroutine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(EVENT_LOOP_VARIABLE, "trio")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(EventLoopError, match=r"ACPIO_EVENT_LOOP='trio' is not an event loop acpio knows"):
            acpio.run(loop_module())
        gc.collect()
    assert not [w for w in caught if "never awaited" in str(w.message)]


def test_the_result_and_the_errors_of_main_come_back(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EVENT_LOOP_VARIABLE, raising=False)

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    async def failing() -> None:
        raise LookupError("from main")

    assert acpio.run(answer()) == 42
    with pytest.raises(LookupError, match="from main"):
        acpio.run(failing())


def with_unknown_loop(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        env={**os.environ, EVENT_LOOP_VARIABLE: "trio"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_an_acpio_command_starts_through_acpio_run_and_says_a_wrong_loop_in_one_line() -> None:
    done = with_unknown_loop([sys.executable, "-m", "acpio", "testy"])
    assert done.returncode == 2
    assert done.stderr.startswith("acpio: error: ACPIO_EVENT_LOOP='trio' is not an event loop acpio knows")
    assert done.stderr.count("\n") == 1


def test_agent_app_run_starts_through_acpio_run() -> None:
    done = with_unknown_loop([sys.executable, "-c", "from acpio import AgentApp; AgentApp(name='x').run()"])
    assert done.returncode == 1
    assert "EventLoopError: ACPIO_EVENT_LOOP='trio' is not an event loop acpio knows" in done.stderr
