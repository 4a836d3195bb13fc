"""Driving an agent, and what a client needs to answer its requests: policies and confined files.

* :class:`AgentClient` connects to an agent (a command, a URL, an in-process app), opens
  sessions (:class:`AgentSession`) and gives each prompt's :class:`TurnResult` (text, tool calls,
  files written, commands run, permissions asked, plan, :class:`Usage`, stop reason), or its
  events as they come (:class:`TurnStream`). It lives in :mod:`acpio.driver` and is exported here
  lazily (see ``docs/drive.md``);
* :mod:`~acpio.client.permissions`: :class:`AllowPolicy`, :class:`DenyPolicy`,
  :class:`CallbackPolicy` for ``session/request_permission``;
* :mod:`~acpio.client.policy`: :class:`RulePolicy`, a permission policy as data (rules,
  :class:`Rule`, a default, grants, an audit log of :class:`PolicyDecision`), loaded from TOML
  by :func:`load_policy`;
* :mod:`~acpio.client.forms`: :class:`FormPolicy` for the agent's forms (``elicitation/create``),
  made by :func:`form_policy` from field values, ``"decline"``/``"cancel"`` or a callback;
* :mod:`~acpio.client.files`: :class:`ConfinedFiles`, ``fs/read_text_file`` and
  ``fs/write_text_file`` confined to one directory.

:meth:`ActiveSession.read_to_string <acpio.session.ActiveSession.read_to_string>` answers with
them (``permissions="allow"``, ``files=root``), and so does ``acpio prompt``. They work in a
builder's handlers too::

    files = ConfinedFiles(project_dir)

    @app.on_request
    async def read(request: ReadTextFileRequest) -> ReadTextFileResponse:
        return files.read(request)

The supervised pool of :mod:`acpio.pool` is exported here too, loaded on first use:
:class:`AgentPool` (warm agent processes and a watchdog for every turn), :class:`PooledSession`,
:class:`SupervisedTurn` and the :data:`PoolEvent` records.
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
    from acpio.client.forms import (
        FormAnswer,
        FormAnswerError,
        FormCallback,
        FormChoice,
        FormField,
        FormPolicy,
        FormValue,
        form_policy,
    )
    from acpio.client.policy_file import PolicyFileError, load_policy, parse_policy
    from acpio.driver.client import AgentClient, AgentFailed, AgentSession, AgentTarget
    from acpio.driver.result import (
        FileWrite,
        FileWritten,
        FormAnswered,
        FormAsk,
        OfferedOption,
        PermissionAsk,
        PermissionDecided,
        StreamEvent,
        TerminalRun,
        TurnResult,
        UsageChanged,
    )
    from acpio.driver.turn import TurnStream
    from acpio.driver.usage import Usage
    from acpio.pool import (
        AgentPool,
        CancelHonoured,
        CancelSent,
        PooledSession,
        PoolEvent,
        ProcessDied,
        ProcessKilled,
        ProcessStarted,
        SessionLost,
        SessionLostError,
        SessionResumed,
        SupervisedTurn,
        TurnAbandoned,
        TurnTimedOut,
    )
    from acpio.session.turn_view import (
        PlanChanged,
        StateChanged,
        TerminalChanged,
        TextAdded,
        ToolCallChanged,
        ToolCallView,
    )

__all__ = [
    "MAX_FILE_SIZE",
    "Action",
    "AgentClient",
    "AgentFailed",
    "AgentPool",
    "AgentSession",
    "AgentTarget",
    "AllowPolicy",
    "CallbackPolicy",
    "CancelHonoured",
    "CancelSent",
    "ConfinedFiles",
    "DenyPolicy",
    "Evaluation",
    "FileWrite",
    "FileWritten",
    "FormAnswer",
    "FormAnswerError",
    "FormAnswered",
    "FormAsk",
    "FormCallback",
    "FormChoice",
    "FormField",
    "FormPolicy",
    "FormValue",
    "OfferedOption",
    "Outcome",
    "PermissionAsk",
    "PermissionCallback",
    "PermissionChoice",
    "PermissionDecided",
    "PermissionPolicy",
    "PlanChanged",
    "PolicyDecision",
    "PolicyFileError",
    "PoolEvent",
    "PooledSession",
    "ProcessDied",
    "ProcessKilled",
    "ProcessStarted",
    "Rule",
    "RulePolicy",
    "SessionLost",
    "SessionLostError",
    "SessionResumed",
    "StateChanged",
    "StreamEvent",
    "SupervisedTurn",
    "TerminalChanged",
    "TerminalRun",
    "TextAdded",
    "ToolCallChanged",
    "ToolCallPolicy",
    "ToolCallSubject",
    "ToolCallView",
    "TurnAbandoned",
    "TurnResult",
    "TurnStream",
    "TurnTimedOut",
    "Usage",
    "UsageChanged",
    "decide_permission",
    "form_policy",
    "load_policy",
    "parse_policy",
    "permission_policy",
    "subject_of",
]

if not TYPE_CHECKING:  # type checkers see the imports above, and no __getattr__ that would hide a typo
    __getattr__, __dir__ = lazy_exports(globals())
