"""``acpio prompt``'s confined file access: :class:`~acpio.client.files.ConfinedFiles`, shared.

The implementation lives in :mod:`acpio.client.files`; these names stay importable from here.
"""

from __future__ import annotations

from acpio.client.files import MAX_FILE_SIZE, ConfinedFiles, select_lines

__all__ = ["MAX_FILE_SIZE", "ConfinedFiles", "select_lines"]
