"""Answering ``session/request_permission``: a policy turns the agent's request into an outcome.

The outcome is one of the options the agent offered, or ``cancelled``:

* :class:`AllowPolicy` picks the ``allow_once`` option (else ``allow_always``; a request that offers
  no allow option gets its reject option);
* :class:`DenyPolicy` picks ``reject_once`` (else ``reject_always``, else ``cancelled``);
* :class:`CallbackPolicy` asks an async callback, given the typed request, which returns the id of
  the option it chose or an outcome.

:func:`permission_policy` makes one from what
:meth:`ActiveSession.read_to_string(permissions=...) <acpio.session.ActiveSession.read_to_string>`
takes: ``"allow"``, ``"deny"``, a callback or a policy. ``acpio prompt`` uses the same policies
(its ``--ask`` is a policy of its own, reading the answer from the terminal).

Cancelling the turn is not a policy's business: once the client sends ``session/cancel``, its
connection answers the pending permission requests ``cancelled`` itself (the spec's rule).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Final, Literal, Protocol, TypeAlias

from acpio.schema import (
    CancelledPermissionOutcome,
    PermissionOption,
    PermissionOptionKind,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
)

if TYPE_CHECKING:
    from acpio.session.turn_view import ToolCallView

__all__ = [
    "ALLOW_KINDS",
    "REJECT_KINDS",
    "AllowPolicy",
    "CallbackPolicy",
    "DenyPolicy",
    "Outcome",
    "PermissionCallback",
    "PermissionChoice",
    "PermissionPolicy",
    "allows",
    "decide_permission",
    "describe_request",
    "permission_policy",
    "pick_option",
]

#: What a policy answers: one of the offered options, or ``cancelled``.
Outcome: TypeAlias = SelectedPermissionOutcome | CancelledPermissionOutcome

#: The kinds of the options that allow, the preferred first.
ALLOW_KINDS: Final = (PermissionOptionKind.ALLOW_ONCE, PermissionOptionKind.ALLOW_ALWAYS)
#: The kinds of the options that reject, the preferred first.
REJECT_KINDS: Final = (PermissionOptionKind.REJECT_ONCE, PermissionOptionKind.REJECT_ALWAYS)


class PermissionPolicy(Protocol):
    """Decides a permission request: ``await policy.decide(request)`` gives the outcome to send."""

    async def decide(self, request: RequestPermissionRequest) -> Outcome:
        """The outcome for ``request``."""
        ...


#: An async callback deciding a permission request: the chosen option's id, or an outcome.
PermissionCallback: TypeAlias = Callable[[RequestPermissionRequest], Awaitable["str | Outcome"]]

#: What ``read_to_string(permissions=...)`` takes: ``"allow"``, ``"deny"``, a callback or a policy.
PermissionChoice: TypeAlias = Literal["allow", "deny"] | PermissionCallback | PermissionPolicy


def pick_option(options: Sequence[PermissionOption], kinds: Sequence[str]) -> PermissionOption | None:
    """The first option whose kind is ``kinds[0]``, else ``kinds[1]``...; ``None`` if none matches."""
    for kind in kinds:
        for option in options:
            if option.kind == kind:
                return option
    return None


def _selected(option: PermissionOption | None) -> Outcome:
    if option is None:
        return CancelledPermissionOutcome()
    return SelectedPermissionOutcome(option_id=option.option_id)


def describe_request(request: RequestPermissionRequest) -> str:
    """A short description of what the agent asks to do: the tool call's title (or its id)."""
    tool_call = request.tool_call
    return tool_call.title or f"tool call {tool_call.tool_call_id}"


def allows(request: RequestPermissionRequest, outcome: Outcome) -> PermissionOption | None:
    """The allow option ``outcome`` selected among ``request``'s options; ``None`` for anything else."""
    if not isinstance(outcome, SelectedPermissionOutcome):
        return None
    option = next((o for o in request.options if o.option_id == outcome.option_id), None)
    return option if option is not None and option.kind in ALLOW_KINDS else None


class AllowPolicy:
    """Approve every request once (``allow_once``, else ``allow_always``)."""

    async def decide(self, request: RequestPermissionRequest) -> Outcome:
        """The allow option; the reject option when none is offered; else ``cancelled``."""
        options = request.options
        return _selected(pick_option(options, ALLOW_KINDS) or pick_option(options, REJECT_KINDS))


class DenyPolicy:
    """Refuse every request (``reject_once``, else ``reject_always``)."""

    async def decide(self, request: RequestPermissionRequest) -> Outcome:
        """The reject option; ``cancelled`` when the agent offered none."""
        return _selected(pick_option(request.options, REJECT_KINDS))


class CallbackPolicy:
    """Ask ``callback``: given the typed request, it returns the chosen option's id, or an outcome."""

    def __init__(self, callback: PermissionCallback) -> None:
        self.callback = callback

    def __repr__(self) -> str:
        return f"CallbackPolicy({self.callback!r})"

    async def decide(self, request: RequestPermissionRequest) -> Outcome:
        """The callback's answer as an outcome.

        Raises ``ValueError`` when it names an option the agent did not offer, or returns
        something that is neither an option id nor an outcome.
        """
        answer = await self.callback(request)
        if isinstance(answer, SelectedPermissionOutcome | CancelledPermissionOutcome):
            chosen = answer.option_id if isinstance(answer, SelectedPermissionOutcome) else None
        elif isinstance(answer, str):
            chosen = answer
            answer = SelectedPermissionOutcome(option_id=answer)
        else:
            raise ValueError(
                f"The permission callback {self.callback!r} returned {answer!r}: return the id of one "
                "of request.options, or a SelectedPermissionOutcome / CancelledPermissionOutcome"
            )
        offered = [option.option_id for option in request.options]
        if chosen is not None and chosen not in offered:
            raise ValueError(
                f"The permission callback {self.callback!r} chose option {chosen!r}, which the agent did "
                f"not offer; the options are {offered}"
            )
        return answer


def permission_policy(choice: PermissionChoice) -> PermissionPolicy:
    """The policy ``choice`` names: ``"allow"``, ``"deny"``, an async callback, or a policy as it is."""
    if choice == "allow":
        return AllowPolicy()
    if choice == "deny":
        return DenyPolicy()
    if isinstance(choice, str):
        raise ValueError(f"permissions={choice!r}: use 'allow', 'deny', an async callback or a policy")
    decide = getattr(choice, "decide", None)
    if callable(decide):
        return choice  # type: ignore[return-value]
    if callable(choice):
        return CallbackPolicy(choice)
    raise TypeError(
        f"permissions={choice!r}: use 'allow', 'deny', an async callback taking the "
        "RequestPermissionRequest, or an object with async decide(request)"
    )


async def decide_permission(
    policy: PermissionPolicy, request: RequestPermissionRequest, call: ToolCallView | None = None
) -> Outcome:
    """Ask ``policy`` about ``request``: the one place a client asks its policy.

    ``call`` is the tool call the request is about, every update the agent sent for it merged
    with the request's own ``toolCall`` (:class:`~acpio.session.ToolCallView`: kind, title,
    locations, diffs, status, raw input), for policies that judge more than the request carries.
    :class:`~acpio.client.AgentClient` calls it for every ``session/request_permission`` and for
    every command the agent wants to run in a terminal.
    """
    return await policy.decide(request)
