"""How an :class:`~acpio.client.AgentSession` answers the agent's requests, recording what it did.

* ``session/request_permission`` (v1 and v2): the tool call asked about is merged into the
  session's view first, the request (in v1's shape) given what the view knows and the request
  left out (its ``kind``, title, locations, raw input; a v2 command subject is a question about
  running it: :func:`~acpio.session.permission_question.permission_question`), and the policy
  asked through :func:`~acpio.client.permissions.decide_permission`;
* ``fs/read_text_file`` and ``fs/write_text_file``: inside the session's directory only
  (:class:`~acpio.client.ConfinedFiles`); a write is recorded with its diff;
* ``elicitation/create``: :func:`~acpio.driver.forms.answer_form`, by the client's
  :class:`~acpio.client.FormPolicy` (``AgentClient(forms=...)``), each form recorded with its
  answer;
* ``terminal/*``: real processes (:class:`~acpio.oneshot.terminals.Terminals`), each command
  allowed first by a permission granted earlier in the session or by the policy, asked about it
  as ``acpio prompt`` asks (:func:`~acpio.oneshot.permissions.command_request`);
* anything else: ``-32601``.

Once the turn is being cancelled, a permission pending or asked later is answered ``cancelled``,
and a form ``cancel``.
"""

from __future__ import annotations

import asyncio
import difflib
import logging
from collections.abc import Collection
from typing import Literal, cast

from acpio.client.files import ConfinedFiles
from acpio.client.forms import FormPolicy
from acpio.client.permissions import AllowPolicy, Outcome, PermissionPolicy, decide_permission
from acpio.driver.forms import answer_form
from acpio.driver.result import FileWrite, FormAsk, OfferedOption, PermissionAsk
from acpio.errors import InternalError, MethodNotFound, RequestError, ResourceNotFound
from acpio.jsonrpc import Connection, RequestDispatch
from acpio.oneshot.client_methods import ClientMethods, decided
from acpio.oneshot.permissions import CommandGrants, command_refusal, command_request
from acpio.oneshot.terminals import TerminalCommand, Terminals
from acpio.schema import (
    CreateElicitationRequest,
    CreateElicitationResponse,
    CreateTerminalRequest,
    CreateTerminalResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from acpio.schema.base import AcpModel
from acpio.session import RequestPermissionMessage, RequestPermissionV2Message, SessionMessage, TurnView
from acpio.session.messages import v2_permission_answer
from acpio.session.permission_question import permission_question
from acpio.session.turn_view import ToolCallView

__all__ = ["SessionRequests"]

_log = logging.getLogger("acpio.driver")

#: What answering a request recorded, for the turn's result and its stream.
Record = PermissionAsk | FormAsk | FileWrite


class SessionRequests:
    """Answers one session's requests; :meth:`answer` returns what it recorded for the turn."""

    def __init__(
        self,
        view: TurnView,
        policy: PermissionPolicy,
        files: ConfinedFiles,
        *,
        terminals: bool,
        allow_env: Collection[str] = (),
        forms: FormPolicy | None = None,
    ) -> None:
        self._view = view
        self._policy = policy
        self._forms = forms
        self._files = files
        #: Under :class:`~acpio.client.AllowPolicy`: the variables deciding what runs a command may set.
        self._allow_env = frozenset(allow_env)
        #: The session's terminals (``None``: refused); each command is allowed by :meth:`consent_to_command`.
        self.terminals = Terminals(files, consent=self.consent_to_command) if terminals else None
        self._grants = CommandGrants()
        self._commands_asked = 0
        #: Set while the turn is being cancelled: permissions, pending or later, get ``cancelled``.
        self.cancelled = asyncio.Event()
        #: What was recorded since the last :meth:`take_records` (consent to commands happens in
        #: ``terminal/create``, answered in place, so it is collected here rather than returned).
        self._records: list[Record] = []
        #: The client terminals started in the session, in order, with their directories.
        self.started_terminals: dict[str, str] = {}
        self._methods = ClientMethods(
            unknown=lambda method: MethodNotFound(
                f"{method}: this client (acpio.client.AgentClient) does not answer it"
            ),
            failure=lambda method, exc: InternalError(message=f"The client failed to answer {method}: {exc}"),
            log=_log,
        )
        self._methods.inline[ReadTextFileRequest.METHOD] = self._read_file
        self._methods.inline[WriteTextFileRequest.METHOD] = self._write_file
        self._methods.inline[CreateElicitationRequest.METHOD] = self._form
        if self.terminals is not None:
            self._methods.serve_terminals(self.terminals, created=self._terminal_created)

    def take_records(self) -> list[Record]:
        """What was recorded since the last call, in order."""
        records, self._records = self._records, []
        return records

    async def answer(self, message: SessionMessage, connection: Connection) -> None:
        """Answer one request of the agent: inline (in order) or, for a wait, in a task of ``connection``."""
        dispatch = cast(RequestDispatch, message.dispatch)
        if isinstance(message, RequestPermissionMessage | RequestPermissionV2Message):
            await self._methods.serve(dispatch, lambda _: self._permission(message))
        else:
            await self._methods.answer(dispatch, connection)

    # --- permissions -------------------------------------------------------------------------------

    async def _permission(self, message: RequestPermissionMessage | RequestPermissionV2Message) -> AcpModel:
        request, call = permission_question(message.request, self._view)
        outcome = await self._decide(request, call)
        self._grants.record(request, outcome)
        self._records.append(_ask("tool_call", call, request, outcome))
        if isinstance(message, RequestPermissionMessage):
            return RequestPermissionResponse(outcome=outcome)
        return v2_permission_answer(outcome)

    async def _decide(self, request: RequestPermissionRequest, call: ToolCallView) -> Outcome:
        """The policy's outcome; ``cancelled`` once the turn is cancelled (even while deciding)."""
        return await decided(self.cancelled, decide_permission(self._policy, request, call))

    async def consent_to_command(self, command: TerminalCommand) -> None:
        """Let a command run, or refuse it (``-32602``): a grant covers it, or the policy allows it.

        Under :class:`~acpio.client.AllowPolicy` (``permissions="allow"``), a command setting a
        variable that decides what runs or loads (``PATH``, ``LD_PRELOAD``...) is refused unless
        ``allow_env`` names it, as ``acpio prompt --allow`` does: consent to run commands is not
        consent to change which program runs.
        """
        if isinstance(self._policy, AllowPolicy):
            self._check_allowed_env(command)
        self._commands_asked += 1
        request = command_request(command, f"acpio-command-{self._commands_asked}")
        asked = request.tool_call
        call = ToolCallView(asked.tool_call_id, title=asked.title, kind="execute", raw_input=asked.raw_input)
        if self._grants.take(command):
            self._records.append(
                PermissionAsk(
                    "command", call, (), "selected", command=command.command_line, covered_by_grant=True
                )
            )
            return
        outcome = await self._decide(request, call)
        ask = _ask("command", call, request, outcome, command=command.command_line)
        self._records.append(ask)
        if ask.allowed:
            return
        why = (
            "the turn is being cancelled" if ask.outcome == "cancelled" else "the client's policy refused it"
        )
        raise command_refusal(command, ask.option_id or "cancelled", why)

    def _check_allowed_env(self, command: TerminalCommand) -> None:
        refused = [name for name in command.risky_variables if name not in self._allow_env]
        if refused:
            names = ", ".join(refused)
            raise command_refusal(
                command,
                "env",
                f"it sets {names}, deciding which program runs or what it loads; the client allows the "
                "agent's commands, but not such a variable unless AgentClient(allow_env=...) names it",
                variables=refused,
            )

    # --- forms -------------------------------------------------------------------------------------

    async def _form(self, dispatch: RequestDispatch) -> CreateElicitationResponse:
        request: CreateElicitationRequest = dispatch.parse(CreateElicitationRequest)
        answer, ask = await answer_form(self._forms, request, self.cancelled)
        self._records.append(ask)
        return answer

    # --- files -------------------------------------------------------------------------------------

    async def _read_file(self, dispatch: RequestDispatch) -> ReadTextFileResponse:
        request: ReadTextFileRequest = dispatch.parse(ReadTextFileRequest)
        return await asyncio.to_thread(self._files.read, request)

    async def _write_file(self, dispatch: RequestDispatch) -> WriteTextFileResponse:
        request: WriteTextFileRequest = dispatch.parse(WriteTextFileRequest)
        old_text = await asyncio.to_thread(self._old_text, request)
        response = await asyncio.to_thread(self._files.write, request)
        self._records.append(
            FileWrite(
                request.path,
                old_text,
                request.content,
                unified_diff(request.path, old_text, request.content),
                "client",
                self._call_touching(request.path),
            )
        )
        return response

    def _old_text(self, request: WriteTextFileRequest) -> str | None:
        """The file's text before the write; ``None`` for a new file (or one that cannot be read)."""
        try:
            return self._files.read(
                ReadTextFileRequest(session_id=request.session_id, path=request.path)
            ).content
        except ResourceNotFound:
            return None
        except RequestError:  # not text, too big...: the write itself will say what is wrong
            return None

    def _call_touching(self, path: str) -> str | None:
        """The latest tool call of the view whose locations or diffs name ``path``."""
        for call in reversed(self._view.tool_calls.values()):
            if path in call.locations or any(c.path == path for d in call.diffs for c in d.changes):
                return call.tool_call_id
        return None

    def _terminal_created(self, request: CreateTerminalRequest, response: CreateTerminalResponse) -> None:
        self.started_terminals[response.terminal_id] = request.cwd or str(self._files.root)


def _ask(
    subject: Literal["tool_call", "command"],
    call: ToolCallView,
    request: RequestPermissionRequest,
    outcome: Outcome,
    *,
    command: str | None = None,
) -> PermissionAsk:
    options = tuple(OfferedOption(o.option_id, o.name, str(o.kind)) for o in request.options)
    if isinstance(outcome, SelectedPermissionOutcome):
        kind = next((o.kind for o in options if o.option_id == outcome.option_id), None)
        return PermissionAsk(subject, call.copy(), options, "selected", outcome.option_id, kind, command)
    return PermissionAsk(subject, call.copy(), options, "cancelled", command=command)


def unified_diff(path: str, old_text: str | None, new_text: str | None) -> str:
    """A unified diff from ``old_text`` (``None``: a new file) to ``new_text``, labelled with ``path``."""
    old = (old_text or "").splitlines(keepends=True)
    new = (new_text or "").splitlines(keepends=True)
    before = "/dev/null" if old_text is None else f"a/{path.lstrip('/')}"
    return "".join(difflib.unified_diff(old, new, before, f"b/{path.lstrip('/')}"))
