"""What ``acpio prompt`` is asked to do (:class:`PromptOptions`), and how it ends (:class:`ExitCode`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias

from acpio.errors import AcpError
from acpio.oneshot.answers import PolicyName
from acpio.oneshot.controls import Controls
from acpio.oneshot.elicitation import ElicitationSettings
from acpio.oneshot.sanitize import sanitize
from acpio.profiles import EditorProfile
from acpio.session import ProtocolChoice
from acpio.transports import AgentCommand, Component

__all__ = [
    "DEFAULT_INIT_TIMEOUT",
    "SESSIONS_END_WITH_PROCESS",
    "ExitCode",
    "OutputMode",
    "PromptFailed",
    "PromptOptions",
]

#: How the turn is shown: ``rich`` (a terminal), ``plain`` (text without colour) or ``json`` (JSON lines).
OutputMode: TypeAlias = Literal["rich", "plain", "json"]

#: The capability an agent whose sessions end with its process sets (``acpio testy`` with its store
#: in memory): then no ``--session`` hint is printed, since a later run could not continue the session.
SESSIONS_END_WITH_PROCESS: Final = "_meta.acpio.sessionsEndWithProcess"

#: Seconds the agent has to answer ``initialize`` unless :attr:`PromptOptions.init_timeout` says otherwise.
DEFAULT_INIT_TIMEOUT: Final = 30.0


class ExitCode(enum.IntEnum):
    """The exit codes of ``acpio prompt``."""

    #: The turn ended with ``end_turn``.
    OK = 0
    #: A usage mistake (bad option, no such directory, a session the agent cannot continue).
    USAGE = 2
    #: The agent could not be started, did not answer ``initialize`` in time, or exited (or broke the
    #: connection) before the turn ended.
    AGENT_FAILED = 3
    #: The agent answered ``initialize``, the session setup or ``session/prompt`` with an error.
    AGENT_ERROR = 4
    #: The turn ended for another reason: ``max_tokens``, ``max_turn_requests``, ``refusal``.
    STOPPED = 5
    #: Stopped by SIGHUP, or because the parent process exited; the agent and its commands were ended.
    HANGUP = 129
    #: The turn was cancelled (Ctrl-C), or the run was stopped by a second Ctrl-C.
    CANCELLED = 130
    #: Stopped by SIGTERM; the agent and its commands were ended.
    TERMINATED = 143


class PromptFailed(AcpError):
    """``acpio prompt`` could not complete: ``message`` says why, ``exit_code`` is what to exit with."""

    def __init__(self, message: str, exit_code: ExitCode) -> None:
        message = sanitize(message)  # it quotes the agent (its errors, its stderr): printed on a terminal
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


@dataclass(frozen=True)
class PromptOptions:
    """What ``acpio prompt`` was asked to do."""

    #: The agent to start: a command, or any component (an in-process agent builder, say).
    agent: AgentCommand | Component
    #: The prompt text.
    prompt: str
    #: The session's working directory; the agent's file access and commands are confined to it.
    cwd: Path
    #: A session to continue (load or resume) instead of starting a new one.
    session_id: str | None = None
    #: How permission requests are answered.
    permissions: PolicyName = "deny"
    #: A policy file (``--policy``, :func:`acpio.client.load_policy`): its rules answer the
    #: permission requests and the agent's commands; what they ``ask`` goes to ``permissions``'
    #: ``ask`` (``deny`` or ``allow``: refused, nobody to ask).
    policy: Path | None = None
    #: Under ``allow``: the variables deciding what runs or loads (``PATH``, ``LD_PRELOAD``... see
    #: :data:`~acpio.oneshot.terminals.RISKY_VARIABLES`) that the agent's commands may set
    #: (``--allow-env``); a command setting another one is refused.
    allow_env: frozenset[str] = frozenset()
    #: How the turn is shown.
    output: OutputMode = "plain"
    #: For ``ask``: read the answers from ``/dev/tty`` rather than stdin (stdin carried the prompt).
    answers_from_terminal: bool = False
    #: Seconds the agent has to answer ``initialize``; ``None`` or 0: no limit.
    init_timeout: float | None = DEFAULT_INIT_TIMEOUT
    #: Show the agent's stderr as it comes, the extension notifications it sends, and acpio's
    #: informational log records (``--verbose``).
    verbose: bool = False
    #: Proxies to run in front of the agent, first to last (``--proxy``): commands or components,
    #: run with the agent by a conductor (:class:`acpio.conductor.Chain`).
    proxies: tuple[AgentCommand | Component, ...] = ()
    #: Write the conductor's trace of every message between the client, the proxies and the agent
    #: to this file (``--trace``; ``acpio trace view FILE`` shows it).
    trace: Path | None = None
    #: Record the conversation with the agent to this file as a cassette, secrets and local paths
    #: redacted (``--record``; :mod:`acpio.trace.cassette`, ``acpio replay FILE`` replays it).
    record: Path | None = None
    #: More directories the session may use besides ``cwd`` (``--add-dir``): sent as the session's
    #: ``additionalDirectories``, and the agent's file access is allowed there too.
    add_dirs: tuple[Path, ...] = ()
    #: A conversation (``-i``): after the first turn (none when ``prompt`` is empty), ask for the
    #: next prompt, until ``:quit`` or the end of input (:mod:`acpio.oneshot.interactive`).
    interactive: bool = False
    #: MCP servers for the session (``--mcp``, :mod:`acpio.oneshot.mcp_servers`): declarations
    #: (``McpServerStdio``, ``McpServerHttp``...) and servers acpio serves over the connection
    #: (:class:`acpio.mcp.McpServer`, anything with ``attach``).
    mcp_servers: tuple[Any, ...] = ()
    #: How elicitations are answered (``--answer``, ``--answers``, ``--urls``, ``--decline-elicitations``).
    elicitation: ElicitationSettings = field(default_factory=ElicitationSettings)
    #: The mode and config options to set, and the auth method to log in with, before the prompt.
    controls: Controls = field(default_factory=Controls)
    #: The ACP version to speak (``--protocol``): ``"negotiate"`` offers v2 and accepts v1.
    protocol: ProtocolChoice = "negotiate"
    #: Act as this editor (``--as zed``): advertise its capabilities and ``clientInfo``, drop what it
    #: drops, and warn (:class:`~acpio.AcpSpecificationWarning`) of what it would not take.
    editor: EditorProfile | None = None
