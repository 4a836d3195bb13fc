"""What answers the agent's requests during an ``acpio prompt`` turn: :class:`RequestAnswers`.

Files are read and written inside ``--cwd`` (and the ``--add-dir`` directories), terminal commands
run through :class:`~acpio.oneshot.terminals.Terminals`, permission questions go to the policy
(``--allow``, ``--deny``, ``--ask``) and elicitations to the elicitor; once the turn is being
cancelled, a question pending or asked later is answered ``cancelled``.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import shlex
from collections.abc import Collection
from pathlib import Path
from typing import Literal, TypeAlias, cast

from acpio.client.files import ConfinedFiles
from acpio.client.permissions import Outcome, PermissionPolicy, allows, decide_permission
from acpio.client.policy import RulePolicy
from acpio.errors import InternalError, MethodNotFound, RequestError, ResourceNotFound
from acpio.jsonrpc import Connection, RequestDispatch
from acpio.oneshot.client_methods import ClientMethods, decided, unless_cancelled
from acpio.oneshot.elicitation import Elicitor
from acpio.oneshot.permissions import CommandGrants, command_refusal, command_request
from acpio.oneshot.render import Renderer
from acpio.oneshot.terminals import TerminalCommand, Terminals
from acpio.schema import (
    CancelledPermissionOutcome,
    CreateElicitationRequest,
    CreateElicitationResponse,
    ReadTextFileRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from acpio.schema.base import AcpModel
from acpio.session import RequestPermissionV2Message, SessionMessage
from acpio.session.messages import v2_permission_answer

__all__ = ["PolicyName", "RequestAnswers"]

_log = logging.getLogger("acpio.oneshot")

#: How permission requests are answered.
PolicyName: TypeAlias = Literal["allow", "deny", "ask"]


class RequestAnswers:
    """What answers the agent's requests during the turn: files, terminals, permission questions."""

    def __init__(
        self,
        permissions: PolicyName,
        renderer: Renderer,
        files: ConfinedFiles,
        terminals: Terminals,
        policy: PermissionPolicy,
        *,
        allowed_env: Collection[str] = (),
    ) -> None:
        self._permissions = permissions
        #: Under ``allow``: the variables deciding what runs or loads a command may set (``--allow-env``).
        self._allowed_env = frozenset(allowed_env)
        self._renderer = renderer
        self._files = files
        self._policy = policy
        #: The ``--add-dir`` directories, where the agent's file access is allowed too.
        self.added_dirs: list[ConfinedFiles] = []
        self._grants = CommandGrants()
        self._commands_asked = 0
        #: Set once the turn is being cancelled: permission questions, pending or later, get ``cancelled``.
        self.cancelled = asyncio.Event()
        #: Answers ``elicitation/create`` (set by :func:`run_prompt`; ``None`` refuses them).
        self.elicitor: Elicitor | None = None
        self._methods = ClientMethods(
            unknown=MethodNotFound,
            failure=lambda method, _: InternalError(message=f"acpio prompt failed to answer {method}"),
            log=_log,
            refused=self._refused,
        )
        self._methods.inline.update(
            {
                ReadTextFileRequest.METHOD: self._read_file,
                WriteTextFileRequest.METHOD: self._write_file,
                RequestPermissionRequest.METHOD: self._permission,
                CreateElicitationRequest.METHOD: self._elicit,
            }
        )
        self._methods.serve_terminals(terminals)

    async def answer(self, message: SessionMessage, connection: Connection) -> None:
        """Answer one request of the turn: inline, in order, or in a task of ``connection``'s.

        On ACP v2 only permission questions (with their title, description and subject) and
        elicitations come: v2 has no client file-system or terminal methods.
        """
        dispatch = cast(RequestDispatch, message.dispatch)
        if isinstance(message, RequestPermissionV2Message):
            await self._methods.serve(dispatch, functools.partial(self._permission_v2, message))
        else:
            await self._methods.answer(dispatch, connection)

    def _refused(self, dispatch: RequestDispatch, error: RequestError) -> None:
        # Agents often try to read a file to see whether it exists: that is no news to the person.
        if not (isinstance(error, ResourceNotFound) and dispatch.method == ReadTextFileRequest.METHOD):
            self._renderer.request_failed(dispatch.method, error.message)

    # File work runs in a thread: a slow disk or a big file must not stop the event loop (Ctrl-C, the
    # agent's other messages); the turn still awaits it, so the agent's requests are served in order.
    async def _read_file(self, dispatch: RequestDispatch) -> ReadTextFileResponse:
        request: ReadTextFileRequest = dispatch.parse(ReadTextFileRequest)
        return await asyncio.to_thread(self._files_for(request.path).read, request)

    async def _write_file(self, dispatch: RequestDispatch) -> WriteTextFileResponse:
        request: WriteTextFileRequest = dispatch.parse(WriteTextFileRequest)
        return await asyncio.to_thread(self._files_for(request.path).write, request)

    def _files_for(self, path: str) -> ConfinedFiles:
        """The directory of ``path``: an ``--add-dir`` one, else ``--cwd`` (which refuses what is outside)."""
        for files in self.added_dirs:
            if Path(path).is_relative_to(files.root):
                return files
        return self._files

    async def _permission(self, dispatch: RequestDispatch) -> RequestPermissionResponse:
        request: RequestPermissionRequest = dispatch.parse(RequestPermissionRequest)
        # The question shows what it is about: the title, diff or command the tool call showed before.
        known = self._renderer.known_tool(request.tool_call.tool_call_id)
        if known is not None:
            asked = request.tool_call
            missing = {
                name: getattr(known, name)
                for name in ("title", "kind", "content", "locations", "raw_input")
                if getattr(asked, name) is None and getattr(known, name) is not None
            }
            if missing:
                request = request.model_copy(update={"tool_call": asked.model_copy(update=missing)})
        outcome = await self._decide(request)
        self._grants.record(request, outcome)
        self._renderer.permission(request, outcome)
        return RequestPermissionResponse(outcome=outcome)

    async def _permission_v2(
        self, message: RequestPermissionV2Message, dispatch: RequestDispatch
    ) -> AcpModel:
        """A v2 permission question, decided as a v1 one whose title says what is asked.

        The title, then the description and the command (with its directory) of a command subject.
        """
        request = message.request
        asked = message.as_v1()
        title = request.title
        if request.description:
            title += f" ({request.description})"
        command = getattr(request.subject, "command", None)
        if isinstance(command, str):
            title += f": $ {command} in {getattr(request.subject, 'cwd', '')}"
        asked.tool_call.title = title
        if isinstance(command, str) and asked.tool_call.raw_input is None:
            asked.tool_call.raw_input = {"command": command, "cwd": getattr(request.subject, "cwd", None)}
        outcome = await self._decide(asked)
        self._renderer.permission(asked, outcome)
        return v2_permission_answer(outcome)

    async def _elicit(self, dispatch: RequestDispatch) -> CreateElicitationResponse:
        """``elicitation/create``: the elicitor's answer; ``cancel`` once the turn is cancelled."""
        request: CreateElicitationRequest = dispatch.parse(CreateElicitationRequest)
        if self.elicitor is None:
            raise MethodNotFound(dispatch.method)
        self._renderer.settle()
        answer = await unless_cancelled(self.cancelled, self.elicitor.answer(request))
        return CreateElicitationResponse(action="cancel") if answer is None else answer

    async def consent_to_command(self, command: TerminalCommand) -> None:
        """Let the agent's command run or refuse it (``-32602``): a grant covers it, or the policy decides.

        Under ``allow``, a command setting a variable that decides what runs or loads is refused
        unless the user allowed that variable by name (``--allow-env``): consent to run commands is
        not consent to change which program runs or what it loads.
        """
        if self._grants.take(command):
            return
        if self._permissions == "allow":
            self._check_allowed_env(command)
        self._commands_asked += 1
        request = command_request(command, f"acpio-command-{self._commands_asked}")
        outcome = await self._decide(request)
        self._renderer.permission(request, outcome)
        if allows(request, outcome) is not None:
            if self._decided_by_rule():
                self._check_allowed_env(command, by="a rule of --policy")
            return
        if isinstance(outcome, CancelledPermissionOutcome) and self.cancelled.is_set():
            why, refused = "the turn is being cancelled", "cancelled"
        elif isinstance(self._policy, RulePolicy) and self._policy.decisions:
            why, refused = f"the policy refused it: {self._policy.decisions[-1].reason}", "policy"
        elif isinstance(outcome, CancelledPermissionOutcome):
            why, refused = "the turn is being cancelled", "cancelled"
        elif self._permissions == "deny":
            why = (
                "the user did not allow it (acpio prompt --deny refuses the agent's commands that no "
                "permission the user granted covers; --ask asks the user, --allow runs them)"
            )
            refused = "deny"
        else:
            why, refused = "the user refused it", "user"
        raise command_refusal(command, refused, why)

    def _decided_by_rule(self) -> bool:
        """Whether ``--policy``'s last decision was a rule's (or a grant's), not a person's answer."""
        policy = self._policy
        return (
            isinstance(policy, RulePolicy)
            and bool(policy.decisions)
            and policy.decisions[-1].decided_by != "asked"
        )

    def _check_allowed_env(self, command: TerminalCommand, *, by: str = "acpio prompt --allow") -> None:
        """Refuse (``-32602``) a command setting a variable deciding what runs or loads, unless allowed.

        ``by`` is what allowed the command: ``--allow``, or a rule of ``--policy``.
        """
        refused = [name for name in command.risky_variables if name not in self._allowed_env]
        if not refused:
            return
        names = ", ".join(refused)
        flags = " ".join(f"--allow-env {shlex.quote(name)}" for name in refused)
        decides = "decides" if len(refused) == 1 else "decide"
        raise command_refusal(
            command,
            "env",
            f"it sets {names}, which {decides} which program runs or what it loads; {by} runs the agent's "
            "commands, but not with such a variable unless the user allows it by name "
            f"({flags}) or is asked about each command (--ask)",
            variables=refused,
        )

    async def _decide(self, request: RequestPermissionRequest) -> Outcome:
        """The policy's outcome for ``request``; ``cancelled`` once the turn is cancelled (even meanwhile)."""
        return await decided(self.cancelled, self._ask(request))

    async def _ask(self, request: RequestPermissionRequest) -> Outcome:
        self._renderer.settle()  # the policy may ask the person: the question starts a line of its own
        return await decide_permission(self._policy, request)
