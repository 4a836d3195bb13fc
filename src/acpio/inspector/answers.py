"""How the inspector answers the agent's requests: by a policy, or by the person at the page.

:class:`Answers` holds the page's :class:`Policies` and the client-side machinery of ``acpio prompt``
(files confined to one root, :class:`~acpio.client.ConfinedFiles`; commands run for real,
:class:`~acpio.oneshot.Terminals`). :meth:`Answers.holds` tells what a person must answer and
:meth:`Answers.by_policy` answers the rest; :meth:`Answers.perform` carries out a file or terminal request
a person consented to. The follow-up terminal methods (output, wait, kill, release) are always
answered: they concern a command already allowed.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeAlias

from pydantic import ValidationError

from acpio.client.files import ConfinedFiles
from acpio.client.permissions import AllowPolicy, DenyPolicy
from acpio.errors import InvalidParams, MethodNotFound, RequestError
from acpio.oneshot.terminals import Terminals
from acpio.schema import (
    CreateTerminalRequest,
    KillTerminalRequest,
    ReadTextFileRequest,
    ReleaseTerminalRequest,
    RequestPermissionRequest,
    RequestPermissionResponse,
    TerminalOutputRequest,
    WaitForTerminalExitRequest,
    WriteTextFileRequest,
)

__all__ = ["Answer", "Answers", "Choice", "Policies"]

Choice: TypeAlias = Literal["ask", "allow", "deny"]
"""What a policy does with a request: hold it for the person, or answer it yes or no at once."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A reply to one request: its ``result``, or an ``error`` object ``{code, message, data?}``."""

    result: Any = None
    error: dict[str, Any] | None = None

    @classmethod
    def failed(cls, error: RequestError) -> Answer:
        """The reply carrying ``error``."""
        return cls(error=error.to_wire())


@dataclass(slots=True)
class Policies:
    """How each kind of agent request is answered; the page changes them while the agent runs."""

    permission: Choice = "ask"
    """``session/request_permission``: allow (the allow option), deny (the reject option), or ask."""
    files: Choice = "ask"
    """``fs/*``: allow (inside the root), deny, or ask."""
    terminals: Choice = "ask"
    """``terminal/create``: allow (run the command, inside the root), deny, or ask."""
    elicitation: Literal["ask", "decline"] = "ask"
    """``elicitation/create``: ask the person, or decline."""

    def to_json(self) -> dict[str, str]:
        """The policies as the page shows them."""
        return {
            "permission": self.permission,
            "files": self.files,
            "terminals": self.terminals,
            "elicitation": self.elicitation,
        }


_FOLLOW_UPS = frozenset(
    {
        TerminalOutputRequest.METHOD,
        WaitForTerminalExitRequest.METHOD,
        KillTerminalRequest.METHOD,
        ReleaseTerminalRequest.METHOD,
    }
)


class Answers:
    """Answers the agent's requests for the inspector's page; files and commands stay inside ``root``."""

    def __init__(self, root: Path, policies: Policies | None = None) -> None:
        self.policies = policies or Policies()
        self.files = ConfinedFiles(root)
        self.terminals = Terminals(self.files)

    @property
    def root(self) -> Path:
        """The directory the agent's files and commands are confined to."""
        return self.files.root

    def holds(self, method: str) -> bool:
        """Whether a request of ``method`` waits for the person (the policies do not answer it)."""
        policies = self.policies
        if method == RequestPermissionRequest.METHOD:
            return policies.permission == "ask"
        if method in (ReadTextFileRequest.METHOD, WriteTextFileRequest.METHOD):
            return policies.files == "ask"
        if method == CreateTerminalRequest.METHOD:
            return policies.terminals == "ask"
        if method == "elicitation/create":
            return policies.elicitation == "ask"
        return False

    async def by_policy(self, method: str, params: Any) -> Answer:
        """The answer the policies give to a request :meth:`holds` does not hold."""
        policies = self.policies
        if method in _FOLLOW_UPS:
            return await self.perform(method, params)
        if method == RequestPermissionRequest.METHOD:
            return await self._permission(params, policies.permission == "allow")
        if method in (ReadTextFileRequest.METHOD, WriteTextFileRequest.METHOD):
            return await self._allowed(method, params, policies.files == "allow", "file access")
        if method == CreateTerminalRequest.METHOD:
            return await self._allowed(method, params, policies.terminals == "allow", "running commands")
        if method == "elicitation/create":
            return Answer(result={"action": "decline"})
        return Answer.failed(MethodNotFound(method))

    async def perform(self, method: str, params: Any) -> Answer:
        """Carry out a file or terminal request (the person, or a policy, agreed to it)."""
        try:
            return Answer(result=(await self._perform(method, params)).to_wire())
        except ValidationError as exc:
            return Answer.failed(InvalidParams(data=str(exc)))
        except RequestError as exc:
            return Answer.failed(exc)

    async def _perform(self, method: str, params: Any) -> Any:
        terminals = self.terminals
        if method == ReadTextFileRequest.METHOD:
            return await asyncio.to_thread(self.files.read, ReadTextFileRequest.model_validate(params))
        if method == WriteTextFileRequest.METHOD:
            return await asyncio.to_thread(self.files.write, WriteTextFileRequest.model_validate(params))
        if method == CreateTerminalRequest.METHOD:
            return await terminals.create(CreateTerminalRequest.model_validate(params))
        if method == TerminalOutputRequest.METHOD:
            return terminals.output(TerminalOutputRequest.model_validate(params))
        if method == WaitForTerminalExitRequest.METHOD:
            return await terminals.wait_for_exit(WaitForTerminalExitRequest.model_validate(params))
        if method == KillTerminalRequest.METHOD:
            return await terminals.kill(KillTerminalRequest.model_validate(params))
        if method == ReleaseTerminalRequest.METHOD:
            return await terminals.release(ReleaseTerminalRequest.model_validate(params))
        raise MethodNotFound(method)

    async def _allowed(self, method: str, params: Any, allow: bool, what: str) -> Answer:
        if allow:
            return await self.perform(method, params)
        return Answer.failed(RequestError(-32000, f"{what} is refused by the inspector's policy"))

    async def _permission(self, params: Any, allow: bool) -> Answer:
        try:
            request = RequestPermissionRequest.model_validate(params)
        except ValidationError as exc:
            return Answer.failed(InvalidParams(data=str(exc)))
        policy = AllowPolicy() if allow else DenyPolicy()
        outcome = await policy.decide(request)
        return Answer(result=RequestPermissionResponse(outcome=outcome).to_wire())

    async def aclose(self) -> None:
        """End the commands still running."""
        await self.terminals.aclose()
