"""testy as an acpio Agent builder: one handler per ACP method, on sessions kept in a session store.

``testy_agent(options)`` returns an :class:`~acpio.jsonrpc.Builder` for the :class:`~acpio.Agent`
role; serve it with ``await testy_agent().serve(Stdio())`` (what ``acpio testy`` does) or
connect a client to it in-process. Each call makes a separate agent with its own sessions, in
memory unless a store is given (``testy_agent(options, store=open_store("sqlite:///..."))``, what
``acpio testy --store URL`` does).

How the handlers are written (the pattern to copy for an agent of your own):

* Quick requests simply ``return`` their result from the handler, which runs inside the
  connection's dispatch loop; errors are raised as :class:`~acpio.RequestError` subclasses.
* ``session/prompt`` must not block that loop: the turn awaits the client's answers (files,
  terminals, permission), which only the loop can read. So the handler checks the request, starts
  the turn with ``cx.spawn(...)`` and returns ``None``; the turn answers through the
  :class:`~acpio.jsonrpc.Responder` when it ends.
* ``session/cancel`` is a notification handled in the loop: it only flags the running turn, which
  stops at once (see :mod:`acpio.agents.testy.turn`) and answers ``cancelled``.
* Methods whose capability is turned off are simply not registered: the engine answers them with
  ``-32601 Method not found``.
"""

from __future__ import annotations

import logging
import os
import weakref
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from acpio import __version__
from acpio.acp_connection import AcpConnection
from acpio.agents.testy.commands import run_prompt
from acpio.agents.testy.login import AUTH_METHOD_ID, check_login_method, forget_terminal_login, logged_in
from acpio.agents.testy.sessions import TestySession, TestySessions
from acpio.agents.testy.turn import TestyTurn, TurnCancelled
from acpio.capabilities import ClientFeatures
from acpio.errors import (
    AuthRequired,
    ConnectionClosed,
    InternalError,
    InvalidParams,
    InvalidRequest,
    RequestError,
)
from acpio.jsonrpc import Builder, Connection, Responder
from acpio.roles import Agent
from acpio.schema import (
    AgentAuthCapabilities,
    AgentCapabilities,
    AudioContent,
    AuthenticateRequest,
    AuthenticateResponse,
    AuthMethodAgent,
    AuthMethodTerminal,
    CancelNotification,
    CloseSessionRequest,
    CloseSessionResponse,
    ContentBlock,
    DeleteSessionRequest,
    DeleteSessionResponse,
    EmbeddedResource,
    ImageContent,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    LogoutCapabilities,
    LogoutRequest,
    LogoutResponse,
    McpCapabilities,
    McpServerAcp,
    McpServerHttp,
    McpServerStdio,
    NewSessionRequest,
    NewSessionResponse,
    PromptCapabilities,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SessionCapabilities,
    SessionCloseCapabilities,
    SessionDeleteCapabilities,
    SessionListCapabilities,
    SessionResumeCapabilities,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    SetSessionModeRequest,
    SetSessionModeResponse,
    StopReason,
    TextContent,
)
from acpio.store import MemoryStore, SessionStore
from acpio.versions import select_version

__all__ = [
    "AUTH_METHOD_ID",
    "TERMINAL_AUTH_METHOD_ID",
    "TERMINAL_LOGIN_ARGS",
    "TERMINAL_LOGIN_ENV",
    "TestyAgent",
    "TestyOptions",
    "prompt_text",
    "testy_agent",
    "testy_builder",
]

_log = logging.getLogger("acpio.testy")

R = TypeVar("R")

#: Where testy says its sessions end with its process (a store in memory):
#: ``agentCapabilities._meta["acpio"]["sessionsEndWithProcess"]``.
SESSIONS_END_WITH_PROCESS: Final = ("acpio", "sessionsEndWithProcess")

#: The id of the terminal auth method testy advertises with ``--terminal-auth FILE``.
TERMINAL_AUTH_METHOD_ID: Final = "testy-terminal-login"
#: What the terminal auth method appends to testy's command line, and the environment it sets.
TERMINAL_LOGIN_ARGS: Final = ("--login",)
TERMINAL_LOGIN_ENV: Final = {"ACPIO_TESTY_LOGIN": "1"}


@dataclass(frozen=True, slots=True)
class TestyOptions:
    """What testy advertises at ``initialize`` (the ``acpio testy`` flags).

    Everything is on by default except ``auth``. A capability turned off is not advertised, and
    its methods or content are refused: ``-32601`` for a method, ``-32602`` for a prompt block or
    an MCP server of a kind that is off. With ``auth``, testy advertises the agent auth method
    ``testy-login`` (and ``auth.logout``) and answers ``session/new``, ``session/load`` and
    ``session/resume`` with ``-32000 Authentication required`` until ``authenticate`` succeeds.
    """

    __test__ = False  # not a pytest test class, despite the name

    #: ``loadSession``: ``session/load`` replays a session's history.
    load_session: bool = True
    #: ``sessionCapabilities.list``: ``session/list``.
    session_list: bool = True
    #: ``sessionCapabilities.resume``: ``session/resume``.
    session_resume: bool = True
    #: ``sessionCapabilities.close``: ``session/close``.
    session_close: bool = True
    #: ``sessionCapabilities.delete``: ``session/delete``.
    session_delete: bool = True
    #: ``promptCapabilities.image``: prompts may carry images.
    prompt_image: bool = True
    #: ``promptCapabilities.audio``: prompts may carry audio.
    prompt_audio: bool = True
    #: ``promptCapabilities.embeddedContext``: prompts may carry embedded resources.
    prompt_embedded_context: bool = True
    #: ``mcpCapabilities.http``: sessions may be given HTTP MCP servers.
    mcp_http: bool = True
    #: ``mcpCapabilities.acp`` (unstable, so off unless asked): sessions may be given servers the
    #: client or a proxy serves over ``mcp/message``, which the ``mcp`` command calls.
    mcp_acp: bool = False
    #: Advertise an auth method and require ``authenticate`` before sessions are set up.
    auth: bool = False
    #: A file that holds testy's login: with it, testy advertises the terminal auth method
    #: ``testy-terminal-login`` (to clients that advertise ``auth.terminal``) and sets sessions up
    #: only once that file says someone logged in (``acpio testy --terminal-auth FILE --login``
    #: writes it; ``logout`` removes it).
    terminal_auth: str | None = None

    @property
    def requires_auth(self) -> bool:
        """Whether sessions are set up only after a login."""
        return self.auth or self.terminal_auth is not None

    def agent_capabilities(self) -> AgentCapabilities:
        """The ``agentCapabilities`` of the ``initialize`` answer."""
        session: dict[str, Any] = {}
        if self.session_list:
            session["list"] = SessionListCapabilities()
        if self.session_resume:
            session["resume"] = SessionResumeCapabilities()
        if self.session_close:
            session["close"] = SessionCloseCapabilities()
        if self.session_delete:
            session["delete"] = SessionDeleteCapabilities()
        extra: dict[str, Any] = {}
        if self.requires_auth:
            extra["auth"] = AgentAuthCapabilities(logout=LogoutCapabilities())
        return AgentCapabilities(
            load_session=self.load_session,
            prompt_capabilities=PromptCapabilities(
                image=self.prompt_image,
                audio=self.prompt_audio,
                embedded_context=self.prompt_embedded_context,
            ),
            mcp_capabilities=McpCapabilities(
                http=self.mcp_http, sse=False, **({"acp": True} if self.mcp_acp else {})
            ),
            session_capabilities=SessionCapabilities(**session),
            **extra,
        )


def prompt_text(blocks: list[ContentBlock]) -> str:
    """The text of a prompt: its text blocks joined with newlines (other blocks are left out)."""
    return "\n".join(block.text for block in blocks if isinstance(block, TextContent))


@dataclass(slots=True)
class _ClientState:
    """What testy knows of one connected client (what it advertised, its connection records)."""

    authenticated: bool = False


class TestyAgent:
    """The state of one testy agent and its handlers; :func:`testy_agent` registers them."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, options: TestyOptions, store: SessionStore | None = None) -> None:
        self.options = options
        self.sessions = TestySessions(store)
        self._clients: weakref.WeakKeyDictionary[Connection, _ClientState] = weakref.WeakKeyDictionary()

    def _client(self, cx: Connection) -> _ClientState:
        state = self._clients.get(cx)
        if state is None:
            state = self._clients[cx] = _ClientState()
        return state

    @staticmethod
    def _features(cx: Connection) -> ClientFeatures:
        """What the client advertised at ``initialize``, as its connection recorded it (nothing before)."""
        recorded = cx.client_features if isinstance(cx, AcpConnection) else None
        return recorded or ClientFeatures({})

    # --- initialization and authentication --------------------------------------------------------

    async def initialize(self, req: InitializeRequest, cx: Connection) -> InitializeResponse:
        """Remember what the client can do; say what testy can do.

        With a store in memory, ``agentCapabilities._meta.acpio.sessionsEndWithProcess`` is ``true``:
        its sessions can be loaded only while this process runs (``acpio prompt`` then offers no
        ``--session`` hint).
        """
        auth_methods: list[Any] = []
        if self.options.auth:
            auth_methods.append(
                AuthMethodAgent(
                    id=AUTH_METHOD_ID,
                    name="Log in to testy",
                    description="testy's test login: authenticate with this method always succeeds",
                )
            )
        if self.options.terminal_auth is not None and self._features(cx).terminal_auth:
            auth_methods.append(
                AuthMethodTerminal(
                    id=TERMINAL_AUTH_METHOD_ID,
                    name="Log in to testy in a terminal",
                    description="testy asks for your name in the terminal (an empty answer fails)",
                    args=list(TERMINAL_LOGIN_ARGS),
                    env=dict(TERMINAL_LOGIN_ENV),
                )
            )
        capabilities = self.options.agent_capabilities()
        if isinstance(self.sessions.store, MemoryStore):
            capabilities.meta = {SESSIONS_END_WITH_PROCESS[0]: {SESSIONS_END_WITH_PROCESS[1]: True}}
        return InitializeResponse(
            protocol_version=select_version(req.protocol_version, (1,)),
            agent_capabilities=capabilities,
            auth_methods=auth_methods,
            agent_info=Implementation(name="acpio-testy", title="acpio testy", version=__version__),
        )

    async def authenticate(self, req: AuthenticateRequest, cx: Connection) -> AuthenticateResponse:
        """Log in with ``testy-login`` (only when started with ``auth``)."""
        check_login_method(req.method_id, offered=self.options.auth)
        self._client(cx).authenticated = True
        return AuthenticateResponse()

    async def logout(self, req: LogoutRequest, cx: Connection) -> LogoutResponse:
        """Log out: new sessions need a login again (the terminal login's file goes); existing ones go on."""
        self._client(cx).authenticated = False
        forget_terminal_login(self.options.terminal_auth)
        return LogoutResponse()

    def _require_auth(self, cx: Connection, method: str) -> None:
        client = self._client(cx)
        if not self.options.requires_auth or client.authenticated:
            return
        if self.options.terminal_auth is not None and logged_in(self.options.terminal_auth) is not None:
            return
        offered: list[str] = []
        hints: list[str] = []
        if self.options.auth:
            offered.append(AUTH_METHOD_ID)
            hints.append(f"call authenticate with methodId {AUTH_METHOD_ID!r}")
        if self.options.terminal_auth is not None and self._features(cx).terminal_auth:
            offered.append(TERMINAL_AUTH_METHOD_ID)
            hints.append(f"run the terminal login {TERMINAL_AUTH_METHOD_ID!r}")
        if not hints:
            hints.append(
                "testy offers only a terminal login, to clients that advertise "
                "clientCapabilities.auth.terminal"
            )
        raise AuthRequired(
            {"authMethods": offered},
            message=f"Authentication required: {', or '.join(hints)} before {method}",
        )

    # --- session setup ----------------------------------------------------------------------------

    def _check_setup(self, method: str, cwd: str, mcp_servers: list[Any] | None, directories: Any) -> None:
        """Refuse what a session-setup request may not carry: a relative cwd, unadvertised MCP kinds."""
        if not os.path.isabs(cwd):
            raise InvalidParams({"cwd": cwd}, message=f"{method}: cwd must be an absolute path, not {cwd!r}")
        for server in mcp_servers or ():
            if (
                isinstance(server, McpServerStdio)
                or (isinstance(server, McpServerHttp) and self.options.mcp_http)
                or (isinstance(server, McpServerAcp) and self.options.mcp_acp)
            ):
                continue
            kind = getattr(server, "type", "unknown")
            raise InvalidParams(
                {"mcpServer": getattr(server, "name", None)},
                message=f"{method}: testy does not accept {kind} MCP servers (it does not advertise "
                f"mcpCapabilities.{kind})",
            )
        if directories:
            raise InvalidParams(
                {"additionalDirectories": directories},
                message=f"{method}: testy does not advertise sessionCapabilities.additionalDirectories; "
                "send the request without additionalDirectories",
            )

    async def new_session(self, req: NewSessionRequest, cx: Connection) -> NewSessionResponse:
        """A new session ``testy-N`` in ``cwd``, in mode ``chat``, verbosity ``normal``."""
        self._require_auth(cx, "session/new")
        self._check_setup("session/new", req.cwd, req.mcp_servers, req.additional_directories)
        session = await self.sessions.create(req.cwd, _wire(req.mcp_servers))
        session.booleans = self._features(cx).boolean_config_options
        return NewSessionResponse(
            session_id=session.session_id, modes=session.modes(), config_options=session.config_options()
        )

    async def _reopen(
        self, method: str, session_id: str, cwd: str, mcp_servers: list[Any] | None, cx: Connection
    ) -> TestySession:
        session = await self.sessions.get(session_id)
        if session.turn is not None:
            raise InvalidRequest(
                {"sessionId": session_id},
                message=f"{method}: session {session_id!r} is running a prompt turn; cancel it first",
            )
        await self.sessions.reopen(session, cwd, _wire(mcp_servers or []))
        session.booleans = self._features(cx).boolean_config_options
        return session

    async def load_session(self, req: LoadSessionRequest, cx: Connection) -> LoadSessionResponse:
        """Replay the session's history (user and agent message chunks), then answer."""
        self._require_auth(cx, "session/load")
        self._check_setup("session/load", req.cwd, req.mcp_servers, req.additional_directories)
        session = await self._reopen("session/load", req.session_id, req.cwd, req.mcp_servers, cx)
        for notification in session.replay():
            cx.send_notification(notification)
        return LoadSessionResponse(modes=session.modes(), config_options=session.config_options())

    async def resume_session(self, req: ResumeSessionRequest, cx: Connection) -> ResumeSessionResponse:
        """Make the session active again, without replaying anything."""
        self._require_auth(cx, "session/resume")
        self._check_setup("session/resume", req.cwd, req.mcp_servers, req.additional_directories)
        session = await self._reopen("session/resume", req.session_id, req.cwd, req.mcp_servers, cx)
        return ResumeSessionResponse(modes=session.modes(), config_options=session.config_options())

    async def list_sessions(self, req: ListSessionsRequest) -> ListSessionsResponse:
        """Every stored session (open or closed), or those in ``cwd``, newest first; all in one page."""
        if req.cursor is not None:
            raise InvalidParams(
                {"cursor": req.cursor},
                message="Invalid cursor: testy lists every session in one page and never gives out a "
                "cursor; call session/list without one",
            )
        return ListSessionsResponse(sessions=await self.sessions.listed(req.cwd))

    async def close_session(
        self, req: CloseSessionRequest, responder: Responder[CloseSessionResponse], cx: Connection
    ) -> None:
        """Close the session: its running turn is cancelled and answered first; it stays listed."""
        session = await self.sessions.get(req.session_id)
        await self.sessions.close(session)
        self._answer_after_turn(session, responder, cx, CloseSessionResponse())

    async def delete_session(
        self, req: DeleteSessionRequest, responder: Responder[DeleteSessionResponse], cx: Connection
    ) -> None:
        """Forget the session (an unknown id succeeds, as the spec asks); cancel its running turn first."""
        session = self.sessions.find(req.session_id)
        await self.sessions.delete(req.session_id)
        if session is None:
            responder.respond(DeleteSessionResponse())
            return
        session.active = False
        self._answer_after_turn(session, responder, cx, DeleteSessionResponse())

    def _answer_after_turn(
        self, session: TestySession, responder: Responder[R], cx: Connection, result: R
    ) -> None:
        """Answer ``result`` now if no turn runs; else cancel the turn and answer once it has answered."""
        turn = session.turn
        if turn is None:
            responder.respond(result)
            return

        async def answer_when_done() -> None:
            await turn.wait_finished()
            responder.respond(result)

        turn.cancel()
        cx.spawn(answer_when_done)

    # --- session settings -------------------------------------------------------------------------

    async def set_mode(self, req: SetSessionModeRequest) -> SetSessionModeResponse:
        """Switch the session to mode ``chat`` or ``plan``."""
        (await self.sessions.get_active(req.session_id, "session/set_mode")).set_mode(req.mode_id)
        return SetSessionModeResponse()

    async def set_config_option(self, req: SetSessionConfigOptionRequest) -> SetSessionConfigOptionResponse:
        """Set ``verbosity`` (select) or ``shout`` (boolean); answers with every option and its value."""
        session = await self.sessions.get_active(req.session_id, "session/set_config_option")
        if req.type not in (None, "select", "boolean"):
            raise InvalidParams(
                {"type": req.type},
                message=f"testy's config options are select and boolean options; {req.type!r} values are "
                "not accepted",
            )
        session.set_config_option(req.config_id, req.value)
        return SetSessionConfigOptionResponse(config_options=session.config_options())

    # --- the prompt turn --------------------------------------------------------------------------

    def _check_prompt(self, blocks: list[ContentBlock]) -> None:
        """Refuse prompt content testy did not advertise."""
        refused = [
            (ImageContent, self.options.prompt_image, "image", "image"),
            (AudioContent, self.options.prompt_audio, "audio", "audio"),
            (EmbeddedResource, self.options.prompt_embedded_context, "embedded resource", "embeddedContext"),
        ]
        for block in blocks:
            for kind, allowed, name, capability in refused:
                if isinstance(block, kind) and not allowed:
                    raise InvalidParams(
                        {"capability": f"promptCapabilities.{capability}"},
                        message=f"testy does not advertise promptCapabilities.{capability}, so a prompt may "
                        f"not carry {name} content",
                    )

    async def prompt(self, req: PromptRequest, responder: Responder[PromptResponse], cx: Connection) -> None:
        """Start the turn in a task and return; the turn answers when it ends."""
        session = await self.sessions.get_active(req.session_id, "session/prompt")
        self._check_prompt(req.prompt)
        if session.turn is not None:
            raise InvalidRequest(
                {"sessionId": req.session_id},
                message=f"Session {req.session_id!r} is already running a prompt turn: wait for its answer "
                "or send session/cancel",
            )
        turn = session.turn = TestyTurn(session, cx, self._features(cx))
        session.remember_user(req.prompt)
        cx.spawn(self._run_turn, turn, prompt_text(req.prompt), responder)

    async def _run_turn(self, turn: TestyTurn, text: str, responder: Responder[PromptResponse]) -> None:
        """Run the prompt and answer it; nothing a script or a client does makes this raise."""
        watcher = turn.cx.spawn(self._cancel_on_request_cancel, turn, responder)
        try:
            outcome: StopReason | RequestError = await run_prompt(turn, text)
        except TurnCancelled:
            outcome = StopReason.CANCELLED
        except ConnectionClosed:
            _log.debug("The connection closed during a prompt turn in session %s", turn.session.session_id)
            turn.finish()
            return
        except Exception:
            _log.exception("testy failed running a prompt in session %s", turn.session.session_id)
            outcome = InternalError(message="testy failed running this prompt; its stderr has the details")
        finally:
            watcher.cancel()
            if turn.session.turn is turn:
                turn.session.turn = None
        if turn.cancelled:
            outcome = StopReason.CANCELLED  # a cancel that came before the answer wins
        if isinstance(outcome, RequestError):
            responder.respond_with_error(outcome)
        else:
            responder.respond(PromptResponse(stop_reason=outcome))
        turn.finish()

    async def _cancel_on_request_cancel(self, turn: TestyTurn, responder: Responder[PromptResponse]) -> None:
        """``$/cancel_request`` for the prompt itself cancels the turn like ``session/cancel``."""
        await responder.wait_cancelled()
        turn.cancel()

    async def cancel(self, note: CancelNotification) -> None:
        """Stop the session's running turn (nothing to do when none runs)."""
        session = self.sessions.find(note.session_id)
        if session is not None and session.turn is not None:
            session.turn.cancel()
        else:
            _log.debug("session/cancel for %s: no prompt turn is running", note.session_id)


def testy_agent(
    options: TestyOptions | None = None,  # noqa: PT028 - not a test
    store: SessionStore | None = None,  # noqa: PT028
) -> Builder:
    """A new testy agent (ACP v1) as an Agent builder (see the module docstring); ``options``: all on.

    Its sessions are kept in ``store`` (default: a new :class:`~acpio.store.MemoryStore`). For v2, or
    both versions on one endpoint, see :func:`~acpio.agents.testy.serve.testy_component`.
    """
    return testy_builder(TestyAgent(options if options is not None else TestyOptions(), store))


def testy_builder(testy: TestyAgent) -> Builder:
    """The v1 Agent builder of ``testy``'s handlers."""
    opts = testy.options
    # mcp/message is unstable: the mcp command sends it only when acp servers are advertised
    app = Agent.builder(name="testy", unstable=opts.mcp_acp)
    app.on_request(testy.initialize)
    app.on_request(testy.authenticate)
    if opts.requires_auth:
        app.on_request(testy.logout)
    app.on_request(testy.new_session)
    if opts.load_session:
        app.on_request(testy.load_session)
    if opts.session_list:
        app.on_request(testy.list_sessions)
    if opts.session_resume:
        app.on_request(testy.resume_session)
    if opts.session_close:
        app.on_request(testy.close_session)
    if opts.session_delete:
        app.on_request(testy.delete_session)
    app.on_request(testy.set_mode)
    app.on_request(testy.set_config_option)
    app.on_request(testy.prompt)
    app.on_notification(testy.cancel)
    return app


def _wire(servers: list[Any]) -> list[dict[str, Any]]:
    """MCP server declarations as the client sent them (JSON objects), for the store."""
    return [server.to_wire() for server in servers]


testy_agent.__test__ = False  # type: ignore[attr-defined]  # a name pytest would otherwise collect
