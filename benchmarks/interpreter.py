"""Which Python runs the benchmarks, and whether it is an optimised build (PGO, LTO).

    python benchmarks/interpreter.py [PYTHON]         # PYTHON (default: this one); exit 0 if optimised
    python benchmarks/interpreter.py --json [PYTHON]  # the same as one JSON object

The same code runs about 30% faster on a CPython built with profile-guided optimisation and link-time
optimisation (``./configure --enable-optimizations --with-lto``, as python.org, uv and most
distributions ship it) than on a plain build (pyenv's default), so every benchmark figure says which
it ran on. A build says so in ``sysconfig`` (``CONFIG_ARGS``, ``PY_CFLAGS``); Debian leaves its LTO
and PGO flags out of ``sysconfig`` on purpose (Debian bug #934771), so the compiler options GCC
records in the build's ``python.o`` (in ``sysconfig``'s ``LIBPL``) are read as well.

Standard library only: ``benchmarks/run.py`` runs it with each interpreter it describes, and the
Makefile runs it before creating the optimised interpreter's virtualenv (``make bench``).
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()


def describe_self() -> dict[str, Any]:
    """This interpreter: its path, version, and how it was built (``pgo``, ``lto``, ``optimised``)."""
    config = str(sysconfig.get_config_var("CONFIG_ARGS") or "")
    flags = " ".join(
        str(sysconfig.get_config_var(name) or "") for name in ("PY_CFLAGS", "PY_CFLAGS_NODIST", "PY_LDFLAGS")
    )
    pgo = "--enable-optimizations" in config or "-fprofile-use" in flags
    lto = "--with-lto" in config or "-flto" in flags
    evidence = "sysconfig's CONFIG_ARGS and PY_CFLAGS"
    if not (pgo and lto):
        recorded = _recorded_options()
        if recorded is not None and (b"-fprofile-use" in recorded or b"-flto" in recorded):
            pgo = pgo or b"-fprofile-use" in recorded
            lto = lto or b"-flto" in recorded
            evidence = "the compiler options recorded in LIBPL/python.o (kept out of sysconfig)"
    build = "+".join(name for name, on in (("PGO", pgo), ("LTO", lto)) if on)
    return {
        "executable": sys.executable,
        "base": os.path.realpath(getattr(sys, "_base_executable", sys.executable)),
        "implementation": platform.python_implementation(),
        "version": platform.python_version(),
        "pgo": pgo,
        "lto": lto,
        "optimised": pgo,
        "build": build or "not optimised (no PGO, no LTO)",
        "evidence": evidence,
    }


def _recorded_options() -> bytes | None:
    """The bytes of the build's ``python.o``, where GCC records its command line; ``None`` if absent."""
    path = Path(str(sysconfig.get_config_var("LIBPL") or "")) / "python.o"
    try:
        return path.read_bytes()
    except OSError:
        return None


def describe(python: str) -> dict[str, Any]:
    """Another interpreter, described by itself (this file run with ``--json``)."""
    done = subprocess.run(
        [python, str(HERE), "--json"], capture_output=True, text=True, check=False, timeout=60
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"{python} could not describe itself: {done.stderr.strip()[-300:]}")
    description: dict[str, Any] = json.loads(done.stdout)
    return description


def summary(description: dict[str, Any]) -> str:
    """``CPython 3.11.2 at /usr/bin/python3.11, PGO+LTO``: one line for a report."""
    where = description["executable"]
    if description["base"] != where:
        where = f"{where} (-> {description['base']})"
    return f"{description['implementation']} {description['version']} at {where}, {description['build']}"


def main(argv: list[str]) -> int:
    """Describe an interpreter; exit status 0 if it is optimised (PGO), 1 if not, 2 if it cannot run."""
    as_json = "--json" in argv
    rest = [word for word in argv if word != "--json"]
    if len(rest) > 1:
        print("usage: interpreter.py [--json] [PYTHON]", file=sys.stderr)
        return 2
    if rest:
        try:
            description = describe(rest[0])
        except (OSError, RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
            print(f"interpreter.py: {rest[0]} cannot be run: {error}", file=sys.stderr)
            return 2
    else:
        description = describe_self()
    print(json.dumps(description) if as_json else summary(description))
    return 0 if description["optimised"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
