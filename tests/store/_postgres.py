"""A throwaway PostgreSQL cluster for the store tests: a temporary directory, a local socket, no TCP.

Started as the ``postgres`` user when the tests run as root (initdb refuses root), as the current
user otherwise; stopped and removed afterwards. ``scripts/install_postgres.sh`` (``make postgres``)
installs the server; without it the tests skip with the reason.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

MISSING = (
    "PostgreSQL's server is not installed (make postgres: scripts/install_postgres.sh installs it as root)"
)


def _bin(name: str) -> str | None:
    found = shutil.which(name)
    if found is not None:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


class Cluster:
    """A running cluster: :meth:`new_database` gives a fresh database's URL."""

    def __init__(self, socket_dir: Path, port: int) -> None:
        self.socket_dir = socket_dir
        self.port = port

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://postgres@/{dbname}?host={self.socket_dir}&port={self.port}"

    def new_database(self) -> str:
        import psycopg

        name = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url(), autocommit=True) as db:
            db.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
        return self.url(name)


@contextmanager
def cluster() -> Iterator[Cluster | str]:
    """A running :class:`Cluster`, or the reason there is none."""
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        yield MISSING
        return
    try:
        import psycopg  # noqa: F401
    except ImportError:
        yield "psycopg is not installed (pip install -e '.[dev]' installs the postgres extra)"
        return
    prefix: list[str] = []
    owner: pwd.struct_passwd | None = None
    if os.geteuid() == 0:
        try:
            owner = pwd.getpwnam("postgres")
        except KeyError:
            yield "running as root and there is no postgres user to run the cluster as (initdb refuses root)"
            return
        prefix = ["runuser", "-u", "postgres", "--"]
    root = Path(tempfile.mkdtemp(prefix="acpio-pg-"))
    data, sockets = root / "data", root / "sockets"
    sockets.mkdir()
    if owner is not None:
        for path in (root, sockets):
            os.chown(path, owner.pw_uid, owner.pw_gid)
    port = 20000 + os.getpid() % 20000
    run = dict(check=True, capture_output=True, text=True, timeout=120)
    try:
        subprocess.run(
            [*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"], **run
        )  # type: ignore[call-overload]
        options = f"-k {sockets} -c listen_addresses='' -p {port} -c fsync=off"
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-o", options, "-l", str(root / "log"), "-w", "start"], **run
        )  # type: ignore[call-overload]
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", "") or ""
        shutil.rmtree(root, ignore_errors=True)
        yield f"the throwaway PostgreSQL cluster did not start: {exc} {detail.strip()[-500:]}"
        return
    try:
        yield Cluster(sockets, port)
    finally:
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
            capture_output=True,
            timeout=60,
        )
        shutil.rmtree(root, ignore_errors=True)
