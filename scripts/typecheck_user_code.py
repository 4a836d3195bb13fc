#!/usr/bin/env python3
"""Type-check code as a user writes it: ``examples/`` and the README's Python blocks.

Usage::

    python scripts/typecheck_user_code.py

A user's editor may run pyright (VS Code's engine) and their CI mypy, with or without the
pydantic plugin; acpio's models and API must satisfy all three. This script extracts every
```` ```python ```` block of ``README.md`` into ``.cache/typecheck/`` (each block must be a whole
program), then runs, on those files and on ``examples/``:

* basedpyright in ``strict`` mode (the pyright engine);
* ``mypy --strict`` without any plugin;
* ``mypy --strict`` with ``pydantic.mypy``.

It exits non-zero when any checker reports an error, naming the README block by its line.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / ".cache" / "typecheck"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def readme_blocks() -> list[Path]:
    """Write each README Python block to its own module, named after the line it starts on."""
    text = (ROOT / "README.md").read_text()
    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("readme_line_*.py"):
        old.unlink()
    paths = []
    for match in BLOCK.finditer(text):
        line = text.count("\n", 0, match.start()) + 2
        path = OUT / f"readme_line_{line}.py"
        path.write_text(match.group(1))
        paths.append(path)
    if not paths:
        raise SystemExit("typecheck_user_code: README.md has no ```python block")
    return paths


def run(title: str, command: list[str]) -> bool:
    print(f"--- {title}", flush=True)
    done = subprocess.run(command, cwd=ROOT, check=False)
    return done.returncode == 0


def main() -> int:
    files = [str(p.relative_to(ROOT)) for p in readme_blocks()]
    files.append("examples")
    python = sys.executable
    pyright_config = OUT / "pyrightconfig.json"
    pyright_config.write_text(json.dumps({"typeCheckingMode": "strict", "pythonVersion": "3.11"}))
    plain = OUT / "mypy-plain.ini"
    plain.write_text("[mypy]\nstrict = True\npython_version = 3.11\n")
    plugin = OUT / "mypy-pydantic.ini"
    plugin.write_text("[mypy]\nstrict = True\npython_version = 3.11\nplugins = pydantic.mypy\n")
    bin_dir = Path(python).parent
    results = [
        run(
            "pyright (basedpyright, strict)",
            [str(bin_dir / "basedpyright"), "-p", str(pyright_config), "--pythonpath", python, *files],
        ),
        run("mypy --strict, no plugin", [python, "-m", "mypy", "--config-file", str(plain), *files]),
        run("mypy --strict, pydantic plugin", [python, "-m", "mypy", "--config-file", str(plugin), *files]),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
