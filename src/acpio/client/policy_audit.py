"""The audit of a rule policy: one :class:`PolicyDecision` per permission request it answered."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from acpio.client.permissions import Outcome
from acpio.client.policy_rules import Action
from acpio.client.policy_subject import ToolCallSubject
from acpio.schema import SelectedPermissionOutcome

__all__ = ["DecidedBy", "PolicyDecision"]

#: What decided: a rule (or the default), a grant given earlier in the session, or whoever was asked.
DecidedBy: TypeAlias = Literal["rule", "default", "grant", "asked"]


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """One answered permission request: what was asked, which rule applied, what was chosen and why.

    ``action`` is what the rule (or the default) said; ``decided_by`` who settled the outcome;
    ``option_id``/``option_kind`` the option chosen (``None`` for ``cancelled``); ``reason`` a
    sentence for a person, including anything unusual (an inferred kind, an allow the agent
    offered no option for).
    """

    session_id: str
    subject: ToolCallSubject
    rule: str
    action: Action
    decided_by: DecidedBy
    outcome: Outcome
    option_kind: str | None
    reason: str
    at: float = field(default_factory=time.time)

    @property
    def option_id(self) -> str | None:
        """The id of the chosen option; ``None`` when the answer was ``cancelled``."""
        return self.outcome.option_id if isinstance(self.outcome, SelectedPermissionOutcome) else None

    def to_json(self) -> dict[str, Any]:
        """The decision as a JSON object (what the policy proxy writes on its stderr)."""
        subject = self.subject
        return {
            "session": self.session_id,
            "toolCallId": subject.tool_call_id,
            "kind": subject.kind,
            "kindInferred": subject.inferred,
            "title": subject.title,
            "paths": list(subject.paths),
            "argv": list(subject.argv) if subject.argv is not None else None,
            "cwd": subject.cwd,
            "env": [name for name, _ in subject.env],
            "mcpServer": subject.mcp_server,
            "rule": self.rule,
            "action": self.action,
            "decidedBy": self.decided_by,
            "optionId": self.option_id,
            "optionKind": self.option_kind,
            "reason": self.reason,
            "at": self.at,
        }
