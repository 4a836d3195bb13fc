"""What a client needs to answer the agent's requests: permission policies and confined files.

* :mod:`~acpio.client.permissions`: :class:`AllowPolicy`, :class:`DenyPolicy`,
  :class:`CallbackPolicy` for ``session/request_permission``;
* :mod:`~acpio.client.policy`: :class:`RulePolicy`, a permission policy as data (rules,
  :class:`Rule`, a default, grants, an audit log of :class:`PolicyDecision`), loaded from TOML
  by :func:`load_policy`;
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

from typing import TYPE_CHECKING

from acpio._exports import lazy_exports
from acpio.client.files import MAX_FILE_SIZE, ConfinedFiles
from acpio.client.permissions import (
    AllowPolicy,
    CallbackPolicy,
    DenyPolicy,
    Outcome,
    PermissionCallback,
    PermissionChoice,
    PermissionPolicy,
    ToolCallPolicy,
    decide_permission,
    permission_policy,
)
from acpio.client.policy import Evaluation, RulePolicy
from acpio.client.policy_audit import PolicyDecision
from acpio.client.policy_rules import Action, Rule
from acpio.client.policy_subject import ToolCallSubject, subject_of

if TYPE_CHECKING:
    from acpio.client.policy_file import PolicyFileError, load_policy, parse_policy

__all__ = [
    "MAX_FILE_SIZE",
    "Action",
    "AllowPolicy",
    "CallbackPolicy",
    "ConfinedFiles",
    "DenyPolicy",
    "Evaluation",
    "Outcome",
    "PermissionCallback",
    "PermissionChoice",
    "PermissionPolicy",
    "PolicyDecision",
    "PolicyFileError",
    "Rule",
    "RulePolicy",
    "ToolCallPolicy",
    "ToolCallSubject",
    "decide_permission",
    "load_policy",
    "parse_policy",
    "permission_policy",
    "subject_of",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(globals())
