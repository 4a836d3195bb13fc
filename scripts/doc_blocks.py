"""The code blocks of README.md and docs/: which are checked, which run, and how they are marked.

The convention, for whoever writes documentation:

* A ```` ```python ```` block is a whole program. ``scripts/typecheck_user_code.py`` type-checks it
  (pyright strict, mypy strict with and without the pydantic plugin) and
  ``tests/docs/test_doc_blocks.py`` runs it, in an empty directory that holds ``examples/`` (a link
  to the repository's) and ``run.jsons`` (a small trace), with ``acpio`` on ``PATH``.
* An HTML comment on the line before a block changes that (it is invisible on GitHub and in the
  built site):

  - ``<!-- doc: no-run REASON -->``: type-checked, not run (it serves forever, needs a real agent...).
  - ``<!-- doc: skip REASON -->``: neither (code that is not acpio's, shown for comparison).
  - ``<!-- doc: file NAME -->`` (the tutorial): the block is the file ``NAME`` of the tutorial's
    project; it is type-checked beside the tutorial's other files and the tutorial's test runs it.
  - ``<!-- doc: run -->`` before a ```` ```sh ```` block (the tutorial): its commands are run for
    real, one per line, by ``tests/docs/test_tutorial.py``; ``<!-- doc: run-long REASON -->`` marks
    one that serves until stopped (the test starts it, checks it, stops it), and
    ``<!-- doc: output -->`` a ```` ```text ```` block that must equal the stdout of the ``run``
    block before it.

Keep ``no-run`` and ``skip`` rare: a reader copies blocks, and a block that is not run rots.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: The files whose blocks are checked: the README and every page under docs/.
DOC_FILES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

_FENCE = re.compile(
    r"(?:^<!-- doc: (?P<mark>[a-z-]+)(?: (?P<arg>[^\n]*?))? -->\n)?"  # an optional mark, then
    r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^```$",  # the fenced block
    re.S | re.M,
)
MARKS = {"no-run", "skip", "file", "run", "run-long", "output"}


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its mark (``""`` if none) and its code."""

    path: Path
    line: int  # the line of the opening fence, 1-based
    lang: str
    mark: str
    arg: str
    code: str

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def module_name(self) -> str:
        """A module name unique to the block: ``docs_prompt_line_226``, ``readme_line_120``."""
        stem = self.path.relative_to(ROOT).with_suffix("").as_posix().replace("/", "_").replace("-", "_")
        return f"{stem.lower()}_line_{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``; raises ``ValueError`` on an unknown mark."""
    text = path.read_text()
    found = []
    for match in _FENCE.finditer(text):
        mark = match.group("mark") or ""
        if mark and mark not in MARKS:
            line = text.count("\n", 0, match.start()) + 1
            raise ValueError(f"{path}:{line}: unknown doc mark {mark!r} (known: {sorted(MARKS)})")
        if mark in ("no-run", "skip", "run-long") and not match.group("arg"):
            line = text.count("\n", 0, match.start()) + 1
            raise ValueError(f"{path}:{line}: '<!-- doc: {mark} -->' needs a reason")
        fence_line = text.count("\n", 0, match.start("lang")) + 1
        found.append(
            Block(path, fence_line, match.group("lang"), mark, match.group("arg") or "", match.group("code"))
        )
    return found


def python_blocks() -> list[Block]:
    """The Python blocks of README.md and docs/ that are type-checked (all but ``skip``)."""
    return [b for p in DOC_FILES for b in blocks(p) if b.lang == "python" and b.mark != "skip"]
