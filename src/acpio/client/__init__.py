"""What a client needs to answer the agent's requests: permission policies and confined files.

* :mod:`~acpio.client.permissions`: :class:`AllowPolicy`, :class:`DenyPolicy`,
  :class:`CallbackPolicy` for ``session/request_permission``;
* :mod:`~acpio.client.files`: :class:`ConfinedFiles`, ``fs/read_text_file`` and
  ``fs/write_text_file`` confined to one directory.

:meth:`ActiveSession.read_to_string <acpio.session.ActiveSession.read_to_string>` answers with
them (``permissions="allow"``, ``files=root``), and so does ``acpio prompt``. They work in a
builder's handlers too::

    files = ConfinedFiles(project_dir)

    @app.on_request
    async def read(request: ReadTextFileRequest) -> ReadTextFileResponse:
        return files.read(request)
"""

from __future__ import annotations

from acpio.client.files import MAX_FILE_SIZE, ConfinedFiles
from acpio.client.permissions import (
    AllowPolicy,
    CallbackPolicy,
    DenyPolicy,
    Outcome,
    PermissionCallback,
    PermissionChoice,
    PermissionPolicy,
    permission_policy,
)

__all__ = [
    "MAX_FILE_SIZE",
    "AllowPolicy",
    "CallbackPolicy",
    "ConfinedFiles",
    "DenyPolicy",
    "Outcome",
    "PermissionCallback",
    "PermissionChoice",
    "PermissionPolicy",
    "permission_policy",
]
