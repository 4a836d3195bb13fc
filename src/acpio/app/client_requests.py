"""What a :class:`~acpio.app.Turn` asks of the client: permission, a form, a URL, a terminal, MCP."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from acpio import schema as acp
from acpio.app.first_answer import Askers
from acpio.app.forms import Elicited, form_schema, form_value
from acpio.app.tool_calls import ActiveToolCall
from acpio.app.update_templates import given
from acpio.capabilities import CapabilityNotAdvertised, ClientFeatures
from acpio.jsonrpc import Connection

if TYPE_CHECKING:
    from mcp import Client as McpClient

    from acpio.schema import (
        CreateElicitationResponse,
        CreateTerminalRequest,
        CreateTerminalResponse,
        TerminalOutputResponse,
        WaitForTerminalExitResponse,
    )

__all__ = ["CommandResult"]

T = TypeVar("T")

_ALLOW = "allow"
_DENY = "deny"


@dataclass(frozen=True)
class CommandResult:
    """How a command run with :meth:`~acpio.app.Turn.run_command` ended, and what it printed."""

    #: Its output (stdout and stderr, as the client captured them).
    output: str
    #: Whether the client cut the output to its byte limit (the start was dropped).
    truncated: bool
    #: The exit code (``None`` when a signal ended it).
    exit_code: int | None
    #: The signal that ended it, if any.
    signal: str | None
    #: Whether it was killed (``terminal/kill``) for running past ``kill_after``.
    timed_out: bool = False


async def ask_permission(
    askers: Askers, session_id: str, call: ActiveToolCall, allow: str, deny: str, always: bool
) -> bool:
    """``session/request_permission`` for ``call``, an allow and a deny option: whether allow was chosen.

    Asked of the session's client and its controllers: the first answer decides.
    """
    options = [
        acp.PermissionOption(option_id=_ALLOW, name=allow, kind="allow_always" if always else "allow_once"),
        acp.PermissionOption(option_id=_DENY, name=deny, kind="reject_always" if always else "reject_once"),
    ]
    request = acp.RequestPermissionRequest(
        session_id=session_id,
        tool_call=acp.ToolCallUpdate(tool_call_id=call.id, title=call.title),
        options=options,
    )
    answer = await askers.ask(request)
    outcome = answer.outcome
    return isinstance(outcome, acp.SelectedPermissionOutcome) and outcome.option_id == _ALLOW


async def ask_permission_v2(
    cx: Connection,
    session_id: str,
    call: ActiveToolCall,
    allow: str,
    deny: str,
    always: bool,
    description: str | None,
) -> bool:
    """v2's ``session/request_permission`` (``title``, ``description``, the call as ``subject``).

    Whether the allow option was selected: any other outcome (cancelled, unknown) is a refusal, as v2 asks.
    """
    from acpio.schema import v2  # only a v2 connection gets here

    options = [
        v2.PermissionOption(option_id=_ALLOW, name=allow, kind="allow_always" if always else "allow_once"),
        v2.PermissionOption(option_id=_DENY, name=deny, kind="reject_always" if always else "reject_once"),
    ]
    subject = v2.ToolCallPermissionSubject(
        tool_call=v2.ToolCallUpdate(tool_call_id=call.id, title=call.title)
    )
    request = v2.RequestPermissionRequest(
        session_id=session_id,
        title=call.title,
        subject=subject,
        options=options,
        **given(description=description),
    )
    answer = await cx.send_request(request)
    outcome = answer.outcome
    return isinstance(outcome, v2.SelectedPermissionOutcome) and outcome.option_id == _ALLOW


async def elicit_form(
    askers: Askers,
    client: ClientFeatures,
    session_id: str,
    message: str,
    form: type[T],
    call: ActiveToolCall | None,
) -> Elicited[T]:
    """``elicitation/create`` in form mode, ``form`` (a dataclass) as its schema; the answer, filled in."""
    if not client.elicitation_form:
        raise CapabilityNotAdvertised(
            acp.CreateElicitationRequest.METHOD, "C.elicitation.form", what="a form"
        )
    request = acp.CreateElicitationRequest(
        session_id=session_id,
        mode="form",
        message=message,
        requested_schema=form_schema(form),
        **given(tool_call_id=call.id if call is not None else None),
    )
    answer: CreateElicitationResponse = await askers.ask(request, lambda features: features.elicitation_form)
    action = str(answer.action)
    value = form_value(form, answer.content) if action == "accept" else None
    return Elicited(action, value)


async def elicit_url(
    askers: Askers,
    client: ClientFeatures,
    session_id: str,
    message: str,
    url: str,
    elicitation_id: str | None,
    call: ActiveToolCall | None,
) -> Elicited[None]:
    """``elicitation/create`` in URL mode (an id made up when none is given); the answer."""
    if not client.elicitation_url:
        raise CapabilityNotAdvertised(acp.CreateElicitationRequest.METHOD, "C.elicitation.url", what="a URL")
    elicitation_id = elicitation_id or f"elicit_{uuid.uuid4().hex[:16]}"
    request = acp.CreateElicitationRequest(
        session_id=session_id,
        mode="url",
        message=message,
        url=url,
        elicitation_id=elicitation_id,
        **given(tool_call_id=call.id if call is not None else None),
    )
    answer: CreateElicitationResponse = await askers.ask(request, lambda features: features.elicitation_url)
    return Elicited(str(answer.action), None, elicitation_id)


async def run_in_terminal(
    cx: Connection, create: CreateTerminalRequest, call: ActiveToolCall | None, kill_after: float | None
) -> CommandResult:
    """Create a terminal, show it in ``call``, wait for its exit (killed past ``kill_after``), release it.

    The release is sent without waiting, so a cancelled turn still frees the client's terminal.
    """
    session_id = create.session_id
    created: CreateTerminalResponse = await cx.send_request(create)
    terminal = created.terminal_id
    try:
        if call is not None:
            await call.show_terminal(terminal)
        wait = acp.WaitForTerminalExitRequest(session_id=session_id, terminal_id=terminal)
        timed_out = False
        try:
            async with asyncio.timeout(kill_after):
                ended: WaitForTerminalExitResponse = await cx.send_request(wait)
        except TimeoutError:
            timed_out = True
            await cx.send_request(acp.KillTerminalRequest(session_id=session_id, terminal_id=terminal))
            ended = await cx.send_request(wait)
        output: TerminalOutputResponse = await cx.send_request(
            acp.TerminalOutputRequest(session_id=session_id, terminal_id=terminal)
        )
    finally:
        if not cx.closed:  # not awaited: a cancelled turn must still release it
            cx.send_request(acp.ReleaseTerminalRequest(session_id=session_id, terminal_id=terminal))
    return CommandResult(output.output, output.truncated, ended.exit_code, ended.signal, timed_out)


def connect_mcp(
    cx: Connection, declared: Sequence[Mapping[str, Any]], name: str
) -> AbstractAsyncContextManager[McpClient]:
    """An ``mcp`` client for the server of ``declared`` called ``name`` (see :meth:`~acpio.app.Turn.mcp`)."""
    declaration = next((d for d in declared if d.get("name") == name), None)
    if declaration is None:
        names = ", ".join(repr(d.get("name")) for d in declared) or "none"
        raise LookupError(f"No MCP server named {name!r} was declared for this session (declared: {names})")
    try:
        from acpio.mcp import connect_declared
    except ImportError as exc:
        raise ImportError(f"turn.mcp() needs the mcp package: pip install 'acpio[mcp]' ({exc})") from exc
    return connect_declared(cx, declaration)
