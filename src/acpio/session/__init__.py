"""Sessions: set one up (``session/new``, ``/load``, ``/resume``, ``/fork``), prompt it, read its updates.

Start from a connection to an agent (a client, or a proxy talking to its successor)::

    from acpio.session import build_session

    async with build_session(cx, "/path/to/project").start_session() as session:
        session.send_prompt("Hello")
        async for message in session:           # this turn's messages, until its stop reason
            print(message.text or message.method)
        print(session.stop_reason)              # end_turn

        session.send_prompt("And now?")
        print(await session.read_to_string())   # the agent's text for the whole turn

    # later, maybe on another connection: the same conversation, its history replayed first
    async with build_session_load(cx, session_id, "/path/to/project").start_session() as session:
        for message in session.history:         # what session/load replayed, in order
            print(message.text)

**Entry point.** The session helpers are free functions taking the connection, because the
engine's :class:`~acpio.jsonrpc.Connection` knows nothing of ACP. One builder per setup method,
all giving a :class:`SessionBuilder` with the same start methods and an :class:`ActiveSession`:

* ``session/new``: :func:`build_session` (``cwd``), :func:`build_session_cwd` (the current directory);
* ``session/load``: :func:`build_session_load` (the history is replayed into
  :attr:`ActiveSession.history`);
* ``session/resume``: :func:`build_session_resume` (no replay);
* ``session/fork`` (unstable: the connection needs ``Client.builder(unstable=True)``):
  :func:`build_session_fork` (the answer names the new session);
* any of the four from a request: :func:`build_session_from`.

:func:`attach_session` reads a session set up by other means. :class:`SessionMethods` is the same
functions as methods: a connection class that inherits it gives ``cx.build_session(cwd)``,
``cx.build_session_load(session_id, cwd)``...

**Blocking and non-blocking.** :meth:`SessionBuilder.start_session`,
:meth:`SessionBuilder.run_until` and :meth:`SessionBuilder.start_session_proxy` wait for the
agent's answer, so they work in spawned tasks and in ``connect_with``'s main function; inside a
handler they raise :class:`~acpio.DeadlockError`. Inside a handler, use
:meth:`SessionBuilder.on_session_start` or :meth:`SessionBuilder.on_proxy_session_start`: they
return at once and run the callback in a task once the session exists.

**Ordering.** For ``session/new`` and ``session/fork``, whose answer names the session, the
handler that routes the session's messages is installed by the dispatch loop itself, right after it
reads the response and before the next message, so an update that follows the response (even in
the same batch) reaches the session. Updates that arrive *before* the response is read are parked
by the client role's default handler and replayed to the session, in order, when its handler is
installed. For ``session/load`` and ``session/resume`` the session id is known in advance, so the
handler is installed *before* the request is sent and nothing needs parking; the notifications a
``session/load`` receives before its answer (the replayed conversation) become
:attr:`ActiveSession.history`, and a refused load or resume removes the handler again. A prompt's
stop reason is queued by the dispatch loop when the ``session/prompt`` response is read, so it
always comes after the turn's updates.

**The agent's requests.** A request the agent sends during the session is read as an
:class:`AgentRequestMessage` subclass (:class:`RequestPermissionMessage`,
:class:`ReadTextFileMessage`...): the typed request, answered in place with ``item.respond(...)``.
:meth:`ActiveSession.read_to_string` answers them as told (``permissions="allow"``,
``files=root``: the policies and :class:`~acpio.client.ConfinedFiles` of :mod:`acpio.client`),
and only what the client advertised.

**Proxy hand-off.** :meth:`ActiveSession.proxy_remaining_messages` switches a session from being
read here to being forwarded to the client, losing and reordering nothing: see its docstring.

**Modules.** The package is cut by responsibility; import from ``acpio.session`` itself:
:mod:`~acpio.session.messages` (what a session reads), :mod:`~acpio.session.routing` (how its
messages reach it), :mod:`~acpio.session.delivery` (its inbox read here, until closed or handed
off), :mod:`~acpio.session.active` (:class:`ActiveSession`),
:mod:`~acpio.session.answers` (how ``read_to_string`` answers the agent),
:mod:`~acpio.session.builder` (:class:`SessionBuilder`), :mod:`~acpio.session.methods` (the
entry points), :mod:`~acpio.session.connection` (:class:`SessionConnection`),
:mod:`~acpio.session.peers` and :mod:`~acpio.session.mcp`; for ACP v2 beside v1,
:mod:`~acpio.session.negotiation` (what ``cx.initialize()`` offers and accepts),
:mod:`~acpio.session.turn_view` (:class:`TurnView`, one view of a turn for both versions),
:mod:`~acpio.session.turn_reading` (when a turn ends) and :mod:`~acpio.session.prompting`.
"""

from acpio.session.active import ActiveSession, SessionSetupRequest, SessionSetupResponse
from acpio.session.attach import (
    AttachedRequestResolved,
    AttachedSession,
    AttachedSessionClosed,
    AttachedTurnEnded,
    AttachRole,
    AttachSessionRequest,
    AttachSessionResponse,
    ControlledItem,
    ControlledSession,
    DetachSessionRequest,
    DetachSessionResponse,
    ObservedSession,
    SessionEnded,
    control_session,
    observe_session,
    route_cookies,
)
from acpio.session.builder import SessionBuilder, SessionStart, attach_session
from acpio.session.connection import SessionConnection
from acpio.session.mcp import McpServerList, McpServerRegistry
from acpio.session.messages import (
    AgentRequestMessage,
    CreateElicitationMessage,
    CreateTerminalMessage,
    KillTerminalMessage,
    PromptContent,
    ReadTextFileMessage,
    ReleaseTerminalMessage,
    RequestPermissionMessage,
    RequestPermissionV2Message,
    SessionMessage,
    TerminalOutputMessage,
    TurnEnded,
    WaitForTerminalExitMessage,
    WriteTextFileMessage,
)
from acpio.session.methods import (
    SessionMethods,
    build_session,
    build_session_cwd,
    build_session_fork,
    build_session_from,
    build_session_load,
    build_session_resume,
)
from acpio.session.negotiation import ProtocolChoice
from acpio.session.peers import SessionPeers
from acpio.session.turn_view import (
    DiffView,
    FileChange,
    MessageView,
    PlanChanged,
    PlanEntryView,
    StateChanged,
    TerminalChanged,
    TerminalRef,
    TerminalView,
    TextAdded,
    ToolCallChanged,
    ToolCallView,
    ToolContent,
    TurnEvent,
    TurnView,
)

__all__ = [
    "ActiveSession",
    "AttachSessionRequest",
    "AttachSessionResponse",
    "AttachRole",
    "AttachedRequestResolved",
    "AttachedSession",
    "AttachedSessionClosed",
    "AttachedTurnEnded",
    "ControlledItem",
    "ControlledSession",
    "DetachSessionRequest",
    "DetachSessionResponse",
    "ObservedSession",
    "SessionEnded",
    "AgentRequestMessage",
    "CreateElicitationMessage",
    "CreateTerminalMessage",
    "DiffView",
    "FileChange",
    "KillTerminalMessage",
    "McpServerList",
    "McpServerRegistry",
    "MessageView",
    "PlanChanged",
    "PlanEntryView",
    "PromptContent",
    "ProtocolChoice",
    "ReadTextFileMessage",
    "ReleaseTerminalMessage",
    "RequestPermissionMessage",
    "RequestPermissionV2Message",
    "SessionBuilder",
    "SessionConnection",
    "SessionMessage",
    "SessionMethods",
    "SessionPeers",
    "SessionSetupRequest",
    "SessionSetupResponse",
    "SessionStart",
    "StateChanged",
    "TerminalChanged",
    "TerminalOutputMessage",
    "TerminalRef",
    "TerminalView",
    "TextAdded",
    "ToolCallChanged",
    "ToolCallView",
    "ToolContent",
    "TurnEnded",
    "TurnEvent",
    "TurnView",
    "WaitForTerminalExitMessage",
    "WriteTextFileMessage",
    "attach_session",
    "build_session",
    "build_session_cwd",
    "build_session_fork",
    "build_session_from",
    "build_session_load",
    "build_session_resume",
    "control_session",
    "observe_session",
    "route_cookies",
]
