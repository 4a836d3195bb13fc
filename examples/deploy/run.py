"""Three ``acpio serve`` backends on one PostgreSQL session store, behind HAProxy (docs/deploy.md).

::

    python examples/deploy/run.py postgresql://user@host/dbname

Each backend serves the test agent (``acpio testy``) with its sessions in the database, on a free
loopback port, and checks the database for ``/readyz``; HAProxy (``haproxy.cfg`` beside this file)
balances them on http://127.0.0.1:8000 (``ws://`` too) and, WebSocket only over plain TCP, on
ws://127.0.0.1:8001 (``--port`` and ``--tcp-port`` change them). It prints what it started, then
runs until SIGTERM or Ctrl-C, and then stops HAProxy and drains the backends (their running turns
finish). SIGTERM one backend to drain it for a deploy: HAProxy sends its new clients elsewhere.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ACPIO = [sys.executable, "-m", "acpio"]
NAMES = ("a", "b", "c")


async def start_backend(store: str) -> tuple[asyncio.subprocess.Process, str]:
    """One ``acpio serve`` on a free loopback port; its process and ``host:port``."""
    process = await asyncio.create_subprocess_exec(
        *ACPIO, "serve", "--port", "0", "--check-store", store, "--drain-timeout", "30",
        "--", *ACPIO, "testy", "--store", store,
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    line = (await process.stdout.readline()).decode()
    if not line.startswith("listening on http://"):
        raise SystemExit(f"acpio serve did not start: {line or 'it exited'}")
    return process, line.split()[2].removeprefix("http://")


async def main(haproxy: str, store: str, port: int, tcp_port: int) -> None:
    backends = await asyncio.gather(*(start_backend(store) for _ in NAMES))
    env = dict(os.environ, ACPIO_LB_PORT=str(port), ACPIO_LB_TCP_PORT=str(tcp_port))
    for name, (_, address) in zip(NAMES, backends, strict=True):
        env[f"ACPIO_SERVER_{name.upper()}"] = address
    balancer = await asyncio.create_subprocess_exec(haproxy, "-db", "-f", str(HERE / "haproxy.cfg"), env=env)
    for name, (process, address) in zip(NAMES, backends, strict=True):
        print(f"backend {name}: http://{address} (pid {process.pid})")
    print(
        f"balancing on http://127.0.0.1:{port} (ws:// too), WebSocket over TCP on ws://127.0.0.1:{tcp_port}"
    )
    sys.stdout.flush()

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    exited = asyncio.ensure_future(balancer.wait())
    await asyncio.wait((exited, asyncio.ensure_future(stop.wait())), return_when=asyncio.FIRST_COMPLETED)
    if balancer.returncode is None:
        balancer.terminate()
    await balancer.wait()
    for process, _ in backends:
        if process.returncode is None:
            process.terminate()  # drains: running turns finish
    await asyncio.gather(*(process.wait() for process, _ in backends))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("store", help="the PostgreSQL database the backends share: postgresql://user@host/db")
    parser.add_argument("--port", type=int, default=8000, help="the balancer's port (default: 8000)")
    parser.add_argument("--tcp-port", type=int, default=8001, help="WebSocket over TCP (default: 8001)")
    options = parser.parse_args()
    haproxy = shutil.which("haproxy") or "/usr/sbin/haproxy"
    if not os.path.exists(haproxy):
        raise SystemExit("haproxy is not installed: apt-get install haproxy (scripts/install_haproxy.sh)")
    asyncio.run(main(haproxy, options.store, options.port, options.tcp_port))
