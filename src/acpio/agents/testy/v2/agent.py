"""testy on ACP v2: typed handlers on :mod:`acpio.schema.v2` models, on the sessions v1 uses too.

:func:`testy_agent_v2` is the v2 side of ``acpio testy --protocol 2`` (alone) or ``both`` (behind
a :class:`~acpio.VersionRouter`, beside :func:`~acpio.agents.testy.testy_agent`'s v1 builder, on
the same :class:`~acpio.agents.testy.sessions.TestySessions`: a session set up on one version
resumes on the other). What differs from v1 (see ``docs/testy.md``):

* ``initialize`` answers ``info`` and ``capabilities`` (every marker an object); the auth methods
  carry ``methodId``; ``auth/login`` and ``auth/logout`` replace ``authenticate`` and ``logout``;
* the ``session`` marker commits testy to ``session/list``, ``resume`` and ``close``, so the v1
  flags that turn those off do not apply; ``session/resume`` with ``replayFrom: {"type": "start"}``
  replays the history as ``user_message``/``agent_message`` upserts (v2 has no ``session/load``),
  and there are no modes;
* ``session/prompt`` answers ``{messageId}`` at once, then sends the ``user_message``,
  ``state_update`` ``running``, the turn, and ``state_update`` ``idle`` with the stop reason
  (``cancelled`` after a ``session/cancel``, sent after everything else the turn sent);
* ``tool_call/cancel`` and ``terminal/cancel`` cancel what the turn registered as cancellable.
"""

from __future__ import annotations

import contextlib
import logging
import os
import weakref
from dataclasses import dataclass
from typing import Any

from acpio import __version__
from acpio.agents.testy.agent import (
    AUTH_METHOD_ID,
    SESSIONS_END_WITH_PROCESS,
    TERMINAL_AUTH_METHOD_ID,
    TERMINAL_LOGIN_ARGS,
    TERMINAL_LOGIN_ENV,
    TestyOptions,
)
from acpio.agents.testy.login import check_login_method, forget_terminal_login, logged_in
from acpio.agents.testy.script import parse_prompt
from acpio.agents.testy.sessions import TestySession, TestySessions
from acpio.agents.testy.turn import TurnCancelled
from acpio.agents.testy.v2.commands import check_fail, run_prompt
from acpio.agents.testy.v2.convert import config_options, history_updates, v1_blocks
from acpio.agents.testy.v2.turn import TurnV2
from acpio.errors import AuthRequired, ConnectionClosed, InvalidParams, InvalidRequest
from acpio.jsonrpc import Builder, Connection, Responder
from acpio.roles import Agent
from acpio.schema.v2 import (
    AgentCapabilities,
    AudioContent,
    AuthMethodAgent,
    AuthMethodTerminal,
    CancelSessionNotification,
    CancelTerminalRequest,
    CancelTerminalResponse,
    CancelToolCallRequest,
    CancelToolCallResponse,
    ClientCapabilities,
    CloseSessionRequest,
    CloseSessionResponse,
    ContentBlock,
    DeleteSessionRequest,
    DeleteSessionResponse,
    EmbeddedResource,
    EnvVariable,
    ImageContent,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoginAuthRequest,
    LoginAuthResponse,
    LogoutAuthRequest,
    LogoutAuthResponse,
    McpCapabilities,
    McpHttpCapabilities,
    McpStdioCapabilities,
    NewSessionRequest,
    NewSessionResponse,
    PromptAudioCapabilities,
    PromptCapabilities,
    PromptEmbeddedContextCapabilities,
    PromptImageCapabilities,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionDeleteCapabilities,
    SessionInfo,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    TextContent,
    UpdateSessionNotification,
    UserMessage,
)
from acpio.store import MemoryStore
from acpio.versions import select_version

__all__ = ["TestyAgentV2", "testy_agent_v2"]

_log = logging.getLogger("acpio.testy")


@dataclass(slots=True)
class _Client:
    """What testy knows of one v2 client: what it advertised, whether it logged in."""

    capabilities: ClientCapabilities | None = None
    authenticated: bool = False

    @property
    def terminal_auth(self) -> bool:
        caps = self.capabilities
        return caps is not None and caps.auth is not None and caps.auth.terminal is not None


class TestyAgentV2:
    """testy's v2 handlers (see the module docstring); :func:`testy_agent_v2` registers them."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, options: TestyOptions, sessions: TestySessions) -> None:
        self.options = options
        self.sessions = sessions
        self._clients: weakref.WeakKeyDictionary[Connection, _Client] = weakref.WeakKeyDictionary()

    def _client(self, cx: Connection) -> _Client:
        client = self._clients.get(cx)
        if client is None:
            client = self._clients[cx] = _Client()
        return client

    # --- initialization and authentication --------------------------------------------------------

    def capabilities(self) -> AgentCapabilities:
        """What testy advertises on v2 (every marker an object; what is off is left out)."""
        opts = self.options
        prompt = PromptCapabilities(
            image=PromptImageCapabilities() if opts.prompt_image else None,
            audio=PromptAudioCapabilities() if opts.prompt_audio else None,
            embedded_context=PromptEmbeddedContextCapabilities() if opts.prompt_embedded_context else None,
        )
        mcp = McpCapabilities(
            stdio=McpStdioCapabilities(), http=McpHttpCapabilities() if opts.mcp_http else None
        )
        delete = SessionDeleteCapabilities() if opts.session_delete else None
        capabilities = AgentCapabilities(session=SessionCapabilities(prompt=prompt, mcp=mcp, delete=delete))
        if isinstance(self.sessions.store, MemoryStore):
            capabilities.meta = {SESSIONS_END_WITH_PROCESS[0]: {SESSIONS_END_WITH_PROCESS[1]: True}}
        return capabilities

    async def initialize(self, req: InitializeRequest, cx: Connection) -> InitializeResponse:
        """Remember what the client can do; answer v2 (``-32022`` for a version below 2)."""
        version = select_version(req.protocol_version, (2,))
        client = self._client(cx)
        client.capabilities = req.capabilities
        methods: list[AuthMethodAgent | AuthMethodTerminal] = []
        if self.options.auth:
            methods.append(
                AuthMethodAgent(
                    method_id=AUTH_METHOD_ID,
                    name="Log in to testy",
                    description="testy's test login: auth/login with this method always succeeds",
                )
            )
        if self.options.terminal_auth is not None and client.terminal_auth:
            methods.append(
                AuthMethodTerminal(
                    method_id=TERMINAL_AUTH_METHOD_ID,
                    name="Log in to testy in a terminal",
                    description="testy asks for your name in the terminal (an empty answer fails)",
                    args=list(TERMINAL_LOGIN_ARGS),
                    env=[EnvVariable(name=k, value=v) for k, v in TERMINAL_LOGIN_ENV.items()],
                )
            )
        return InitializeResponse(
            protocol_version=version,
            info=Implementation(name="acpio-testy", title="acpio testy", version=__version__),
            capabilities=self.capabilities(),
            **({"auth_methods": methods} if methods else {}),
        )

    async def login(self, req: LoginAuthRequest, cx: Connection) -> LoginAuthResponse:
        """``auth/login`` with ``testy-login``."""
        check_login_method(req.method_id, offered=self.options.auth)
        self._client(cx).authenticated = True
        return LoginAuthResponse()

    async def logout(self, req: LogoutAuthRequest, cx: Connection) -> LogoutAuthResponse:
        """``auth/logout``: new sessions need a login again; existing ones go on."""
        self._client(cx).authenticated = False
        forget_terminal_login(self.options.terminal_auth)
        return LogoutAuthResponse()

    def _require_auth(self, cx: Connection, method: str) -> None:
        client = self._client(cx)
        if not self.options.requires_auth or client.authenticated:
            return
        if self.options.terminal_auth is not None and logged_in(self.options.terminal_auth) is not None:
            return
        offered = [AUTH_METHOD_ID] if self.options.auth else []
        if self.options.terminal_auth is not None and client.terminal_auth:
            offered.append(TERMINAL_AUTH_METHOD_ID)
        raise AuthRequired(
            {"authMethods": offered},
            message=f"Authentication required: call auth/login with one of {offered} before {method}"
            if offered
            else f"Authentication required before {method}: testy offers only a terminal login, to clients "
            "that advertise capabilities.auth.terminal",
        )

    # --- sessions ---------------------------------------------------------------------------------

    def _check_setup(self, method: str, cwd: str, servers: list[Any] | None, directories: Any) -> list[Any]:
        """The MCP servers as JSON; refuses a relative cwd, unadvertised kinds, additional directories."""
        if not os.path.isabs(cwd):
            raise InvalidParams({"cwd": cwd}, message=f"{method}: cwd must be an absolute path, not {cwd!r}")
        wire = [server.to_wire() for server in servers or ()]
        for server in wire:
            kind = server.get("type")
            if kind == "stdio" or (kind == "http" and self.options.mcp_http):
                continue
            raise InvalidParams(
                {"mcpServer": server.get("name")},
                message=f"{method}: testy does not accept {kind} MCP servers (it does not advertise "
                f"capabilities.session.mcp.{kind})",
            )
        if directories:
            raise InvalidParams(
                {"additionalDirectories": directories},
                message=f"{method}: testy does not advertise "
                "capabilities.session.additionalDirectories; "
                "send the request without additionalDirectories",
            )
        return wire

    async def new_session(self, req: NewSessionRequest, cx: Connection) -> NewSessionResponse:
        """A new session ``testy-N`` in ``cwd``."""
        self._require_auth(cx, "session/new")
        servers = self._check_setup("session/new", req.cwd, req.mcp_servers, req.additional_directories)
        session = await self.sessions.create(req.cwd, servers)
        session.booleans = True  # boolean config options are baseline in v2
        return NewSessionResponse(session_id=session.session_id, config_options=config_options(session))

    async def resume_session(self, req: ResumeSessionRequest, cx: Connection) -> ResumeSessionResponse:
        """Make the session active again; with ``replayFrom`` ``start``, replay its history first."""
        self._require_auth(cx, "session/resume")
        servers = self._check_setup("session/resume", req.cwd, req.mcp_servers, req.additional_directories)
        session = await self.sessions.get(req.session_id)
        if session.turn is not None:
            raise InvalidRequest(
                {"sessionId": req.session_id},
                message=f"session/resume: session {req.session_id!r} is running a prompt turn; "
                "cancel it first",
            )
        replay = req.replay_from is not None
        if req.replay_from is not None and getattr(req.replay_from, "type", None) != "start":
            raise InvalidParams(
                {"replayFrom": req.replay_from.to_wire()},
                message='session/resume: testy replays only from the start (replayFrom {"type": "start"})',
            )
        await self.sessions.reopen(session, req.cwd, servers)
        session.booleans = True
        if replay:
            for update in history_updates(session):
                cx.send_notification(UpdateSessionNotification(session_id=session.session_id, update=update))
        return ResumeSessionResponse(config_options=config_options(session))

    async def list_sessions(self, req: ListSessionsRequest) -> ListSessionsResponse:
        """Every stored session (or those in ``cwd``), newest first, in one page."""
        if req.cursor is not None:
            raise InvalidParams(
                {"cursor": req.cursor},
                message="Invalid cursor: testy lists every session in one page and never gives out a cursor; "
                "call session/list without one",
            )
        listed = await self.sessions.listed(req.cwd)
        return ListSessionsResponse(sessions=[SessionInfo.model_validate(info.to_wire()) for info in listed])

    async def close_session(
        self, req: CloseSessionRequest, responder: Responder[CloseSessionResponse], cx: Connection
    ) -> None:
        """Close the session; its running turn is cancelled and ends first."""
        session = await self.sessions.get(req.session_id)
        await self.sessions.close(session)
        _answer_after_turn(session, responder, cx, CloseSessionResponse())

    async def delete_session(
        self, req: DeleteSessionRequest, responder: Responder[DeleteSessionResponse], cx: Connection
    ) -> None:
        """Forget the session (an unknown id succeeds); its running turn is cancelled first."""
        session = self.sessions.find(req.session_id)
        await self.sessions.delete(req.session_id)
        if session is None:
            responder.respond(DeleteSessionResponse())
            return
        session.active = False
        _answer_after_turn(session, responder, cx, DeleteSessionResponse())

    async def set_config_option(self, req: SetSessionConfigOptionRequest) -> SetSessionConfigOptionResponse:
        """Set ``verbosity`` or ``shout``; answers with every option."""
        session = await self.sessions.get_active(req.session_id, "session/set_config_option")
        value = req.to_wire().get("value")
        session.set_config_option(req.config_id, value)
        return SetSessionConfigOptionResponse(config_options=config_options(session))

    # --- the prompt turn --------------------------------------------------------------------------

    def _check_prompt(self, blocks: list[ContentBlock]) -> None:
        refused = [
            (ImageContent, self.options.prompt_image, "image"),
            (AudioContent, self.options.prompt_audio, "audio"),
            (EmbeddedResource, self.options.prompt_embedded_context, "embeddedContext"),
        ]
        for block in blocks:
            for kind, allowed, name in refused:
                if isinstance(block, kind) and not allowed:
                    raise InvalidParams(
                        {"capability": f"session.prompt.{name}"},
                        message=f"testy does not advertise capabilities.session.prompt.{name}, so a "
                        f"prompt may not carry {name} content",
                    )

    async def prompt(self, req: PromptRequest, responder: Responder[PromptResponse], cx: Connection) -> None:
        """Accept the prompt (``{messageId}``), send it back as ``user_message``, start the turn."""
        session = await self.sessions.get_active(req.session_id, "session/prompt")
        self._check_prompt(req.prompt)
        if session.turn is not None:
            raise InvalidRequest(
                {"sessionId": req.session_id},
                message=f"Session {req.session_id!r} is already running a prompt turn: wait for its idle "
                "state_update or send session/cancel",
            )
        text = "\n".join(block.text for block in req.prompt if isinstance(block, TextContent))
        script = parse_prompt(text, version=2)
        refusal = check_fail(script)
        if refusal is not None:
            raise refusal  # before the prompt is inserted: an error answer, no turn
        message_id = session.new_message_id("user")
        session.remember_user(v1_blocks(req.prompt), message_id)
        turn = TurnV2(session, cx, message_id)
        session.turn = turn
        responder.respond(PromptResponse(message_id=message_id))
        turn.send(UserMessage(message_id=message_id, content=list(req.prompt)))
        turn.running()
        cx.spawn(self._run_turn, turn, text, script)

    async def _run_turn(self, turn: TurnV2, text: str, script: Any) -> None:
        """Run the turn and end it with an idle ``state_update``; nothing makes this raise."""
        try:
            stop_reason = await run_prompt(turn, text, script)
        except TurnCancelled:
            stop_reason = "cancelled"
        except ConnectionClosed:
            _log.debug("The connection closed during a prompt turn in session %s", turn.session.session_id)
            stop_reason = ""
        except Exception:
            _log.exception("testy failed running a prompt in session %s", turn.session.session_id)
            stop_reason = "error"
        finally:
            if turn.session.turn is turn:
                turn.session.turn = None
        if stop_reason:
            with contextlib.suppress(ConnectionClosed):
                turn.idle("cancelled" if turn.cancelled else stop_reason)
        turn.finish()

    async def cancel(self, note: CancelSessionNotification) -> None:
        """Stop the session's running turn (nothing to do when none runs)."""
        session = self.sessions.find(note.session_id)
        if session is not None and session.turn is not None:
            session.turn.cancel()

    async def cancel_tool_call(self, req: CancelToolCallRequest) -> CancelToolCallResponse:
        """``tool_call/cancel``: the tool call ends ``cancelled`` (a ``tool_call_update`` confirms it)."""
        _running_turn(self.sessions.find(req.session_id), req.session_id).cancel_tool_call(req.tool_call_id)
        return CancelToolCallResponse()

    async def cancel_terminal(self, req: CancelTerminalRequest) -> CancelTerminalResponse:
        """``terminal/cancel``: the command is killed (a ``terminal_update`` with ``exitStatus`` says so)."""
        turn = _running_turn(self.sessions.find(req.session_id), req.session_id)
        terminal = turn.terminals.get(req.terminal_id)
        if terminal is None or terminal.exited:
            raise InvalidParams(
                {"terminalId": req.terminal_id},
                message=f"terminal/cancel: {req.terminal_id!r} is not a running terminal of session "
                f"{req.session_id!r} (unknown or already exited)",
            )
        terminal.cancel()
        return CancelTerminalResponse()


def _running_turn(session: TestySession | None, session_id: str) -> TurnV2:
    """The v2 turn running in ``session``; ``-32602`` when there is none (nothing to cancel)."""
    turn = session.turn if session is not None else None
    if not isinstance(turn, TurnV2):
        raise InvalidParams(
            {"sessionId": session_id},
            message=f"Session {session_id!r} runs no prompt turn, so it has nothing to cancel",
        )
    return turn


def _answer_after_turn(
    session: TestySession, responder: Responder[Any], cx: Connection, result: object
) -> None:
    """Answer ``result`` now if no turn runs; else cancel the turn and answer once it has ended."""
    turn = session.turn
    if turn is None:
        responder.respond(result)
        return

    async def answer_when_done() -> None:
        await turn.wait_finished()
        responder.respond(result)

    turn.cancel()
    cx.spawn(answer_when_done)


def testy_agent_v2(options: TestyOptions, sessions: TestySessions) -> Builder:
    """The v2 testy as an Agent builder, on ``sessions`` (shared with the v1 builder when both are served)."""
    testy = TestyAgentV2(options, sessions)
    app = Agent.builder(name="testy")
    app.on_request(testy.initialize)
    app.on_request(testy.login)
    if options.requires_auth:
        app.on_request(testy.logout)
    app.on_request(testy.new_session)
    app.on_request(testy.resume_session)
    app.on_request(testy.list_sessions)
    app.on_request(testy.close_session)
    if options.session_delete:
        app.on_request(testy.delete_session)
    app.on_request(testy.set_config_option)
    app.on_request(testy.prompt)
    app.on_notification(testy.cancel)
    app.on_request(testy.cancel_tool_call)
    app.on_request(testy.cancel_terminal)
    return app


testy_agent_v2.__test__ = False  # type: ignore[attr-defined]  # a name pytest would otherwise collect
