"""Driving an agent from Python: :class:`AgentClient` connects, :class:`AgentSession` prompts.

The mirror of :class:`~acpio.app.AgentApp` for the other side: everything a client answers
(permissions, files inside a directory, terminals) is set once, and a turn is one call::

    async with AgentClient("acpio testy", cwd=project, permissions="allow") as client:
        session = await client.new_session()
        result = await session.prompt("write notes.txt hello")
    print(result.text, result.stop_reason, [w.path for w in result.files_written])
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import shlex
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeAlias, get_args

from acpio.capabilities import UnsupportedProtocolVersion
from acpio.client.files import ConfinedFiles
from acpio.client.forms import FormChoice, FormPolicy, form_policy
from acpio.client.permissions import PermissionChoice, PermissionPolicy, permission_policy
from acpio.client.policy import RulePolicy
from acpio.driver.forms import request_scoped_forms
from acpio.driver.requests import SessionRequests
from acpio.driver.result import FormAsk, TurnResult
from acpio.driver.turn import TurnStream
from acpio.errors import AcpError, ConnectionClosed, RequestError, TransportError
from acpio.jsonrpc import open_transport
from acpio.oneshot.failures import not_an_agent
from acpio.oneshot.notes import StdoutWatch
from acpio.roles import Client
from acpio.schema import (
    ClientCapabilities,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeRequest,
    SessionConfigOption,
)
from acpio.session import (
    ActiveSession,
    PromptContent,
    ProtocolChoice,
    SessionBuilder,
    SessionConnection,
    SessionMessage,
)
from acpio.transports import AcpAgent, AgentCommand, AgentProcess, Component, Direction, Transport

if TYPE_CHECKING:
    from typing import Self

    from acpio.session.negotiation import AnyInitializeResponse

__all__ = ["AgentClient", "AgentFailed", "AgentSession", "AgentTarget"]

_log = logging.getLogger("acpio.driver")

#: What :class:`AgentClient` connects to: a command (shell words or an argv list, or an
#: :class:`~acpio.transports.AgentCommand`), a ``ws://``/``wss://``/``http://``/``https://`` URL,
#: a component served in this process (an :class:`~acpio.app.AgentApp`, an agent builder...), or a
#: transport already open.
AgentTarget: TypeAlias = "str | Sequence[str] | AgentCommand | Component | Transport"

_URL_SCHEMES: Final = ("ws://", "wss://", "http://", "https://")
#: Lines of the agent's stderr kept in a failure.
_STDERR_LINES: Final = 20


class AgentFailed(AcpError):
    """The agent could not be started, did not answer ``initialize`` in time, or refused it.

    ``stderr_tail`` is the end of the agent's stderr when it is a process acpio started.
    """

    def __init__(self, message: str, *, stderr_tail: str | None = None) -> None:
        if stderr_tail:
            message = f"{message}\nThe end of its stderr:\n{stderr_tail}"
        super().__init__(message)
        self.stderr_tail = stderr_tail


class AgentClient:
    """A client driving one agent: connect, open sessions, prompt them; ``async with`` closes it all.

    ``agent`` is a command (``"acpio testy"``, ``["my-agent", "--acp"]``), a URL (``ws://``,
    ``http://``: needs ``acpio[remote]``) or an in-process component (an
    :class:`~acpio.app.AgentApp`). ``cwd`` is the directory sessions open in by default, and the
    only one the agent may read and write files in (``fs/*``) and run commands in
    (``terminal/*``, with ``terminals=True``); default: the current directory. ``permissions``
    answers ``session/request_permission`` and decides the agent's commands: ``"deny"`` (the
    default), ``"allow"``, an async callback or a :class:`~acpio.client.PermissionPolicy`; under
    ``"allow"`` a command setting a variable that decides what runs or loads (``PATH``,
    ``LD_PRELOAD``...) is still refused unless ``allow_env`` names it. ``forms`` answers the
    agent's forms (``elicitation/create`` in form mode): a mapping of field names to values used
    for any form asking those fields, ``"decline"``, ``"cancel"``, an async callback or a
    :class:`~acpio.client.FormPolicy`; each answer is checked against the form first; by default
    (``None``) forms are not advertised, so an agent asks none (one asked anyway is refused,
    ``-32602``); forms asked outside a session are kept in :attr:`forms_outside_sessions`.
    ``protocol`` is the ACP version to speak: ``"negotiate"`` (offer v2, accept v1), ``1`` or
    ``2``. ``env`` adds variables to the environment of an agent started from a command.
    ``init_timeout`` bounds the wait for the agent's ``initialize`` answer (``None``: no bound).

    Leaving the ``async with`` block (or :meth:`aclose`) closes the sessions, ends the commands
    the agent started, and closes the connection: a process the client started is ended with its
    whole process group (stdin closed, then SIGTERM, then SIGKILL).
    """

    def __init__(
        self,
        agent: AgentTarget,
        *,
        cwd: str | os.PathLike[str] | None = None,
        permissions: PermissionChoice = "deny",
        forms: FormChoice = None,
        terminals: bool = True,
        allow_env: Collection[str] = (),
        protocol: ProtocolChoice = "negotiate",
        env: Mapping[str, str] | None = None,
        init_timeout: float | None = 30.0,
        name: str = "acpio",
    ) -> None:
        self._target = agent
        self.cwd = Path(cwd if cwd is not None else os.getcwd()).resolve()
        #: The policy that answers the agent's permission requests and decides its commands.
        self.policy: PermissionPolicy = permission_policy(permissions)
        #: The policy that answers the agent's forms (``None``: forms are not advertised).
        self.forms: FormPolicy | None = form_policy(forms)
        #: The forms the agent asked outside a session (scoped to one of its requests), with their answers.
        self.forms_outside_sessions: list[FormAsk] = []
        self._terminals = terminals
        self._allow_env = frozenset(allow_env)
        self._protocol = protocol
        self._env = env
        self._init_timeout = init_timeout
        self._name = name
        self._process: AgentProcess | None = None
        self._cx: SessionConnection | None = None
        self._served: asyncio.Task[object] | None = None
        self._closing = asyncio.Event()
        self._sessions: list[AgentSession] = []
        #: The agent's answer to ``initialize`` (a v1 or v2 ``InitializeResponse``), once connected.
        self.initialized: AnyInitializeResponse | None = None

    def __repr__(self) -> str:
        state = "connected" if self._cx is not None else "not connected"
        return f"<AgentClient {self._target!r} {state}>"

    # --- connecting --------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    async def connect(self) -> AnyInitializeResponse:
        """Start (or reach) the agent and ``initialize``; what ``async with`` does on entry.

        Raises :class:`AgentFailed` when the agent cannot be started, exits, does not answer in
        ``init_timeout`` seconds, or refuses ``initialize``.
        """
        if self._cx is not None:
            raise RuntimeError(f"{self!r} is already connected; make another AgentClient for another agent")
        try:
            transport = await open_transport(self._component())
        except TransportError as exc:
            raise AgentFailed(f"The agent {self._display()} could not be started: {exc}") from exc
        self._process = transport if isinstance(transport, AgentProcess) else None
        # What a process prints before answering says whether it is an agent; watched on the
        # process itself, not through a Tap, so that the connection keeps the transport's fast paths.
        watch = StdoutWatch()
        if self._process is not None:
            self._process.watch_incoming(functools.partial(watch, Direction.INCOMING))
        builder = Client.builder(name=self._name, protocol=self._protocol)
        cx = self._cx = await builder.open_connection(transport)
        if self.forms is not None:
            outside = request_scoped_forms(self.forms, self.forms_outside_sessions)
            cx.add_dynamic_handler(outside).run_indefinitely()
        self._served = asyncio.get_running_loop().create_task(
            cx.run(self._serve_until_closed), name=f"acpio client {self._name}"
        )
        try:
            async with asyncio.timeout(self._init_timeout):
                self.initialized = await cx.initialize(self._initialize_request())
        except TimeoutError as exc:
            await self.aclose()
            printed = watch.first_non_json
            wrote = f", and wrote {printed!r} on its stdout, which is not ACP" if printed is not None else ""
            raise AgentFailed(
                f"The agent {self._display()} did not answer initialize within {self._init_timeout:g} s"
                f"{wrote}: check that the command starts an ACP agent (some need a flag such as --acp), "
                "or raise init_timeout",
                stderr_tail=self._stderr_tail(),
            ) from exc
        except UnsupportedProtocolVersion as exc:
            await self.aclose()
            raise AgentFailed(self._other_version(exc), stderr_tail=self._stderr_tail()) from exc
        except RequestError as exc:
            await self.aclose()
            if watch.echoed:  # the error answers acpio's own initialize, sent back: nobody refused it
                raise AgentFailed(
                    f"The agent {self._display()} did not answer initialize{not_an_agent(watch)}",
                    stderr_tail=self._stderr_tail(),
                ) from exc
            raise AgentFailed(
                f"The agent {self._display()} refused initialize: {exc}", stderr_tail=self._stderr_tail()
            ) from exc
        except AcpError as exc:
            message, tail = await self.describe_failure(exc)
            await self.aclose()
            process = self._process is not None
            during = (
                f" before answering initialize{not_an_agent(watch)}" if process else " (during initialize)"
            )
            raise AgentFailed(f"{message}{during}", stderr_tail=tail) from exc
        finally:
            watch.stop()
            if self._process is not None:
                self._process.watch_incoming(None)
        return self.initialized

    def _other_version(self, error: UnsupportedProtocolVersion) -> str:
        """Which ``protocol=`` works with an agent that answered another version than this client speaks."""
        if error.version not in get_args(ProtocolChoice):
            return f"The agent {self._display()} answered initialize: {error}"
        return (
            f"The agent {self._display()} speaks ACP protocol version {error.version}, but this "
            f"AgentClient was made with protocol={self._protocol!r}: leave protocol out (the default, "
            f"'negotiate', speaks any version acpio knows) or pass protocol={error.version}"
        )

    def _component(self) -> Component | Transport:
        target = self._target
        if isinstance(target, str) and target.lower().startswith(_URL_SCHEMES):
            from acpio.remote import RemoteAgent

            return RemoteAgent(target)
        if isinstance(target, str | AgentCommand):
            return AcpAgent(target, env=self._env)
        if isinstance(target, Component | Transport):
            return target
        if isinstance(target, Sequence) and all(isinstance(word, str) for word in target):
            return AcpAgent(list(target), env=self._env)
        raise TypeError(
            f"AgentClient cannot connect to {target!r}: pass a command (a string or a list of strings), "
            "a ws:// or http:// URL, or an agent served in this process (an AgentApp, an agent builder)"
        )

    def _initialize_request(self) -> InitializeRequest:
        from acpio import __version__

        return InitializeRequest(
            protocol_version=1,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(read_text_file=True, write_text_file=True),
                terminal=self._terminals,
                elicitation=(
                    ElicitationCapabilities(form=ElicitationFormCapabilities())
                    if self.forms is not None
                    else None
                ),
            ),
            client_info=Implementation(name=self._name, version=__version__),
        )

    async def _serve_until_closed(self, cx: SessionConnection) -> None:
        await self._closing.wait()

    @property
    def connection(self) -> SessionConnection:
        """The connection to the agent (for what this class does not wrap); raises before :meth:`connect`."""
        if self._cx is None:
            raise RuntimeError("The AgentClient is not connected: use it with async with, or await connect()")
        return self._cx

    @property
    def protocol_version(self) -> int | None:
        """The ACP version the agent answered with (1 or 2); ``None`` before :meth:`connect`."""
        return self._cx.protocol_version if self._cx is not None else None

    @property
    def process(self) -> AgentProcess | None:
        """The agent's process, when the client started one (a command); ``None`` otherwise."""
        return self._process

    # --- sessions ----------------------------------------------------------------------------------

    async def new_session(self, cwd: str | os.PathLike[str] | None = None) -> AgentSession:
        """A new session (``session/new``) in ``cwd`` (default: the client's); its files stay inside it."""
        directory = self._directory(cwd)
        return await self._open(self.connection.build_session(directory), directory)

    async def load_session(self, session_id: str, cwd: str | os.PathLike[str] | None = None) -> AgentSession:
        """An earlier session continued with ``session/load`` (its replay is :attr:`AgentSession.history`)."""
        directory = self._directory(cwd)
        return await self._open(self.connection.build_session_load(session_id, directory), directory)

    async def resume_session(
        self, session_id: str, cwd: str | os.PathLike[str] | None = None
    ) -> AgentSession:
        """An earlier session continued with ``session/resume`` (nothing replayed)."""
        directory = self._directory(cwd)
        return await self._open(self.connection.build_session_resume(session_id, directory), directory)

    def _directory(self, cwd: str | os.PathLike[str] | None) -> Path:
        return Path(cwd).resolve() if cwd is not None else self.cwd

    async def _open(self, builder: SessionBuilder[Any], directory: Path) -> AgentSession:
        files = ConfinedFiles(directory, set_by="AgentClient(cwd=...) or the session's cwd")
        active = await builder.start_session()
        if isinstance(self.policy, RulePolicy):  # its path rules hold inside the session's directory
            self.policy.set_root(active.session_id, directory)
        session = AgentSession(self, active, files, terminals=self._terminals, allow_env=self._allow_env)
        self._sessions.append(session)
        return session

    def _forget(self, session: AgentSession) -> None:
        """Drop a closed session, so that a long-lived client holds only the sessions still open."""
        with contextlib.suppress(ValueError):
            self._sessions.remove(session)

    # --- failures and the end ----------------------------------------------------------------------

    async def describe_failure(self, error: BaseException) -> tuple[str, str | None]:
        """What ended the connection, in a sentence, and the end of the agent's stderr (if a process).

        Waits a moment for an exiting process, so that its exit status is known.
        """
        if self._closing.is_set():
            return f"The AgentClient was closed before the turn ended ({error})", None
        process = self._process
        if process is None:
            return f"The agent closed the connection: {error}", None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(2.0):
                await process.wait()
        code = process.returncode
        name = self._display()
        if code is None:
            how = f"closed the connection ({error})"
        elif code < 0:
            how = f"was killed by signal {-code}"
        else:
            how = f"exited with exit code {code}"
        return f"The agent {name} {how}", self._stderr_tail()

    def _stderr_tail(self) -> str | None:
        tail = self._process.stderr_tail if self._process is not None else None
        return "\n".join(tail.splitlines()[-_STDERR_LINES:]) if tail else None

    def _display(self) -> str:
        target = self._target
        if self._process is not None:
            return repr(self._process.command.display())
        if isinstance(target, AgentCommand):
            return repr(target.display())
        if isinstance(target, str):
            return repr(target)
        if isinstance(target, Sequence) and all(isinstance(word, str) for word in target):
            return repr(shlex.join(target))
        return type(target).__name__

    async def aclose(self) -> None:
        """Close the connection (and the agent's process group), then the sessions and their commands.

        A turn still being read in another task ends with a failed result saying the client was
        closed.
        """
        self._closing.set()
        served, self._served = self._served, None
        if served is not None:
            try:
                await served
            except (ConnectionClosed, TransportError) as exc:
                _log.debug("The connection to %s ended with: %s", self._display(), exc)
        for session in list(self._sessions):
            await session.aclose()


class AgentSession:
    """A session with the agent: :meth:`prompt` gives a turn's :class:`TurnResult`, :meth:`stream` its events.

    One turn at a time. The agent's requests are answered as the :class:`AgentClient` says:
    permissions by its policy (every ask recorded in the result), forms by its form policy (each
    recorded with its answer), files inside the session's
    directory, commands (when terminals are on) as real processes once allowed.
    """

    def __init__(
        self,
        client: AgentClient,
        active: ActiveSession,
        files: ConfinedFiles,
        *,
        terminals: bool,
        allow_env: Collection[str] = (),
    ) -> None:
        self._client = client
        self._active = active
        self._view = active.view  # on v1 the view is kept from now on
        self._requests = SessionRequests(
            self._view, client.policy, files, terminals=terminals, allow_env=allow_env, forms=client.forms
        )
        self._turn: TurnStream | None = None
        self._closed = False
        self._options: list[SessionConfigOption] | None = None  # as the last set_option left them

    def __repr__(self) -> str:
        return f"<AgentSession {self.session_id!r}>"

    @property
    def session_id(self) -> str:
        """The session's id."""
        return self._active.session_id

    @property
    def active(self) -> ActiveSession:
        """The underlying :class:`~acpio.session.ActiveSession` (modes, config options, its view)."""
        return self._active

    @property
    def history(self) -> list[SessionMessage]:
        """What ``session/load`` replayed (the conversation so far); empty for other setups."""
        return self._active.history

    def stream(self, prompt: PromptContent) -> TurnStream:
        """Send ``prompt``; return the turn: ``async for event in stream``, then ``await stream.result()``.

        ``prompt`` is text, a content block or several. Raises ``RuntimeError`` while the previous
        turn is not read to its end, and once the session or its client is closed. An agent gone
        since the last turn gives a turn that ends at once, its result saying how the agent went
        (and the end of its stderr).
        """
        if self._closed:
            raise RuntimeError(
                f"Session {self.session_id!r} is closed: its AgentClient was closed (its async with "
                "block ended) or session.aclose() was called. Prompt it before that, or continue it "
                f"from an open AgentClient with load_session({self.session_id!r}) or "
                f"resume_session({self.session_id!r}) when the agent keeps its sessions"
            )
        if self._turn is not None and not self._turn.done:
            raise RuntimeError(
                f"Session {self.session_id!r} still has a turn running: read it to its end "
                "(await stream.result()) before sending the next prompt"
            )
        try:
            self._active.send_prompt(prompt)
        except ConnectionClosed:
            _log.debug("The agent of session %r is gone; the turn ends at once", self.session_id)
        self._turn = TurnStream(self._active, self._requests, self._client.describe_failure)
        return self._turn

    async def prompt(self, prompt: PromptContent) -> TurnResult:
        """Send ``prompt``, answer the agent's requests, and give the turn's :class:`TurnResult`.

        A turn that fails (the agent answers with an error, exits, closes the connection) gives a
        result too, whose ``error`` says why (check :attr:`TurnResult.ok`).
        """
        return await self.stream(prompt).result()

    async def set_mode(self, mode_id: str) -> None:
        """Switch the session to the agent's mode ``mode_id`` (``session/set_mode``, ACP v1).

        Raises :class:`~acpio.oneshot.controls.ControlError` (a ``ValueError``) naming the agent's
        modes when it offers no such mode, and the agent's refusal as it is.
        """
        from acpio.oneshot.controls import set_mode

        self._v1_only("set_mode")
        await set_mode(self._active, mode_id)

    async def set_option(self, option_id: str, value: str | bool) -> list[SessionConfigOption]:
        """Set the session's config option ``option_id`` (``session/set_config_option``, ACP v1).

        ``value`` is one of a select option's values (or its name), or ``True``/``False`` for a
        boolean option (an agent offers those only to clients that advertise them). Gives every
        option as the agent reports it after the change. Raises
        :class:`~acpio.oneshot.controls.ControlError` (a ``ValueError``) naming the choices when the
        option or the value is not offered, and the agent's refusal as it is.
        """
        from acpio.oneshot.controls import set_option

        self._v1_only("set_option")
        self._options = await set_option(self._active, option_id, value, self._options)
        return list(self._options)

    def _v1_only(self, method: str) -> None:
        if self._active.protocol_version != 1:
            raise NotImplementedError(
                f"{method}(): session {self.session_id!r} speaks ACP v{self._active.protocol_version}, "
                "where AgentClient cannot change modes or config options yet; use "
                "AgentClient(..., protocol=1) with an agent that also speaks v1"
            )

    def cancel(self) -> None:
        """Cancel the running turn (``session/cancel``); its result then has stop reason ``cancelled``."""
        if self._turn is not None:
            self._turn.cancel()

    async def aclose(self) -> None:
        """Stop reading the session here and end the commands it started (the agent keeps the session)."""
        self._closed = True
        self._active.close()
        self._client._forget(self)
        terminals = self._requests.terminals
        if terminals is not None:
            await terminals.aclose()
