"""What the ``*_instructions.py`` scripts share: the instruction total callgrind reports for a run."""

from __future__ import annotations

import re

#: The line valgrind's callgrind prints on stderr when the process ends: ``==pid== Collected : N``.
_COLLECTED = re.compile(r"Collected : (\d+)")


def collected(stderr: str | bytes) -> int:
    """The instructions callgrind counted, from the run's stderr; ``RuntimeError`` if it printed none."""
    text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
    found = _COLLECTED.search(text)
    if found is None:
        raise RuntimeError(f"callgrind printed no count:\n{text[-2000:]}")
    return int(found.group(1))
