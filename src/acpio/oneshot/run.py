"""The flow of ``acpio prompt``: spawn the agent, open a session, send one prompt, show the turn.

:func:`run_prompt` does it all and returns the exit code (:class:`ExitCode`):

1. start the agent (:class:`~acpio.transports.AcpAgent`), wrapped in a
   :class:`~acpio.transports.Tap` for ``--json``;
2. ``initialize``, advertising ``fs.readTextFile``, ``fs.writeTextFile`` and ``terminal``;
3. ``session/new`` in ``cwd`` or, with a session id, ``session/load`` (its replayed history is
   shown dimmed) when the agent advertises ``loadSession``, else ``session/resume`` (on v2 always
   ``session/resume``, without replay);
4. ``session/prompt``, then every message of the turn in order: updates go to the renderer,
   requests are answered for real (:class:`~acpio.client.files.ConfinedFiles`,
   :class:`~acpio.oneshot.terminals.Terminals`, a permission policy), until the stop reason.

The agent has ``init_timeout`` seconds to answer ``initialize`` (an agent waiting for input, or
not speaking ACP, would otherwise keep the run waiting forever).

The first SIGINT (Ctrl-C) of a turn sends ``session/cancel``, answers a pending permission request
``cancelled`` and waits for the agent to end the turn; the next one kills the agent (and the
commands it runs) and returns at once. Both end with exit code 130.

SIGTERM, SIGHUP, and the exit of the parent process (noticed by polling the parent process id,
see :mod:`acpio._process_control`; neither of the last two when SIGHUP is ignored, as ``nohup``
does) end the run in order: the agent's stdin is closed, its process group gets SIGTERM after a
grace period and SIGKILL after another, and at the same time the commands it runs get SIGTERM,
then SIGKILL; the run waits for all that, then returns 143 (SIGTERM) or 129 (SIGHUP, the parent
gone). Another such signal, or a Ctrl-C, meanwhile kills everything at once.

Failures a user must see are raised as :class:`PromptFailed`, carrying the exit code and one
message (with the end of the agent's stderr when the agent died).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import functools
import logging
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final, Literal, TextIO, TypeAlias, cast

import orjson

from acpio._process_control import handling_endings, signal_exit_code
from acpio.capabilities import LATEST_PROTOCOL_VERSION, CapabilityNotAdvertised, UnsupportedProtocolVersion
from acpio.client.files import ConfinedFiles
from acpio.client.permissions import AllowPolicy, DenyPolicy, PermissionPolicy
from acpio.errors import (
    AcpError,
    AuthRequired,
    ConnectionClosed,
    InvalidParams,
    RequestError,
    ResourceNotFound,
    TransportError,
)
from acpio.jsonrpc import (
    Connection,
    Dispatch,
    NotificationDispatch,
    RequestDispatch,
    ResponseDispatch,
    Unhandled,
)
from acpio.oneshot.answers import PolicyName, RequestAnswers
from acpio.oneshot.auth import LoginFailed, authenticate
from acpio.oneshot.controls import (
    ControlError,
    Controls,
    ElicitationMessages,
    apply_controls,
    client_capabilities,
)
from acpio.oneshot.elicitation import ElicitationSettings, Elicitor
from acpio.oneshot.interactive import CommandWatch, LineReader, PipeReader, TerminalReader, converse
from acpio.oneshot.notes import Notes, StdoutWatch, logging_to, specification_warnings_to
from acpio.oneshot.permissions import AskPolicy, LineInput
from acpio.oneshot.render import JsonLinesRenderer, PlainRenderer, Renderer
from acpio.oneshot.sanitize import sanitize
from acpio.oneshot.terminals import Terminals
from acpio.profiles import EditorProfile, GuardedTransport, ProfileGuard
from acpio.roles import Client
from acpio.schema import (
    ClientCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
)
from acpio.session import (
    ActiveSession,
    McpServerList,
    ProtocolChoice,
    SessionBuilder,
    SessionConnection,
    SessionMessage,
    TurnEnded,
)
from acpio.session.messages import UPDATE_METHOD
from acpio.session.turn_view import text_chunk
from acpio.transports import AcpAgent, AgentCommand, AgentProcess, Component, Direction, OversizedFrame, Tap

if TYPE_CHECKING:
    from acpio.schema import v2

__all__ = [
    "DEFAULT_INIT_TIMEOUT",
    "ExitCode",
    "OutputMode",
    "PolicyName",
    "PromptFailed",
    "PromptOptions",
    "run_prompt",
]

_log = logging.getLogger("acpio.oneshot")

#: How the turn is shown: ``rich`` (a terminal), ``plain`` (text without colour) or ``json`` (JSON lines).
OutputMode: TypeAlias = Literal["rich", "plain", "json"]

#: Lines of the agent's stderr shown when it fails.
_STDERR_LINES: Final = 12
#: The capability an agent whose sessions end with its process sets (``acpio testy`` with its store
#: in memory): then no ``--session`` hint is printed, since a later run could not continue the session.
SESSIONS_END_WITH_PROCESS: Final = "_meta.acpio.sessionsEndWithProcess"

#: Seconds the agent has to answer ``initialize`` unless :attr:`PromptOptions.init_timeout` says otherwise.
DEFAULT_INIT_TIMEOUT: Final = 30.0

#: Seconds without an answer to ``initialize`` after which acpio says it is still waiting, and why.
STILL_WAITING_AFTER: Final = 5.0


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


async def run_prompt(
    options: PromptOptions,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
    answers: LineInput | None = None,
    handle_sigint: bool = True,
    lines: LineReader | None = None,
) -> int:
    """Run one prompt turn against a freshly started agent; return the exit code (see :class:`ExitCode`).

    ``stdout`` gets the turn (default ``sys.stdout``), ``stderr`` the notes (the session id, the
    cancellation) and the permission questions. ``answers`` is where ``--ask`` reads from
    (default: stdin, or ``/dev/tty``). With ``handle_sigint`` (the default), Ctrl-C cancels the turn,
    and SIGTERM, SIGHUP and the parent's exit end the run, as described in the module docstring; it
    needs the main thread. Raises :class:`PromptFailed`.
    """
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        files = ConfinedFiles(options.cwd, set_by="acpio prompt --cwd")
        added = [ConfinedFiles(directory, set_by="acpio prompt --add-dir") for directory in options.add_dirs]
    except ValueError as exc:
        raise PromptFailed(str(exc), ExitCode.USAGE) from exc
    # The agent's commands run only once answering.consent_to_command allowed them (made below).
    terminals = Terminals(
        files,
        consent=lambda command: answering.consent_to_command(command),
        on_output=lambda terminal_id: renderer.terminal_output(terminal_id),
    )
    json_renderer = JsonLinesRenderer(out) if options.output == "json" else None
    renderer: Renderer = json_renderer or _text_renderer(options.output, out, terminals)
    owned_answers = None
    if (options.permissions == "ask" or options.elicitation.ask) and answers is None:
        answers = owned_answers = _open_answers(options.answers_from_terminal)
    policy: PermissionPolicy
    if options.permissions == "allow":
        policy = AllowPolicy()
    elif options.permissions == "deny":
        policy = DenyPolicy()
    else:
        assert answers is not None
        policy = AskPolicy(answers, err, colour=options.output == "rich")
    if options.policy is not None:
        policy = _rule_policy(options, policy if options.permissions == "ask" else None, err)
    answering = RequestAnswers(
        options.permissions, renderer, files, terminals, policy, allowed_env=options.allow_env
    )
    answering.added_dirs = added
    owned_lines = None
    if options.interactive and lines is None:
        # with --json, stdout is for the messages only: the question goes to stderr
        lines = owned_lines = _line_reader(answers, err if options.output == "json" else out)
    notes = Notes(err, renderer.settle, colour=options.output == "rich")
    answering.elicitor = Elicitor(
        options.elicitation,
        note=notes.note,
        write=functools.partial(_ask_on, err, renderer),
        read_line=answers.readline if answers is not None else None,
    )
    run = _PromptRun(options, renderer, notes, files, terminals, answering)
    run.lines = lines
    # Until the very end: a Ctrl-C while commands are being ended kills them.
    handling = (
        handling_endings(run.on_ending_signal, run.on_parent_gone, on_sigint=run.on_sigint)
        if handle_sigint
        else contextlib.nullcontext()
    )
    try:
        with handling, logging_to(notes, verbose=options.verbose), specification_warnings_to(notes.note):
            try:
                return await run.run(json_renderer)
            finally:
                await run.end_terminals()
                run.stop_recording()
    finally:
        renderer.close()
        if owned_lines is not None:
            owned_lines.close()
        if owned_answers is not None:
            owned_answers.close()


def _line_reader(answers: LineInput | None, out: TextIO) -> LineReader:
    """``-i``: readline at a terminal, else lines of stdin (shared with ``--ask``'s answers)."""
    if sys.stdin.isatty():
        return TerminalReader(out=out)
    return PipeReader(answers if answers is not None else LineInput.stdin(), out)


def _text_renderer(output: OutputMode, out: TextIO, terminals: Terminals) -> Renderer:
    if output == "rich":
        from rich.console import Console

        from acpio.oneshot.render_rich import GoneTolerant, RichRenderer

        console = Console(file=cast(IO[str], GoneTolerant(out)), force_terminal=True, highlight=False)
        return RichRenderer(console, terminals.snapshot)
    return PlainRenderer(out, terminals.snapshot)


def _ask_on(err: TextIO, renderer: Renderer, text: str) -> None:
    """Write a question (an elicitation's) on ``err``, once the renderer settled."""
    renderer.settle()
    err.write(sanitize(text))
    err.flush()


def _open_answers(from_terminal: bool) -> LineInput:
    if not from_terminal:
        return LineInput.stdin()
    try:
        return LineInput.terminal()
    except OSError as exc:
        raise PromptFailed(
            f"--ask reads the answers from the terminal, and /dev/tty cannot be opened ({exc.strerror}); "
            "use --allow or --deny",
            ExitCode.USAGE,
        ) from exc


def _show_v1(renderer: Renderer, message: SessionMessage, note: Callable[[str], None]) -> None:
    """Show an ACP v1 session message: a plain text chunk without its models, any other update with them."""
    dispatch = message.dispatch
    if type(dispatch) is NotificationDispatch and dispatch.method == UPDATE_METHOD:
        chunk = text_chunk(dispatch.params, 1)
        if chunk is not None:  # the common case (see acpio.session.turn_view.text_chunk)
            renderer.text(chunk[0], chunk[2])
            return
    try:
        update = message.update
    except InvalidParams as exc:
        note(f"skipped a session/update that does not match the schema: {exc}")
        return
    if update is not None:
        renderer.update(update)


class _PromptRun:
    """One run: start the agent, open the session, run the turn; end it all on a signal."""

    def __init__(
        self,
        options: PromptOptions,
        renderer: Renderer,
        notes: Notes,
        files: ConfinedFiles,
        terminals: Terminals,
        answers: RequestAnswers,
    ) -> None:
        self._options = options
        self._renderer = renderer
        self._notes = notes
        self._watch = StdoutWatch()
        self._files = files
        self._terminals = terminals
        self._answers = answers
        self._process: AgentProcess | None = None
        #: ``-i``: where the next prompts come from; the agent's commands, for completion.
        self.lines: LineReader | None = None
        self._commands = CommandWatch()
        #: The agent's command once started, and every command this run started (proxies too).
        self._agent: AcpAgent | None = None
        self._spawned: list[AcpAgent] = []
        self._main: asyncio.Task[Any] | None = None
        self._session: ActiveSession | None = None
        self._turn_running = False
        #: ``-i``: whether the agent answered a turn with an error (the conversation then exits with 4).
        self._a_turn_failed = False
        #: v2: a Ctrl-C of this turn sent ``tool_call/cancel`` (the next one cancels the turn).
        self._tool_call_cancel_sent = False
        self._aborted = False
        #: Why the ``--json`` output could not be written, once it could not.
        self._output_failure: OSError | None = None
        #: The signal ending the run in order (SIGTERM, SIGHUP), once one came.
        self._stopping: int | None = None
        self._ending_terminals: asyncio.Task[None] | None = None
        #: ``--record``: what closes the cassette, once it is open.
        self.stop_recording: Callable[[], None] = lambda: None

    # --- the run -----------------------------------------------------------------------------

    async def run(self, recorder: JsonLinesRenderer | None) -> int:
        component = self._component()
        self._renderer.status("starting the agent")
        try:
            opened = await component.open()
        except TransportError as exc:
            raise PromptFailed(str(exc), ExitCode.AGENT_FAILED) from exc
        self._process = opened if isinstance(opened, AgentProcess) else None
        transport: Any = Tap(opened, self._watch)
        if self._options.editor is not None:
            transport = GuardedTransport(transport, ProfileGuard(self._options.editor))
        if self._options.record is not None:
            transport = self._recorded(transport, self._options.record)
        if recorder is not None:
            transport = Tap(transport, functools.partial(self._record, recorder))
        try:
            # mcp/message, the method of MCP servers served over ACP, is unstable
            hosting = any(hasattr(server, "attach") for server in self._options.mcp_servers)
            builder = Client.builder(name="acpio prompt", unstable=hosting, protocol=self._options.protocol)
            # Behind a conductor the agent's lines are not the watch's to see: the engine warns of them.
            direct = self._process is not None
            with self._watch.holding_back_warnings() if direct else contextlib.nullcontext():
                code: int = await builder.connect_with(transport, self._main_function)
        except asyncio.CancelledError:
            if not self._ended and self._output_failure is None:
                raise
            code = self._ended_code()
        except (TransportError, ConnectionClosed) as exc:
            if not self._ended and self._output_failure is None:
                message = _agent_gone(self._agent_process, exc, self._watch)
                raise PromptFailed(message, ExitCode.AGENT_FAILED) from exc
            code = self._ended_code()
        except OSError:
            if not self._ended:
                raise
            code = self._ended_code()  # the terminal went away with the SIGHUP that ends the run
        if self._output_failure is not None:
            raise self._output_failure
        return code

    def _component(self) -> Component:
        """What to connect to: the agent, or a conductor running the proxies and the agent (and its trace)."""
        options = self._options
        stderr = self._notes.agent_stderr if options.verbose else None
        agent = options.agent
        component = AcpAgent(agent, stderr=stderr) if isinstance(agent, AgentCommand) else agent
        if isinstance(component, AcpAgent):
            self._spawned.append(component)
            self._agent = component
        if not options.proxies and options.trace is None:
            return component
        from acpio.conductor import Chain

        proxies: list[Any] = []
        for proxy in options.proxies:
            if isinstance(proxy, AgentCommand):
                proxy = AcpAgent(proxy)
                self._spawned.append(proxy)
            proxies.append(proxy)
        return Chain.agent("acpio prompt", [*proxies, component]).trace_to(options.trace)

    def _recorded(self, transport: Any, path: Path) -> Any:
        """``--record``: the transport with a cassette recorder on it, closed when the run ends."""
        from acpio.trace.cassette import CassetteRecorder
        from acpio.trace.redact import Redaction

        try:
            recorder = CassetteRecorder(path, redaction=Redaction.default(self._options.cwd))
        except OSError as exc:
            raise PromptFailed(f"--record {path}: {exc.strerror or exc}", ExitCode.USAGE) from exc
        self.stop_recording = recorder.close
        return Tap(transport, recorder)

    @property
    def _agent_process(self) -> AgentProcess | None:
        """The agent's process, once started (by this run, or by the conductor in front of it)."""
        if self._process is not None:
            return self._process
        return self._agent.process if self._agent is not None else None

    def _record(
        self, recorder: JsonLinesRenderer, direction: Direction, frame: bytes | OversizedFrame
    ) -> None:
        """``--json``: write a frame (the observer of the tap on the agent's transport).

        Output that cannot be written (``acpio prompt --json | head``) ends the run with that error,
        as a failed write of the text renderers does: the tap itself would only log it.
        """
        if self._output_failure is not None:
            return
        try:
            recorder.record(direction, frame)
        except OSError as exc:
            self._output_failure = exc
            if self._main is not None:
                self._main.cancel()

    @property
    def _ended(self) -> bool:
        """Whether a signal (or the parent's exit) ended the run."""
        return self._aborted or self._stopping is not None

    def _ended_code(self) -> int:
        if self._stopping is not None:
            return signal_exit_code(self._stopping)
        return ExitCode.CANCELLED

    async def _main_function(self, connection: Connection) -> int:
        self._main = asyncio.current_task()
        if self._ended:
            return self._ended_code()
        cx = cast(SessionConnection, connection)
        if self._answers.elicitor is not None:
            cx.add_dynamic_handler(ElicitationMessages(self._answers.elicitor)).run_indefinitely()
        if self._options.verbose:
            cx.add_dynamic_handler(_ExtensionNotes(self._notes)).run_indefinitely()
        cx.add_dynamic_handler(self._commands).run_indefinitely()
        self._renderer.status("waiting for the agent to initialize")
        session = await _open_session(
            cx, self._options, self._files.root, self._renderer, self._agent_process, self._watch, self._note
        )
        # Requests for any other session are answered at once (they would otherwise wait, parked).
        cx.add_dynamic_handler(_OtherSessions(session.session_id, self._renderer)).run_indefinitely()
        features = cx.agent_features
        if features is None or not (features.load_session or features.resume_session):
            # the hint would lead to an error: the agent can neither load nor resume sessions
            self._note(f"session {session.session_id}")
        elif features.has(SESSIONS_END_WITH_PROCESS):
            # acpio testy with its sessions in memory: a later process would not find this one
            self._note(f"session {session.session_id} (it ends with the agent's process)")
        else:
            self._note(f"session {session.session_id} (continue it with --session {session.session_id})")
        try:
            await apply_controls(session, self._options.controls, self._note)
        except ControlError as exc:
            raise PromptFailed(str(exc), ExitCode.USAGE) from exc
        except RequestError as exc:
            raise PromptFailed(f"The agent refused the change: {exc}", ExitCode.AGENT_ERROR) from exc
        if self.lines is None:
            return await self._turn(session, self._options.prompt)
        turn = functools.partial(self._conversation_turn, session)
        if self._options.prompt.strip():
            await turn(self._options.prompt)
        self._renderer.status(None)
        await converse(session, turn, self.lines, self._note, self._commands, self._renderer.settle)
        return ExitCode.AGENT_ERROR if self._a_turn_failed else ExitCode.OK

    async def _conversation_turn(self, session: ActiveSession, text: str) -> int:
        """A turn of ``-i``: one the agent answers with an error is told, and the conversation goes on."""
        try:
            return await self._turn(session, text)
        except PromptFailed as exc:
            self._a_turn_failed = True
            self._renderer.turn_ended(None)
            self._note(f"error: {exc.message} (the conversation goes on; it will exit with {exc.exit_code})")
            return exc.exit_code

    async def _turn(self, session: ActiveSession, text: str) -> int:
        self._session = session
        self._answers.cancelled.clear()
        self._tool_call_cancel_sent = False
        session.send_prompt(text)
        self._turn_running = True
        self._renderer.status("waiting for the agent")
        try:
            while True:
                item = await session.read_update()
                if isinstance(item, TurnEnded):
                    break
                if item.is_request:
                    await self._answers.answer(item, session.connection)
                else:
                    self._show(item)
        except RequestError as exc:
            raise PromptFailed(
                f"The agent answered session/prompt with an error: {exc}", ExitCode.AGENT_ERROR
            ) from exc
        finally:
            self._turn_running = False
        # A v2 idle state with no stop reason ended the foreground work without saying why.
        stop_reason = str(item.stop_reason) if item.stop_reason is not None else "end_turn"
        self._renderer.turn_ended(stop_reason)
        if self._answers.cancelled.is_set():
            # The user interrupted: a wrapper script must not see success, whatever the agent says
            # (some agents end a cancelled turn with end_turn).
            return ExitCode.CANCELLED
        if stop_reason == "end_turn":
            return ExitCode.OK
        if stop_reason == "cancelled":
            return ExitCode.CANCELLED
        return ExitCode.STOPPED

    def _show(self, message: SessionMessage) -> None:
        if message.protocol_version == 2:
            if message.event is not None:  # the session read it into its view (or warned it is malformed)
                self._renderer.event(message.event)
            return
        _show_v1(self._renderer, message, self._note)

    # --- Ctrl-C --------------------------------------------------------------------------------

    def on_sigint(self) -> None:
        """Ctrl-C: cancel the turn if one runs (the first time); otherwise stop at once."""
        session = self._session
        if self._stopping is not None:
            self._abort()
            return
        if session is not None and not self._turn_running and self.lines is not None:
            self._note("(leave with Ctrl-D or :quit)", fresh_line=True)
            return
        if session is not None and self._turn_running and self._cancel_tool_call(session):
            return
        if session is not None and self._turn_running and not self._answers.cancelled.is_set():
            self._answers.cancelled.set()
            with contextlib.suppress(AcpError):
                session.cancel()
            self._note("cancelling the turn (press Ctrl-C again to stop at once)", fresh_line=True)
            return
        self._abort()

    def _cancel_tool_call(self, session: ActiveSession) -> bool:
        """v2: the first Ctrl-C sends ``tool_call/cancel`` for a running tool call that allows it.

        Like a shell's Ctrl-C, it stops the work under way and the turn goes on; the next Ctrl-C
        cancels the turn. ``False``: no such tool call (or v1), cancel the turn.
        """
        from acpio.schema import v2

        running = [
            call
            for call in session.view.tool_calls.values()
            if call.cancellable and call.status not in ("completed", "failed", "cancelled")
        ]
        if session.protocol_version != 2 or not running or self._tool_call_cancel_sent:
            return False
        call = running[-1]
        self._tool_call_cancel_sent = True
        request = v2.CancelToolCallRequest(session_id=session.session_id, tool_call_id=call.tool_call_id)

        async def refused(result: v2.CancelToolCallResponse | AcpError) -> None:
            if isinstance(result, AcpError):
                self._note(f"the agent refused tool_call/cancel: {result}")

        with contextlib.suppress(AcpError):
            session.connection.send_request(request).on_receiving_result(refused)
        self._note(
            f"cancelling {call.title or call.tool_call_id} (tool_call/cancel; Ctrl-C again cancels the turn)",
            fresh_line=True,
        )
        return True

    def on_ending_signal(self, number: int) -> None:
        """SIGTERM or SIGHUP: end the agent and its commands in order (a second one: at once)."""
        self._stop(number, f"stopping on {signal.Signals(number).name}")

    def on_parent_gone(self) -> None:
        """The process that started acpio exited: end as on SIGHUP."""
        self._stop(signal.SIGHUP, "stopping: the process that started acpio exited")

    def _stop(self, number: int, why: str) -> None:
        if self._ended:
            self._abort()
            return
        self._stopping = number
        self._note(f"{why}; ending the agent and the commands it runs", fresh_line=True)
        self._start_ending_terminals()
        if self._main is not None:
            self._main.cancel()  # the connection then closes the agent's stdin and ends its group

    def _abort(self) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._note("stopped: the agent was killed", fresh_line=True)
        if self._process is not None:
            self._process.kill()
        for spawned in self._spawned:
            spawned.kill()  # behind a conductor: the agent and the proxies
        self._terminals.kill_now()
        if self._main is not None:
            self._main.cancel()

    def _start_ending_terminals(self) -> None:
        if self._ending_terminals is None:
            self._ending_terminals = asyncio.get_running_loop().create_task(
                self._terminals.aclose(), name="acpio prompt: ending the terminals"
            )

    async def end_terminals(self) -> None:
        """End the commands still running (SIGTERM, then SIGKILL) and wait for them."""
        self._start_ending_terminals()
        assert self._ending_terminals is not None
        await asyncio.shield(self._ending_terminals)

    def _note(self, text: str, *, fresh_line: bool = False) -> None:
        """A note on stderr; ``fresh_line`` starts it on a new line (after a ``^C`` echoed mid-line)."""
        self._notes.note(text, fresh_line=fresh_line)


async def _open_session(
    cx: SessionConnection,
    options: PromptOptions,
    root: Path,
    renderer: Renderer,
    process: AgentProcess | None,
    watch: StdoutWatch,
    note: Callable[[str], None],
) -> ActiveSession:
    """``initialize``, then a new session in ``root``, or the one ``options.session_id`` names continued."""
    initialized = await _initialize(cx, options, process, watch, note)
    if not isinstance(initialized, InitializeResponse):
        controls = options.controls
        if controls.auth_method is not None or controls.mode is not None or controls.options:
            raise PromptFailed(
                "The agent speaks ACP v2, where acpio prompt cannot log in (--auth), set a mode (--mode) "
                "or config options (--option) yet; run it with --protocol 1 to speak v1 with an agent "
                "that also does",
                ExitCode.USAGE,
            )
        if options.session_id is not None:  # session/resume is in v2's baseline; nothing is replayed
            return await _resume_v2_session(cx, options.session_id, root, options)
        return await _new_session(cx, root, None, options)
    if options.controls.auth_method is not None:
        try:
            await authenticate(cx, initialized, options.controls.auth_method)
        except LoginFailed as exc:
            raise PromptFailed(str(exc), ExitCode.AGENT_ERROR) from exc
    renderer.status("opening the session")
    if options.session_id is None:
        return await _new_session(cx, root, initialized, options)
    return await _continue_session(cx, options, root, renderer)


def _capabilities(options: PromptOptions) -> ClientCapabilities:
    """What this run advertises (:func:`~acpio.oneshot.controls.client_capabilities`), or the editor's."""
    if options.editor is not None:
        return ClientCapabilities.model_validate(options.editor.client_capabilities)
    return client_capabilities(options.elicitation, terminal_auth=options.controls.terminal_auth)


def _client_info(options: PromptOptions) -> Implementation:
    """The ``clientInfo`` of this run: acpio prompt's, or the ``--as`` editor's."""
    from acpio import __version__

    if options.editor is not None:
        return Implementation.model_validate(options.editor.client_info)
    return Implementation(name="acpio", title="acpio prompt", version=__version__)


async def _initialize(
    cx: SessionConnection,
    options: PromptOptions,
    process: AgentProcess | None,
    watch: StdoutWatch,
    note: Callable[[str], None],
) -> InitializeResponse | v2.InitializeResponse:
    """``initialize``, advertising what this client serves (:func:`_capabilities`), as ``--protocol`` says.

    After :data:`STILL_WAITING_AFTER` seconds without an answer, ``note`` says why that may be.
    """
    request = InitializeRequest(
        protocol_version=LATEST_PROTOCOL_VERSION,
        client_capabilities=_capabilities(options),
        client_info=_client_info(options),
    )
    limit = options.init_timeout or None
    still_waiting = None
    if limit is None or limit > STILL_WAITING_AFTER:
        still_waiting = asyncio.get_running_loop().call_later(
            STILL_WAITING_AFTER, note, _still_waiting(process, limit)
        )
    try:
        async with asyncio.timeout(limit):
            response = await cx.initialize(request)
    except TimeoutError as exc:
        assert limit is not None
        message = _no_initialize_answer(process, limit, watch.first_non_json)
        raise PromptFailed(message, ExitCode.AGENT_FAILED) from exc
    except UnsupportedProtocolVersion as exc:
        raise PromptFailed(_unsupported_version(exc, cx.protocol), ExitCode.AGENT_ERROR) from exc
    except RequestError as exc:
        if watch.echoed:  # cat: our initialize came back as a request, our error answer as the reply
            raise PromptFailed(_echoes(process), ExitCode.AGENT_FAILED) from exc
        if isinstance(exc.data, dict) and {"lane", "component"} <= exc.data.keys():
            # A conductor answers this way when it lost a component. Our own (--proxy, --trace) has
            # logged the component's stderr already; one given as --agent has only this error to tell it.
            own = bool(options.proxies) or options.trace is not None
            message = exc.message if own else _component_failed(exc.message, exc.data)
            raise PromptFailed(message, ExitCode.AGENT_FAILED) from exc
        raise PromptFailed(f"The agent refused initialize: {exc}", ExitCode.AGENT_ERROR) from exc
    else:
        watch.answered = True
    finally:
        if still_waiting is not None:
            still_waiting.cancel()
        watch.stop()
    if (summary := watch.summary()) is not None:
        _log.warning("%s", summary)
    return response


def _still_waiting(process: AgentProcess | None, limit: float | None) -> str:
    """The note for an agent slow to answer ``initialize``: why that usually is, how to stop or wait."""
    name = _named(process)
    until = f"gives up after {limit:g} s" if limit is not None else "waits with no limit"
    return (
        f"still waiting for the agent{name} to answer initialize ({STILL_WAITING_AFTER:g} s so far): the "
        "program may not be an ACP agent, may need a flag such as --acp, or may be waiting for a login; "
        f"acpio {until} (--init-timeout SECONDS changes that), Ctrl-C stops now"
    )


def _echoes(process: AgentProcess | None) -> str:
    name = _named(process)
    return (
        f"The agent{name} sent acpio's own messages back (its initialize request, then acpio's answer to "
        "it): it echoes its input, as cat does, and is not an ACP agent. Check the command: it must start "
        "an ACP agent (some need a flag such as --acp)"
    )


async def _new_session(
    cx: SessionConnection, root: Path, initialized: InitializeResponse | None, options: PromptOptions
) -> ActiveSession:
    request = NewSessionRequest(cwd=str(root), mcp_servers=[])
    if options.add_dirs:
        request.additional_directories = [str(directory.resolve()) for directory in options.add_dirs]
    try:
        return await _with_mcp_servers(cx.build_session_from(request), options).start_session()
    except CapabilityNotAdvertised as exc:
        raise _not_taken(exc) from exc
    except AuthRequired as exc:
        offered = initialized.auth_methods if initialized is not None else None
        methods = ", ".join(str(getattr(m, "id", m)) for m in offered or ()) or "none"
        raise PromptFailed(
            f"The agent requires authentication before session/new ({exc.message}); log in with "
            f"--auth METHOD (its methods: {methods})",
            ExitCode.AGENT_ERROR,
        ) from exc
    except RequestError as exc:
        raise PromptFailed(f"The agent refused session/new: {exc}", ExitCode.AGENT_ERROR) from exc


async def _continue_session(
    cx: SessionConnection, options: PromptOptions, root: Path, renderer: Renderer
) -> ActiveSession:
    """``session/load`` (showing the replayed history) or else ``session/resume``, as the agent can."""
    session_id = options.session_id
    assert session_id is not None
    features = cx.agent_features
    builder: SessionBuilder[Any]
    if features is not None and features.load_session:
        builder = cx.build_session_load(session_id, root)
    elif features is not None and features.resume_session:
        builder = cx.build_session_resume(session_id, root)
    else:
        raise PromptFailed(
            f"The agent cannot continue session {session_id!r}: it advertises neither loadSession "
            "(session/load) nor sessionCapabilities.resume (session/resume). Leave out --session to "
            "start a new session.",
            ExitCode.USAGE,
        )
    try:
        session = await _with_mcp_servers(builder, options).start_session()
    except CapabilityNotAdvertised as exc:
        raise _not_taken(exc) from exc
    except RequestError as exc:
        raise PromptFailed(
            f"The agent refused {builder.method} for session {session_id!r}: {exc}", ExitCode.AGENT_ERROR
        ) from exc
    _show_history(session, renderer)
    return session


async def _resume_v2_session(
    cx: SessionConnection, session_id: str, root: Path, options: PromptOptions
) -> ActiveSession:
    """v2's ``session/resume`` of ``session_id``: the session goes on where it was."""
    builder = cx.build_session_resume(session_id, root)
    try:
        return await _with_mcp_servers(builder, options).start_session()
    except RequestError as exc:
        raise PromptFailed(
            f"The agent refused session/resume for session {session_id!r}: {exc}", ExitCode.AGENT_ERROR
        ) from exc


def _with_mcp_servers(builder: SessionBuilder[Any], options: PromptOptions) -> SessionBuilder[Any]:
    """``--mcp``: the declared servers, and those acpio serves itself over the connection."""
    declared = [server for server in options.mcp_servers if not hasattr(server, "attach")]
    if declared:
        builder = builder.with_mcp_server(McpServerList(declared))
    for hosted in (server for server in options.mcp_servers if hasattr(server, "attach")):
        builder = builder.with_mcp_server(hosted)
    return builder


def _not_taken(exc: CapabilityNotAdvertised) -> PromptFailed:
    """An ``--add-dir`` or ``--mcp`` the agent does not advertise: a usage mistake, said before sending."""
    if "additionalDirectories" in str(exc):
        return PromptFailed(
            f"--add-dir: the agent does not take more directories than its cwd ({exc})", ExitCode.USAGE
        )
    return PromptFailed(f"--mcp: the agent does not take this kind of MCP server ({exc})", ExitCode.USAGE)


def _show_history(session: ActiveSession, renderer: Renderer) -> None:
    """Show, dimmed, the conversation ``session/load`` replayed (nothing for ``session/resume``)."""
    shown = False
    for message in session.history:
        try:
            update = message.update
        except InvalidParams as exc:
            _log.warning("Skipping a replayed session/update that does not match the schema: %s", exc)
            continue
        if update is None:
            continue
        if not shown:
            shown = True
            renderer.begin_history(session.session_id)
        renderer.update(update, history=True)
    if shown:
        renderer.end_history()


class _ExtensionNotes:
    """``--verbose``: a note for each extension notification of the agent (``_vendor/...``)."""

    def __init__(self, notes: Notes) -> None:
        self._notes = notes

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        if isinstance(message, NotificationDispatch) and message.method.startswith("_"):
            params = orjson.dumps(message.params).decode() if message.params is not None else ""
            self._notes.note(f"extension notification {message.method} {params}".rstrip())
        return Unhandled(message)


class _OtherSessions:
    """Answers at once what the agent sends for a session other than the run's: ``-32002`` for a request.

    The client role parks a message for an unknown session until that session's handler exists;
    ``acpio prompt`` has one session, so none ever will. A notification is dropped.
    """

    def __init__(self, session_id: str, renderer: Renderer) -> None:
        self._session_id = session_id
        self._renderer = renderer

    async def handle(self, message: Dispatch, cx: Connection) -> Unhandled | None:
        session_id = message.session_id
        if type(message) is ResponseDispatch or session_id is None or session_id == self._session_id:
            return Unhandled(message)
        if type(message) is RequestDispatch:
            assert isinstance(message, RequestDispatch)
            error = ResourceNotFound(
                {"sessionId": session_id},
                message=f"{message.method}: there is no session {session_id!r} here (acpio prompt has one "
                f"session, {self._session_id!r})",
            )
            message.responder.respond_with_error(error)
            self._renderer.request_failed(message.method, error.message)
        else:
            _log.debug("Dropping %s for unknown session %r", message.method, session_id)
        return None


def _agent_gone(process: AgentProcess | None, exc: AcpError, watch: StdoutWatch) -> str:
    """One line saying how the agent went away, then the last lines of its stderr."""
    if process is None:
        return f"The agent closed the connection: {exc}"
    name = process.command.display()
    waiting = f" before answering {exc.method}" if isinstance(exc, ConnectionClosed) and exc.method else ""
    if not watch.answered:
        waiting = f" before answering initialize{_not_an_agent(watch)}"
    returncode = process.returncode
    cause = exc.__cause__ if isinstance(exc.__cause__, TransportError) else exc
    if returncode is not None:
        how = (
            f"was killed by {_signal_name(-returncode)}"
            if returncode < 0
            else f"exited with exit code {returncode}"
        )
        headline = f"The agent {name!r} {how}{waiting}"
    elif isinstance(cause, TransportError):  # a read or write failure while it still runs
        headline = str(cause).split("\n", 1)[0].rstrip(".")
    else:
        headline = f"The agent {name!r} closed the connection{waiting}"
    tail = process.stderr_tail
    if not tail:
        return f"{headline}; it wrote nothing on stderr."
    lines = tail.splitlines()[-_STDERR_LINES:]
    return f"{headline}. The end of its stderr:\n" + "\n".join(f"  | {line}" for line in lines)


def _component_failed(message: str, data: dict[str, object]) -> str:
    """A conductor's error about a component it lost: its message, then the component's stderr it sent."""
    tail = data.get("stderr")
    if not isinstance(tail, str) or not tail.strip():
        return message
    lines = tail.splitlines()[-_STDERR_LINES:]
    return f"{message}. The end of its stderr:\n" + "\n".join(f"  | {line}" for line in lines)


def _not_an_agent(watch: StdoutWatch) -> str:
    """Why an agent gone before answering ``initialize`` may be no ACP agent: what it printed, if anything."""
    if watch.echoed:
        return ", after sending acpio's own messages back (it echoes its input, as cat does): no ACP agent"
    if watch.first_non_json is not None:
        printed = f"after writing {watch.first_non_json!r} on its stdout, which is not ACP"
    else:
        printed = "without writing anything on its stdout"
    return f", {printed}: check that the command starts an ACP agent (some need a flag such as --acp)"


def _unsupported_version(error: UnsupportedProtocolVersion, protocol: ProtocolChoice) -> str:
    """The error of an agent answering another version than ``--protocol``: which flag works with it."""
    if protocol == 2 and error.version == 1:
        return (
            "The agent speaks ACP protocol version 1, but this client speaks only 2 (--protocol 2): "
            "leave --protocol out (acpio then negotiates and speaks v1 with it) or pass --protocol 1."
        )
    return str(error)


def _no_initialize_answer(process: AgentProcess | None, limit: float, first_non_json: str | None) -> str:
    """One line saying the agent did not answer ``initialize``, with a hint, then the end of its stderr."""
    name = _named(process)
    if first_non_json is not None:
        headline = (
            f"The agent{name} did not answer initialize within {limit:g} s, and what it wrote on its "
            f"stdout is not ACP: {first_non_json!r}. An ACP agent writes only JSON-RPC messages there; "
            "check that the command starts the agent in its ACP mode (a flag such as --acp), or that "
            "it is an ACP agent at all"
        )
    else:
        headline = (
            f"The agent{name} did not answer initialize within {limit:g} s: it may be waiting for input "
            "(a login or setup question), may not speak ACP on its stdin and stdout (check its command "
            "and flags), or may need longer to start (--init-timeout SECONDS, 0 to wait forever)"
        )
    tail = process.stderr_tail if process is not None else None
    if not tail:
        return f"{headline}; it wrote nothing on stderr."
    lines = tail.splitlines()[-_STDERR_LINES:]
    return f"{headline}. The end of its stderr:\n" + "\n".join(f"  | {line}" for line in lines)


def _named(process: AgentProcess | None) -> str:
    """`` 'COMMAND'``, the agent's command quoted after a space; empty for an agent run in-process."""
    return f" {process.command.display()!r}" if process is not None else ""


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _rule_policy(options: PromptOptions, ask: PermissionPolicy | None, err: TextIO) -> PermissionPolicy:
    """``--policy FILE``: its rules, asking ``ask``; a decision no one was asked about is noted on ``err``."""
    from acpio.client import PolicyDecision, PolicyFileError, load_policy

    def note(decision: PolicyDecision) -> None:
        if decision.decided_by != "asked":
            what = decision.subject.title or decision.subject.command_line or decision.subject.tool_call_id
            answer = decision.option_id or "cancelled"
            print(f"acpio: policy: {what}: {answer} ({decision.reason})", file=err, flush=True)

    assert options.policy is not None
    try:
        return load_policy(options.policy, root=options.cwd, ask=ask, on_decision=note)
    except PolicyFileError as error:
        raise PromptFailed(f"--policy: {error}", ExitCode.USAGE) from None
