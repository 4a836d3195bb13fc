#!/usr/bin/env python3
"""Type-check code as a user writes it: examples, the Python blocks of README.md and docs/, tests/typing.

Usage::

    python scripts/typecheck_user_code.py

A user's editor may run pyright (VS Code's engine) and their CI mypy, with or without the
pydantic plugin; acpio's models and API must satisfy all three. This script extracts every
```` ```python ```` block of ``README.md`` and ``docs/`` into ``.cache/typecheck/`` (each block is a
whole program, or a file of the tutorial's project: see ``scripts/doc_blocks.py`` for the marks),
then runs, on those files, on ``examples/`` and on ``tests/typing/`` (user code that is never run:
``assert_type`` checks of what the typed API gives back):

* basedpyright in ``strict`` mode (the pyright engine);
* ``mypy --strict`` without any plugin;
* ``mypy --strict`` with ``pydantic.mypy``.

It exits non-zero when any checker reports an error, naming the block by its file and line
(``docs_prompt_line_226.py`` is the block of ``docs/prompt.md`` whose fence is on line 226).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from doc_blocks import ROOT, python_blocks  # scripts/, beside this file

OUT = ROOT / ".cache" / "typecheck"


def doc_blocks() -> list[Path]:
    """Write each Python block to its own module, named after its page and line.

    The blocks marked ``<!-- doc: file NAME -->`` are written as ``NAME`` in a directory of their
    page, so that they import each other as in the reader's project.
    """
    if OUT.exists():
        for old in [*OUT.glob("*_line_*.py"), *OUT.glob("project_*/*.py")]:
            old.unlink()
    OUT.mkdir(parents=True, exist_ok=True)
    paths = []
    for block in python_blocks():
        if block.mark == "file":
            path = OUT / f"project_{block.path.stem}" / block.arg
            path.parent.mkdir(exist_ok=True)
        else:
            path = OUT / f"{block.module_name}.py"
        path.write_text(block.code)
        paths.append(path)
    if not any(p.name.startswith("readme_line_") for p in paths):
        raise SystemExit("typecheck_user_code: README.md has no ```python block")
    return paths


def run(title: str, command: list[str]) -> bool:
    print(f"--- {title}", flush=True)
    done = subprocess.run(command, cwd=ROOT, check=False)
    return done.returncode == 0


#: Packages that ship no complete types: pyright strict reports their own members as partly unknown,
#: whatever the user writes. Files importing them are checked strict but for those two rules.
UNTYPED_FRAMEWORKS = ("langgraph",)
LENIENT_RULES = {"reportMissingTypeStubs": False, "reportUnknownMemberType": False}


def uses_untyped_framework(path: Path) -> bool:
    text = path.read_text()
    return any(f"from {name}" in text or f"import {name}" in text for name in UNTYPED_FRAMEWORKS)


def main() -> int:
    paths = [
        *doc_blocks(),
        *sorted((ROOT / "examples").rglob("*.py")),
        *sorted((ROOT / "tests" / "typing").glob("*.py")),
    ]
    files = [str(p.relative_to(ROOT)) for p in paths]
    lenient = [f for f, p in zip(files, paths, strict=True) if uses_untyped_framework(p)]
    python = sys.executable
    strict = {"typeCheckingMode": "strict", "pythonVersion": "3.11"}
    pyright_config = OUT / "pyrightconfig.json"
    pyright_config.write_text(json.dumps(strict))
    lenient_config = OUT / "lenient" / "pyrightconfig.json"
    lenient_config.parent.mkdir(exist_ok=True)
    lenient_config.write_text(json.dumps({**strict, **LENIENT_RULES}))
    plain = OUT / "mypy-plain.ini"
    plain.write_text("[mypy]\nstrict = True\npython_version = 3.11\n")
    plugin = OUT / "mypy-pydantic.ini"
    plugin.write_text("[mypy]\nstrict = True\npython_version = 3.11\nplugins = pydantic.mypy\n")
    bin_dir = Path(python).parent
    results = [
        run(
            "pyright (basedpyright, strict)",
            [
                str(bin_dir / "basedpyright"),
                *("-p", str(pyright_config), "--pythonpath", python),
                *(f for f in files if f not in lenient),
            ],
        ),
        not lenient  # with no file named, pyright would check the whole directory
        or run(
            f"pyright (basedpyright, strict but for {', '.join(LENIENT_RULES)}) on {', '.join(lenient)}",
            [str(bin_dir / "basedpyright"), "-p", str(lenient_config), "--pythonpath", python, *lenient],
        ),
        run("mypy --strict, no plugin", [python, "-m", "mypy", "--config-file", str(plain), *files]),
        run("mypy --strict, pydantic plugin", [python, "-m", "mypy", "--config-file", str(plugin), *files]),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
