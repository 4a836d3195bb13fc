"""Every Python block of README.md and docs/ runs (scripts/doc_blocks.py has the convention).

Each block runs as its own program in an empty directory holding ``examples/`` (a link to the
repository's) and ``run.jsons`` (a small trace), with this venv's ``acpio`` first on ``PATH``.
scripts/typecheck_user_code.py type-checks the same blocks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ._blocks import DOC_FILES, ROOT, Block, blocks, python_blocks

RUNNABLE = [b for b in python_blocks() if b.mark == ""]
TIMEOUT = 60


def run_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ACPIO_AGENT", "NO_COLOR")}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.where for b in RUNNABLE])
def test_the_block_runs(block: Block, tmp_path: Path) -> None:
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    shutil.copy(ROOT / "tests" / "trace" / "data" / "proxy_chain.jsons", tmp_path / "run.jsons")
    program = tmp_path / f"{block.module_name}.py"
    program.write_text(block.code)
    done = subprocess.run(
        [sys.executable, str(program)],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=run_env(),
        check=False,
    )
    assert done.returncode == 0, f"{block.where} failed:\n{done.stdout}\n{done.stderr}"


def test_some_blocks_run_and_few_are_exempt() -> None:
    every = [b for p in DOC_FILES for b in blocks(p) if b.lang == "python"]
    exempt = [b for b in every if b.mark in ("skip", "no-run")]
    assert len(RUNNABLE) >= 8
    assert len(exempt) <= 3, [b.where for b in exempt]


def test_what_the_blocks_print() -> None:
    """A block whose output the page states: checked, so that the page stays true."""
    testy = next(b for b in RUNNABLE if b.path.name == "testy.md")
    done = subprocess.run(
        [sys.executable, "-c", testy.code], capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    assert done.stdout == "['testy-login']\n"


def test_docs_do_not_point_into_the_development_machine() -> None:
    """A reader's clone has no ../shared (the spec beside the repository) and no /work/."""
    found = [
        f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
        for path in DOC_FILES
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if "../shared" in line or "/work/" in line
    ]
    assert found == []


def test_the_readme_proxy_shouts_behind_a_conductor(tmp_path: Path) -> None:
    proxy = next(b for b in RUNNABLE if 'Proxy.builder(name="shout")' in b.code)
    (tmp_path / "shout_proxy.py").write_text(proxy.code)
    conductor = "acpio conductor agent 'python shout_proxy.py' 'acpio testy'"
    done = subprocess.run(
        ["acpio", "prompt", "--agent", conductor, "echo hello there"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=run_env(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "HELLO THERE\n" in done.stdout


def test_the_readme_agent_is_the_wordcount_example() -> None:
    """The README shows examples/wordcount_agent.py, which tests drive: the same code, comments aside."""
    shown = next(b for b in RUNNABLE if b.path.name == "README.md" and 'AgentApp("wordcount"' in b.code)
    example = (ROOT / "examples" / "wordcount_agent.py").read_text().split('"""', 2)[2]

    def code(source: str) -> list[str]:
        return [line.split("  # ")[0].rstrip() for line in source.strip().splitlines()]

    assert code(shown.code) == code(example)
