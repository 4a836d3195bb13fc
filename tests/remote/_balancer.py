"""HAProxy in front of three ``acpio serve`` processes on one PostgreSQL store, for the balancer tests.

The configuration is the documented one, ``examples/deploy/haproxy.cfg``, copied into the test's
directory (with changes a test asks for) and given its addresses through the environment, as
``examples/deploy/run.py`` does. ``scripts/install_haproxy.sh`` (``make haproxy``) installs HAProxy;
without it the tests skip with :data:`MISSING`.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "deploy" / "haproxy.cfg"
ACPIO = [sys.executable, "-m", "acpio"]
NAMES = ("a", "b", "c")
MISSING = "HAProxy is not installed (make haproxy: scripts/install_haproxy.sh installs it as root)"


def haproxy_path() -> str | None:
    """The ``haproxy`` program, or ``None``."""
    found = shutil.which("haproxy")
    if found is None and os.access("/usr/sbin/haproxy", os.X_OK):
        found = "/usr/sbin/haproxy"
    return found


def load_postgres() -> Any:
    """tests/store/_postgres.py, the store tests' throwaway cluster (another test package)."""
    path = ROOT / "tests" / "store" / "_postgres.py"
    spec = importlib.util.spec_from_file_location("acpio_tests_store_postgres", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def free_port() -> int:
    """A loopback port free now (HAProxy binds the ports it is given; it cannot report a picked one)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Backend:
    """One ``acpio serve`` process: its name in HAProxy (its cookie's value) and its address."""

    name: str
    process: asyncio.subprocess.Process
    address: str

    @property
    def url(self) -> str:
        return f"http://{self.address}"

    def kill(self) -> None:
        """SIGKILL the server and its agent processes, as when its machine dies: nothing says goodbye."""
        for child in _children(self.process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child, signal.SIGKILL)  # each agent leads a process group of its own
        self.process.kill()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            found.extend(int(child) for child in (task / "children").read_text().split())
    return found


async def start_backend(
    name: str, store: str, directory: Path, *options: str, app: str | None = None
) -> Backend:
    """``acpio serve`` of ``acpio testy --store STORE`` on a free loopback port (its log in ``directory``).

    With ``app`` (``MODULE:NAME``, the module in ``directory``, its store read from
    ``$ACPIO_TEST_STORE``), that AgentApp is served in the process instead, with ``--route``
    naming the backend's affinity cookie (``acpio-server=NAME``) for attaches across servers.
    """
    served = (
        ["--app", app, "--route", f"acpio-server={name}"]
        if app
        else ["--", *ACPIO, "testy", "--store", store]
    )
    path = os.pathsep.join([str(directory), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, PYTHONPATH=path, ACPIO_TEST_STORE=store)
    with (directory / f"serve-{name}.log").open("wb") as log:
        process = await asyncio.create_subprocess_exec(
            *ACPIO, "serve", "--port", "0", "--check-store", store, *options, *served,
            stdout=asyncio.subprocess.PIPE,
            stderr=log,
            env=env,
        )  # fmt: skip
    assert process.stdout is not None
    line = await asyncio.wait_for(process.stdout.readline(), 60)
    assert line.startswith(b"listening on http://"), line
    return Backend(name, process, line.split()[2].decode().removeprefix("http://"))


@dataclass
class Balancer:
    """HAProxy's two frontends and the backends behind them."""

    port: int
    tcp_port: int
    backends: dict[str, Backend]

    @property
    def url(self) -> str:
        """Streamable HTTP through the balancer (``ws://`` the same port for WebSocket)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    @property
    def tcp_url(self) -> str:
        """WebSocket through the plain TCP frontend."""
        return f"ws://127.0.0.1:{self.tcp_port}"

    async def wait_until(self, states: dict[str, bool]) -> None:
        """Wait until HAProxy sends new clients to exactly the backends marked ``True`` (via the cookie)."""
        wanted = {name for name, up in states.items() if up}
        seen: set[str] = set()
        async with httpx.AsyncClient() as http:
            for _ in range(200):
                answer = await http.get(f"{self.url}/readyz")
                name = answer.cookies.get("acpio-server")
                if name is not None:
                    seen.add(name)
                    if seen == wanted:
                        return
                    if name not in wanted:
                        seen.clear()
                await asyncio.sleep(0.05)
        raise AssertionError(f"HAProxy did not reach {wanted}: saw {seen}")


@asynccontextmanager
async def balancer(
    directory: Path,
    store: str,
    *,
    edit: Callable[[str], str] = lambda config: config,
    server_options: tuple[str, ...] = (),
    app: str | None = None,
) -> AsyncIterator[Balancer]:
    """HAProxy (``examples/deploy/haproxy.cfg`` through ``edit``) in front of three ``acpio serve``.

    ``app``: the backends serve that AgentApp (see :func:`start_backend`).
    """
    haproxy = haproxy_path()
    assert haproxy is not None, MISSING
    backends: list[Backend] = []
    process: asyncio.subprocess.Process | None = None
    try:
        starting = (start_backend(name, store, directory, *server_options, app=app) for name in NAMES)
        backends = list(await asyncio.gather(*starting))
        config = directory / "haproxy.cfg"
        config.write_text(edit(CONFIG.read_text()))
        running = Balancer(free_port(), free_port(), {backend.name: backend for backend in backends})
        env = dict(os.environ, ACPIO_LB_PORT=str(running.port), ACPIO_LB_TCP_PORT=str(running.tcp_port))
        for backend in backends:
            env[f"ACPIO_SERVER_{backend.name.upper()}"] = backend.address
        log = (directory / "haproxy.log").open("wb")
        process = await asyncio.create_subprocess_exec(
            haproxy, "-db", "-f", str(config), env=env, stdout=log, stderr=log
        )
        await _wait_listening(running.port, process, directory / "haproxy.log")
        yield running
    finally:
        if process is not None and process.returncode is None:
            process.terminate()
            await process.wait()
        for backend in backends:
            if backend.process.returncode is None:
                backend.process.send_signal(signal.SIGINT)  # at once: no drain
        await asyncio.gather(*(backend.process.wait() for backend in backends))


async def _wait_listening(port: int, process: asyncio.subprocess.Process, log: Path) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(200):
            if process.returncode is not None:
                raise AssertionError(f"HAProxy exited with {process.returncode}: {_read(log)}")
            with contextlib.suppress(httpx.TransportError):
                if (await http.get(f"http://127.0.0.1:{port}/readyz")).status_code == 200:
                    return
            await asyncio.sleep(0.05)
    raise AssertionError("HAProxy did not answer within 10 s")


def _read(path: Path) -> str:
    return path.read_text()
