"""Structured diffs (ACP v2): a file change as ``changes`` plus a git patch.

v2 replaced v1's ``{path, oldText, newText}`` with ``{changes: [{operation, path}], patch}``: the
changes say which absolute paths changed and how (``add``, ``modify``...), and the optional patch
is renderable text that MUST agree with them. :func:`file_diff` writes both for one file whose old
text (``None``: the file is new) became the new text.
"""

from __future__ import annotations

import difflib

from acpio.schema.v2 import Diff, DiffChange, DiffPatch, DiffPatchFormat

__all__ = ["file_diff", "git_patch"]


def git_patch(path: str, old_text: str | None, new_text: str) -> str:
    """The ``git diff`` text of one file, with the absolute path in its headers (as v2 asks)."""
    old_lines = [] if old_text is None else old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    header = [f"diff --git a{path} b{path}\n"]
    if old_text is None:
        header.append("new file mode 100644\n")
    body = difflib.unified_diff(
        old_lines, new_lines, "/dev/null" if old_text is None else f"a{path}", f"b{path}"
    )
    lines = []
    for line in body:
        lines.append(line)
        if not line.endswith("\n"):
            lines.append("\n\\ No newline at end of file\n")
    return "".join(header + lines)


def file_diff(path: str, old_text: str | None, new_text: str) -> Diff:
    """The v2 diff of one file: an ``add`` (``old_text`` ``None``) or a ``modify``, and its git patch."""
    operation = "add" if old_text is None else "modify"
    change = DiffChange.model_validate({"operation": operation, "path": path, "fileType": "text"})
    patch = DiffPatch(format=DiffPatchFormat.GIT_PATCH, text=git_patch(path, old_text, new_text))
    return Diff(changes=[change], patch=patch)
