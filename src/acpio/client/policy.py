"""A permission policy as data: rules, a default, session-scoped grants and an audit log.

:class:`RulePolicy` answers ``session/request_permission`` by its rules (:class:`~acpio.client.Rule`):
the first rule that matches the tool call decides (``allow``, ``deny`` or ``ask``), else the
default. ``ask`` hands the request to the ``ask`` policy (a callback, ``--ask``'s terminal
question...); with none, the request is refused and the audit says so.

* **Grants.** When the person asked allows with an ``allow_always`` option, the same request
  later in the session is allowed without asking, bound to exactly what was granted: for a
  command, the same argv in the same working directory (a different argument or directory asks
  again); for any other call, the same kind, title and paths. ``allow_once`` is used up by the
  request it answers: the next one asks again. Grants replace asking only: they never override an
  ``allow`` or ``deny`` rule.
* **Offered options only.** The answer is always one of the options the agent offered, or
  ``cancelled``: a rule that allows when only reject options are offered gets the reject option
  (else ``cancelled``), and the audit says why.
* **Audit.** Every decision is a :class:`~acpio.client.PolicyDecision` in :attr:`RulePolicy.decisions`
  (the last 10,000) and is passed to ``on_decision`` (the policy proxy writes it on stderr, where
  the conductor's trace records it).
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final

from acpio.client.permissions import (
    ALLOW_KINDS,
    REJECT_KINDS,
    Outcome,
    PermissionChoice,
    PermissionPolicy,
    decide_permission,
    permission_policy,
    pick_option,
)
from acpio.client.policy_audit import DecidedBy, PolicyDecision
from acpio.client.policy_rules import ACTIONS, Action, Rule
from acpio.client.policy_subject import ToolCallSubject, subject_of
from acpio.schema import (
    CancelledPermissionOutcome,
    PermissionOptionKind,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
)

if TYPE_CHECKING:
    from acpio.session.turn_view import ToolCallView

__all__ = ["Evaluation", "RulePolicy"]

_KEPT_DECISIONS: Final = 10_000
_GrantKey = tuple[object, ...]


@dataclass(frozen=True, slots=True)
class Evaluation:
    """What the rules say about a request, before anyone is asked: the subject, action and rule."""

    subject: ToolCallSubject
    action: Action
    rule: str
    decided_by: DecidedBy


class RulePolicy:
    """Rules, a default and grants answering permission requests (see the module docstring).

    ``root`` is the session root paths are resolved in (the current directory when not given);
    :meth:`set_root` sets it per session (the policy proxy does, from each ``session/new``).
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        *,
        default: Action = "ask",
        root: str | os.PathLike[str] | None = None,
        ask: PermissionChoice | None = None,
        on_decision: Callable[[PolicyDecision], None] | None = None,
    ) -> None:
        if default not in ACTIONS:
            raise ValueError(f"RulePolicy default {default!r}: use one of {', '.join(ACTIONS)}")
        self.rules = tuple(rules)
        self.default: Action = default
        self.root = Path(root) if root is not None else Path.cwd()
        self.ask: PermissionPolicy | None = permission_policy(ask) if ask is not None else None
        self.on_decision = on_decision
        #: The latest decisions, oldest first.
        self.decisions: deque[PolicyDecision] = deque(maxlen=_KEPT_DECISIONS)
        self._roots: dict[str, Path] = {}
        self._grants: set[_GrantKey] = set()

    def __repr__(self) -> str:
        return f"<RulePolicy {len(self.rules)} rules, default {self.default}>"

    def set_root(self, session_id: str, root: str | os.PathLike[str]) -> None:
        """Resolve the paths of ``session_id``'s requests in ``root`` (its ``cwd``)."""
        self._roots[session_id] = Path(root)

    def root_of(self, session_id: str) -> Path:
        """The root the paths of ``session_id`` are resolved in."""
        return self._roots.get(session_id, self.root)

    def evaluate(self, request: RequestPermissionRequest, call: ToolCallView | None = None) -> Evaluation:
        """The first matching rule's action (else the default's); an ``ask`` a grant covers is ``allow``."""
        subject = subject_of(request, call)
        root = self.root_of(request.session_id)
        for index, rule in enumerate(self.rules):
            if rule.matches(subject, root):
                action, label, by = rule.action, rule.label(index), "rule"
                break
        else:
            action, label, by = self.default, "default", "default"
        if action == "ask" and self._grant_key(request.session_id, subject) in self._grants:
            return Evaluation(subject, "allow", label, "grant")
        return Evaluation(subject, action, label, by)  # type: ignore[arg-type]

    async def decide(self, request: RequestPermissionRequest) -> Outcome:
        """The outcome for ``request`` by its own tool call (see :meth:`decide_tool_call`)."""
        return await self.decide_tool_call(request, None)

    async def decide_tool_call(self, request: RequestPermissionRequest, call: ToolCallView | None) -> Outcome:
        """The outcome for ``request``, its tool call merged with ``call`` (the earlier updates' view)."""
        evaluation = self.evaluate(request, call)
        if evaluation.action != "ask":
            return self.settle(request, evaluation)
        if self.ask is None:
            outcome = _option(request, REJECT_KINDS)
            why = "the rule asks, but this policy has no one to ask (give it ask=...): refused"
            return self._record(request, evaluation, outcome, why)
        return self.answered(request, evaluation, await decide_permission(self.ask, request, call))

    def settle(self, request: RequestPermissionRequest, evaluation: Evaluation) -> Outcome:
        """The outcome of an ``allow`` or ``deny`` evaluation, recorded: an option the agent offered."""
        wanted = ALLOW_KINDS if evaluation.action == "allow" else REJECT_KINDS
        outcome = _option(request, wanted)
        verb = "allowed" if evaluation.action == "allow" else "denied"
        by = "a grant given earlier in this session" if evaluation.decided_by == "grant" else evaluation.rule
        why = f"{verb} by {by}"
        if evaluation.action == "allow" and not isinstance(outcome, SelectedPermissionOutcome):
            outcome = _option(request, REJECT_KINDS)
            why += ", but the agent offered no allow option: answered " + (
                "with its reject option" if isinstance(outcome, SelectedPermissionOutcome) else "cancelled"
            )
        elif evaluation.action == "deny" and not isinstance(outcome, SelectedPermissionOutcome):
            why += ", and the agent offered no reject option: answered cancelled"
        return self._record(request, evaluation, outcome, why)

    def answered(
        self, request: RequestPermissionRequest, evaluation: Evaluation, outcome: Outcome
    ) -> Outcome:
        """Record the answer of whoever was asked (a grant when it allows); an unoffered option is refused."""
        why = f"{evaluation.rule} asks: answered by the person asked"
        offered = {option.option_id: option for option in request.options}
        if isinstance(outcome, SelectedPermissionOutcome) and outcome.option_id not in offered:
            why += f", who chose {outcome.option_id!r}, which the agent did not offer: answered cancelled"
            outcome = CancelledPermissionOutcome()
        if isinstance(outcome, SelectedPermissionOutcome):
            kind = offered[outcome.option_id].kind
            if kind == PermissionOptionKind.ALLOW_ALWAYS:
                self._grants.add(self._grant_key(request.session_id, evaluation.subject))
        asked = Evaluation(evaluation.subject, evaluation.action, evaluation.rule, "asked")
        return self._record(request, asked, outcome, why)

    def _record(
        self, request: RequestPermissionRequest, evaluation: Evaluation, outcome: Outcome, reason: str
    ) -> Outcome:
        subject = evaluation.subject
        if subject.inferred:
            reason += f"; kind {subject.kind!r} inferred: {subject.inferred}"
        chosen = (
            next((o for o in request.options if o.option_id == outcome.option_id), None)
            if isinstance(outcome, SelectedPermissionOutcome)
            else None
        )
        decision = PolicyDecision(
            session_id=request.session_id,
            subject=subject,
            rule=evaluation.rule,
            action=evaluation.action,
            decided_by=evaluation.decided_by,
            outcome=outcome,
            option_kind=str(chosen.kind) if chosen is not None else None,
            reason=reason,
        )
        self.decisions.append(decision)
        if self.on_decision is not None:
            self.on_decision(decision)
        return outcome

    def _grant_key(self, session_id: str, subject: ToolCallSubject) -> _GrantKey:
        """What a grant is bound to: the command, its argv and cwd; else the kind, title and paths."""
        root = self.root_of(session_id)
        if subject.argv is not None:
            cwd = os.path.realpath(root / subject.cwd if subject.cwd else root)
            return ("command", session_id, subject.argv, cwd, subject.env)
        base = root / subject.cwd if subject.cwd else root  # the paths as the rules resolved them
        paths = tuple(os.path.realpath(base / path) for path in subject.paths)
        return ("call", session_id, subject.kind, subject.title, paths)


def _option(request: RequestPermissionRequest, kinds: Sequence[str]) -> Outcome:
    option = pick_option(request.options, kinds)
    return (
        CancelledPermissionOutcome()
        if option is None
        else SelectedPermissionOutcome(option_id=option.option_id)
    )
