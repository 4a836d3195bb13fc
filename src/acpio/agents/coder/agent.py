"""The reference coding agent: an :class:`~acpio.app.AgentApp` with models, modes, tools, auth and MCP.

:func:`coder_app` builds it; ``acpio agent`` serves it on stdio. Sessions live in a store (SQLite
under the user's data directory by default), so an editor can list, load and resume them after
the agent restarted.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from acpio.agents.coder.catalogue import Catalogue, build_catalogue
from acpio.agents.coder.commands import compact, run_command
from acpio.agents.coder.conversation import conversation, user_message
from acpio.agents.coder.model import (
    REASONING_EFFORTS,
    ModelInfo,
    ModelRequest,
)
from acpio.agents.coder.replies import call_model, effort
from acpio.agents.coder.settings import CredentialFile, Settings, SettingsError, load_settings
from acpio.agents.coder.state import SessionState, model_choices
from acpio.agents.coder.tools import McpServers, ToolBox
from acpio.app import AgentApp, AppSession, StopReasonName, Turn
from acpio.errors import AuthRequired, InvalidParams
from acpio.jsonrpc import Connection
from acpio.schema import (
    AgentAuthCapabilities,
    AudioContent,
    AuthAccount,
    AuthenticateRequest,
    AuthenticateResponse,
    AuthMethodAgent,
    AuthMethodTerminal,
    AuthState,
    AuthStatusCapabilities,
    AuthStatusRequest,
    AuthStatusResponse,
    AuthStatusUpdateNotification,
    CurrentModeUpdate,
    ImageContent,
    InitializeRequest,
    InitializeResponse,
    LogoutCapabilities,
    LogoutRequest,
    LogoutResponse,
    McpCapabilities,
    PromptCapabilities,
    SessionMode,
    SessionNotification,
    SessionUpdate,
)
from acpio.store import SessionStore, open_store

__all__ = ["CoderOptions", "coder_app"]

_EFFORT_DEFAULT = "default"
#: The longest session title taken from a prompt (a longer first line is cut at a word).
_TITLE_LENGTH = 60
_SYSTEM = """You are acpio's reference coding agent, working in the project at {cwd}.
Use the tools to read and change the project's files and to run commands; paths are relative to
the project. Keep the user informed with short messages; show a plan for work of several steps.
Mode: {mode} ({description})."""


@dataclass
class CoderOptions:
    """How the agent is set up (the command line of ``acpio agent``)."""

    #: The session store, or its URL (default: SQLite in the user's data directory).
    store: SessionStore | str = "sqlite:"
    #: A settings file read after the user's and the project's (``--settings``).
    settings: Path | None = None
    #: The user's settings file (default: ``agent.toml`` in the user's config directory).
    user_settings: Path | None = None
    #: The credential file ``authenticate`` writes (default: in the user's config directory).
    credentials: Path | None = None
    #: The model of new sessions (``--model provider/id``), else the settings' or the first available.
    model: str | None = None
    #: The mode of new sessions (``--mode``), else the settings' or the first.
    mode: str | None = None
    #: Offer the scripted offline model (``--offline``).
    offline: bool = False
    #: The environment the API keys are read from (default: the process's).
    environ: Mapping[str, str] | None = None
    #: Turn on the unstable methods (``--unstable``): ``auth/status`` and ``auth/status_update``,
    #: ``session/fork``, ``archive``, ``unarchive``, ``status`` and ``set_title``.
    unstable: bool = False
    #: Seconds a turn waits for the session's MCP servers to connect; one still connecting then is
    #: reported, and its tools are left out until it is connected.
    mcp_connect_timeout: float = 30.0
    #: The ACP versions served (``--protocol``): ``(1,)``, ``(2,)`` or ``(1, 2)``. On v2 the agent
    #: reads and writes the files itself and runs commands as agent-owned terminals; it lists no
    #: auth methods there (keys come from the environment, the credential file or ``--login``).
    protocols: tuple[Literal[1, 2], ...] = (1,)


def _version() -> str:
    try:
        return version("acpio")
    except PackageNotFoundError:
        return "0.0.0"


def coder_app(options: CoderOptions | None = None) -> AgentApp:
    """The reference agent as an :class:`~acpio.app.AgentApp` (serve it, or ``app.builder()`` in tests)."""
    return _Coder(options or CoderOptions()).app


class _Coder:
    def __init__(self, options: CoderOptions) -> None:
        self.options = options
        self.environ = options.environ if options.environ is not None else os.environ
        self.credentials = CredentialFile(options.credentials)
        self.catalogues: dict[str, Catalogue] = {}
        self.states: dict[str, SessionState] = {}
        self.store = open_store(options.store) if isinstance(options.store, str) else options.store
        app = self.app = AgentApp(
            "acpio-agent",
            version=_version(),
            title="acpio reference agent",
            store=self.store,
            mcp=True,
            unstable=options.unstable,
            protocols=options.protocols,
        )
        app.command("help", "What this agent can do, its models and modes")
        app.command("model", "Show the models, or switch to one", hint="provider/model")
        app.command("mode", "Show the modes, or switch to one", hint="mode id")
        app.command("compact", "Summarise the conversation so far and go on from the summary")
        # placeholders: every session is offered its own choices when it opens (see opened)
        #: v1 clients also get the mode as a config option; on v2 the app's modes are that option.
        self.mode_option = 2 not in options.protocols
        if self.mode_option:
            app.select_option("mode", "Mode", {"ask": "Ask"}, default="ask", category="mode")
        app.select_option("model", "Model", {"none": "none"}, default="none", category="model")
        efforts = {_EFFORT_DEFAULT: "Model default"} | {e: e.capitalize() for e in REASONING_EFFORTS}
        app.select_option(
            "reasoning_effort", "Reasoning effort", efforts, default=_EFFORT_DEFAULT, category="thought_level"
        )
        app.mode("ask", "Ask")
        app.on_initialize(self.initialize)
        app.on_open(self.opened)
        app.on_close(self.closed)
        app.on_change(self.changed)
        app.on_request(self.authenticate)
        app.on_request(self.logout)
        if options.unstable:
            app.on_request(self.auth_status)
        #: The auth status last told each connection (``auth/status_update`` only when it changes).
        self.told: weakref.WeakKeyDictionary[Connection, AuthStatusResponse] = weakref.WeakKeyDictionary()
        app.prompt(self.prompt)

    # --- catalogue, settings ----------------------------------------------------------------------

    def settings_for(self, cwd: Path | None) -> Settings:
        try:
            return load_settings(cwd, self.options.settings, user=self.options.user_settings)
        except SettingsError as exc:
            raise InvalidParams(
                {"cwd": str(cwd)}, message=f"The agent's settings are unusable: {exc}"
            ) from exc

    async def catalogue_for(self, settings: Settings) -> Catalogue:
        key = repr((sorted(settings.providers.items()), settings.model))
        if key not in self.catalogues:
            self.catalogues[key] = await build_catalogue(
                settings, self.credentials, self.environ, offline=self.options.offline
            )
        return self.catalogues[key]

    async def forget_catalogues(self) -> None:
        old, self.catalogues = self.catalogues, {}
        for catalogue in old.values():
            await catalogue.aclose()

    # --- initialize and auth ------------------------------------------------------------------------

    async def initialize(self, request: InitializeRequest, answer: InitializeResponse) -> None:
        catalogue = await self.catalogue_for(self.settings_for(Path.cwd()))
        capabilities = answer.agent_capabilities
        assert capabilities is not None  # AgentApp always answers with capabilities
        capabilities.prompt_capabilities = PromptCapabilities(
            image=any(m.image for m in catalogue.models),
            audio=any(m.audio for m in catalogue.models),
            embedded_context=True,
        )
        capabilities.mcp_capabilities = McpCapabilities(http=True, sse=True, acp=True)
        capabilities.auth = AgentAuthCapabilities(logout=LogoutCapabilities())
        if self.options.unstable:
            capabilities.auth.status = AuthStatusCapabilities()
        terminal = bool(
            request.client_capabilities
            and request.client_capabilities.auth
            and request.client_capabilities.auth.terminal
        )
        methods: list[Any] = []
        for spec in catalogue.specs.values():
            if spec.key_env is None:
                continue
            present = bool(self.environ.get(spec.key_env) or self.credentials.get(spec.name))
            described = "authenticated" if present else f"set {spec.key_env}, or send the key as _meta.apiKey"
            methods.append(AuthMethodAgent(id=spec.name, name=f"{spec.title} API key", description=described))
            if terminal:
                methods.append(
                    AuthMethodTerminal(
                        id=f"{spec.name}-login",
                        name=f"Type the {spec.title} API key in a terminal",
                        args=["--login", spec.name],
                    )
                )
        answer.auth_methods = methods

    async def authenticate(self, request: AuthenticateRequest, cx: Connection) -> AuthenticateResponse:
        """``authenticate`` with a provider's method: keep the key given in ``_meta.apiKey``."""
        catalogue = await self.catalogue_for(self.settings_for(Path.cwd()))
        spec = catalogue.specs.get(request.method_id)
        if spec is None or spec.key_env is None:
            known = [s.name for s in catalogue.specs.values() if s.key_env]
            raise InvalidParams(
                {"methodId": request.method_id, "methods": known}, message="Unknown auth method"
            )
        key = (request.meta or {}).get("apiKey")
        if isinstance(key, str) and key:
            self.credentials.set(spec.name, key)
        elif not (self.environ.get(spec.key_env) or self.credentials.get(spec.name)):
            raise AuthRequired(
                {"methodId": spec.name},
                message=(
                    f"No {spec.title} key: set {spec.key_env}, send the key in _meta.apiKey, or type it in a "
                    f"terminal with the {spec.name}-login method (acpio agent --login {spec.name})"
                ),
            )
        await self.refresh()
        await self.tell_status(cx)
        return AuthenticateResponse()

    async def logout(self, request: LogoutRequest, cx: Connection) -> LogoutResponse:
        """``logout``: forget every stored key (keys in the environment stay)."""
        self.credentials.clear()
        await self.refresh()
        await self.tell_status(cx)
        return LogoutResponse()

    async def auth_status(self, request: AuthStatusRequest, cx: Connection) -> AuthStatusResponse:
        """``auth/status`` (unstable): authenticated when a provider has a key, the keys as accounts."""
        self.told[cx] = status = await self.status()
        return status

    async def status(self) -> AuthStatusResponse:
        catalogue = await self.catalogue_for(self.settings_for(Path.cwd()))
        accounts = [
            AuthAccount(label=f"{spec.title} API key", active=spec.name in catalogue.providers)
            for spec in catalogue.specs.values()
            if spec.key_env and (self.environ.get(spec.key_env) or self.credentials.get(spec.name))
        ]
        if accounts:
            state = AuthState.AUTHENTICATED
        else:
            state = AuthState.NOT_REQUIRED if catalogue.models else AuthState.UNAUTHENTICATED
        return AuthStatusResponse(state=state, **({"accounts": accounts} if accounts else {}))

    async def tell_status(self, cx: Connection) -> None:
        """Send ``auth/status_update`` (unstable) when the status differs from what ``cx`` was told."""
        if not self.options.unstable:
            return
        status = await self.status()
        if self.told.get(cx) != status:
            cx.send_notification(AuthStatusUpdateNotification(state=status.state, accounts=status.accounts))
            self.told[cx] = status

    async def refresh(self) -> None:
        """The keys changed: rebuild the catalogues and offer every open session its new models."""
        await self.forget_catalogues()
        for session in self.app.sessions:
            state = self.states.get(session.id)
            if state is None:
                continue
            state.catalogue = await self.catalogue_for(state.settings)
            session.offer_choices("model", model_choices(state))
            await self.app.refresh_options(session)

    # --- sessions -----------------------------------------------------------------------------------

    async def opened(self, session: AppSession) -> None:
        settings = self.settings_for(session.cwd)
        catalogue = await self.catalogue_for(settings)
        if not catalogue.models:
            raise AuthRequired(
                {"providers": sorted(catalogue.specs)}, message=catalogue.missing_model_message()
            )
        roots = [session.cwd, *session.additional_directories]
        state = SessionState(settings, catalogue, {m.id: m for m in settings.modes}, roots)
        fresh = session.method == "session/new"
        mode = (self.options.mode or settings.mode) if fresh else None
        if mode is not None and mode not in state.modes:
            raise InvalidParams({"mode": mode, "modes": list(state.modes)}, message=f"Unknown mode {mode!r}")
        modes = [SessionMode(id=m.id, name=m.name, description=m.description) for m in settings.modes]
        session.offer_modes(modes, mode)
        if self.mode_option:
            session.offer_choices("mode", {m.id: m.name for m in settings.modes}, session.settings.mode)
            session.settings.options["mode"] = str(session.settings.mode)
        choices = model_choices(state)
        session.offer_choices("model", choices)
        if fresh:
            model = self.options.model or state.modes[str(session.settings.mode)].model or settings.model
            if model is not None and model not in choices:
                raise InvalidParams(
                    {"model": model, "models": list(choices)},
                    message=f"The model {model!r} is not available; available: {', '.join(choices)}",
                )
            session.settings.options["model"] = model or next(iter(choices))
            if settings.reasoning_effort:
                session.settings.options["reasoning_effort"] = settings.reasoning_effort
        if session.mcp_servers:
            state.mcp = McpServers(
                session.cx, session.mcp_servers, session.cwd, connect_timeout=self.options.mcp_connect_timeout
            )
        self.states[session.id] = state

    async def closed(self, session: AppSession) -> None:
        state = self.states.pop(session.id, None)
        if state is not None and state.mcp is not None:
            await state.mcp.aclose()

    async def changed(self, session: AppSession, config_id: str | None) -> None:
        """Keep the mode option, the ACP mode and the mode's own model in step."""
        settings = session.settings
        if config_id == "mode":
            settings.mode = str(settings.options["mode"])
            session.cx.send_notification(
                _update(session.id, CurrentModeUpdate(current_mode_id=settings.mode))
            )
        elif config_id is None:
            if self.mode_option:
                settings.options["mode"] = str(settings.mode)
        else:
            return
        state = self.states.get(session.id)
        mode = state.modes.get(str(settings.mode)) if state else None
        if mode is not None and mode.model and mode.model in (settings.choices.get("model") or {}):
            settings.options["model"] = mode.model
        if config_id is None:
            await self.app.refresh_options(session)

    # --- a turn -------------------------------------------------------------------------------------

    async def prompt(self, turn: Turn) -> StopReasonName:
        state = self.states[turn.session_id]
        command = turn.command
        if command is not None and command.name != "compact":
            await run_command(turn, state, command.name, command.input)
            return "end_turn"
        if command is None:
            await self.name_session(turn, state)
        models = self.selected_models(turn, state)
        self.check_modalities(turn, models)
        mode = state.modes[str(turn.mode)]
        system = _SYSTEM.format(cwd=turn.cwd, mode=mode.name, description=mode.description or mode.id)
        if state.settings.instructions:
            system += "\n" + state.settings.instructions
        if mode.instructions:
            system += "\n" + mode.instructions
        messages = conversation(system, turn.history)
        if command is not None:
            return await compact(turn, models[0], state, messages)
        tools = ToolBox(turn, mode, state.roots, state.mcp)
        specs = await tools.specs()
        if state.mcp is not None and state.mcp.problems:
            await turn.think("\n".join(state.mcp.problems))
        messages.append(user_message(turn.prompt))
        chosen = turn.options.get("reasoning_effort")
        for number in range(state.settings.max_turn_requests):
            model = models[number % len(models)]
            reasoning = effort(chosen) if model.reasoning else None
            request = ModelRequest(model.id, list(messages), specs, reasoning)
            reply, finish = await call_model(turn, state, model, request)
            messages.append(reply)
            if finish != "tool_use" or not reply.tool_calls:
                return "end_turn" if finish == "tool_use" else finish
            for call in reply.tool_calls:
                messages.append(await tools.run(call))
        return "max_turn_requests"

    async def name_session(self, turn: Turn, state: SessionState) -> None:
        """Title an untitled session after its first prompt (a client's own title stays).

        The title is kept in the store, so ``session/list`` shows it, and told to the client
        (``session_info_update``), so the history replays it.
        """
        if state.titled:
            return
        title = _title(turn.text)
        if title is None:  # nothing to name it after yet (an image alone)
            return
        state.titled = True
        record = await self.store.get(turn.session_id)
        if record is None or record.title is not None:
            return
        await self.store.set_title(turn.session_id, title)
        await turn.set_title(title)

    def selected_models(self, turn: Turn, state: SessionState) -> list[ModelInfo]:
        value = str(turn.options.get("model", ""))
        models = [state.catalogue.find(part.strip()) for part in value.split(",")]
        found = [m for m in models if m is not None]
        if not found or len(found) != len(models):
            raise AuthRequired({"model": value}, message=state.catalogue.missing_model_message())
        return found

    def check_modalities(self, turn: Turn, models: list[ModelInfo]) -> None:
        wants = {
            "image": any(isinstance(b, ImageContent) for b in turn.prompt),
            "audio": any(isinstance(b, AudioContent) for b in turn.prompt),
        }
        for modality, wanted in wants.items():
            refusing = [m.qualified_id for m in models if wanted and not getattr(m, modality)]
            if refusing:
                raise InvalidParams(
                    {"models": refusing, "modality": modality},
                    message=f"The model {', '.join(refusing)} does not accept {modality} input: "
                    f"choose another model or leave the {modality} out",
                )


def _title(text: str) -> str | None:
    """A session title from a prompt: its first line, spaces collapsed, cut at a word when too long."""
    line = next((" ".join(part.split()) for part in text.splitlines() if part.strip()), "")
    if len(line) <= _TITLE_LENGTH:
        return line or None
    head = line[: _TITLE_LENGTH - 1]
    cut = head.rsplit(" ", 1)[0] if " " in head else head
    return cut.rstrip(" ,.;:") + "…"


def _update(session_id: str, update: SessionUpdate) -> SessionNotification:
    return SessionNotification(session_id=session_id, update=update)
