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
import functools
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, TextIO, cast

import orjson

from acpio._process_control import handling_endings, signal_exit_code
from acpio.client.files import ConfinedFiles
from acpio.client.permissions import AllowPolicy, DenyPolicy, PermissionPolicy
from acpio.errors import (
    AcpError,
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
from acpio.oneshot.answers import RequestAnswers
from acpio.oneshot.controls import ControlError, apply_controls
from acpio.oneshot.elicitation import Elicitor
from acpio.oneshot.failures import agent_gone
from acpio.oneshot.interactive import CommandWatch, LineReader, PipeReader, TerminalReader, converse
from acpio.oneshot.notes import Notes, StdoutWatch, logging_to, specification_warnings_to
from acpio.oneshot.opening import open_session
from acpio.oneshot.options import (
    SESSIONS_END_WITH_PROCESS,
    ExitCode,
    OutputMode,
    PromptFailed,
    PromptOptions,
)
from acpio.oneshot.permissions import AskPolicy, LineInput
from acpio.oneshot.render import JsonLinesRenderer, PlainRenderer, Renderer
from acpio.oneshot.sanitize import sanitize
from acpio.oneshot.scoped_elicitations import RequestScopedElicitations
from acpio.oneshot.terminals import Terminals
from acpio.profiles import GuardedTransport, ProfileGuard
from acpio.roles import Client
from acpio.session import ActiveSession, SessionConnection, SessionMessage, TurnEnded
from acpio.session.messages import UPDATE_METHOD
from acpio.session.turn_view import text_chunk
from acpio.transports import AcpAgent, AgentCommand, AgentProcess, Component, Direction, OversizedFrame, Tap

__all__ = ["run_prompt"]

_log = logging.getLogger("acpio.oneshot")


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
                message = agent_gone(self._agent_process, exc, self._watch)
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
            elicitor = self._answers.elicitor
            outside = RequestScopedElicitations(elicitor.answer, completed=elicitor.complete)
            cx.add_dynamic_handler(outside).run_indefinitely()
        if self._options.verbose:
            cx.add_dynamic_handler(_ExtensionNotes(self._notes)).run_indefinitely()
        cx.add_dynamic_handler(self._commands).run_indefinitely()
        self._renderer.status("waiting for the agent to initialize")
        session = await open_session(
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
        if (
            session is not None
            and self._turn_running
            and not self._tool_call_cancel_sent
            and _cancel_tool_call(session, self._note)
        ):
            self._tool_call_cancel_sent = True
            return
        if session is not None and self._turn_running and not self._answers.cancelled.is_set():
            self._answers.cancelled.set()
            with contextlib.suppress(AcpError):
                session.cancel()
            self._note("cancelling the turn (press Ctrl-C again to stop at once)", fresh_line=True)
            return
        self._abort()

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


def _cancel_tool_call(session: ActiveSession, note: Callable[..., None]) -> bool:
    """v2: a Ctrl-C sends ``tool_call/cancel`` for a running tool call that allows it.

    Like a shell's Ctrl-C, it stops the work under way and the turn goes on; the next Ctrl-C
    cancels the turn. ``False``: no such tool call (or v1), cancel the turn.
    """
    from acpio.schema import v2

    running = [
        call
        for call in session.view.tool_calls.values()
        if call.cancellable and call.status not in ("completed", "failed", "cancelled")
    ]
    if session.protocol_version != 2 or not running:
        return False
    call = running[-1]
    request = v2.CancelToolCallRequest(session_id=session.session_id, tool_call_id=call.tool_call_id)

    async def refused(result: v2.CancelToolCallResponse | AcpError) -> None:
        if isinstance(result, AcpError):
            note(f"the agent refused tool_call/cancel: {result}")

    with contextlib.suppress(AcpError):
        session.connection.send_request(request).on_receiving_result(refused)
    note(
        f"cancelling {call.title or call.tool_call_id} (tool_call/cancel; Ctrl-C again cancels the turn)",
        fresh_line=True,
    )
    return True


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
