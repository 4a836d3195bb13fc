"""Files only their owner can read: the credential file and the session database.

The mode is given when a file or directory is created (``open`` and ``mkdir`` take it, the umask can
only narrow it), so there is no moment at which others could read it; a ``chmod`` afterwards would
leave one.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Final

__all__ = ["OTHERS", "open_private", "private_directory", "restrict_to_owner"]

#: The permission bits of the group and of others.
OTHERS: Final = 0o077


def private_directory(path: Path) -> None:
    """Create the directory ``path`` if missing, with mode 0700; missing parents get the usual mode.

    An existing directory is left as it is.
    """
    path.mkdir(parents=True, exist_ok=True, mode=0o700)


def open_private(path: Path, flags: int) -> int:
    """``os.open(path, flags)``, creating the file with mode 0600 when it is missing; the descriptor."""
    return os.open(path, flags | os.O_CREAT, 0o600)


def restrict_to_owner(path: Path) -> bool:
    """Take the group's and others' permissions off ``path``; whether it had any (``False`` if missing).

    :class:`OSError` when that is not allowed (a file of another user). Windows has no such bits:
    nothing is done there.
    """
    if os.name == "nt":
        return False
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return False
    if not mode & OTHERS:
        return False
    path.chmod(stat.S_IMODE(mode) & ~OTHERS)
    return True
