"""What each testy command does on ACP v2: one function per command.

The language is v1's (:mod:`acpio.agents.testy.script`, parsed with ``version=2``), with v2's
meanings where the protocol changed: ``read``, ``write`` and ``run`` do the work in testy's process
(v2 has no client file system or terminals) and show it as tool calls, a structured diff and an
agent-owned terminal; ``permission`` asks with a ``title`` and a tool-call ``subject``, the turn
``requires_action`` meanwhile; ``plan`` sends ``plan_update``. Three commands exist on v2 only:
``work`` (a tool call the client may cancel with ``tool_call/cancel``), ``background`` (a message
sent after the turn, while the session is idle) and ``replace`` (an ``agent_message`` upsert).

:func:`run_prompt` is the turn's body; the caller (:mod:`acpio.agents.testy.v2.agent`) sends the
state updates around it. Each command returns ``None`` to go on or a stop reason to end the turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from pathlib import Path
from typing import Final

from acpio.agents.testy.commands import CONTEXT_SIZE
from acpio.agents.testy.script import (
    V2_COMMANDS,
    Background,
    Command,
    Commands,
    Echo,
    Exit,
    Fail,
    Hang,
    Help,
    Notify,
    Option,
    Permission,
    Plan,
    Progress,
    Read,
    Replace,
    Run,
    Script,
    Sleep,
    Stop,
    Stream,
    Think,
    Timeout,
    Title,
    Tool,
    Usage,
    Work,
    Write,
    command_table,
    split_words,
)
from acpio.agents.testy.turn import TurnCancelled, end_process
from acpio.agents.testy.v2.convert import config_options
from acpio.agents.testy.v2.diffs import file_diff
from acpio.agents.testy.v2.terminals import AgentTerminal
from acpio.agents.testy.v2.turn import TurnV2, text_content
from acpio.errors import AcpError, InvalidParams, RequestError
from acpio.schema.v2 import (
    AgentMessageChunk,
    AvailableCommandsUpdate,
    CancelledPermissionOutcome,
    ConfigOptionUpdate,
    PermissionOption,
    PermissionOptionKind,
    PlanEntry,
    PlanEntryPriority,
    PlanEntryStatus,
    PlanItems,
    PlanUpdate,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    SessionInfoUpdate,
    Terminal,
    TerminalExitStatus,
    TextCommandInput,
    TextContent,
    ToolCallPermissionSubject,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    UpdateSessionNotification,
    UsageUpdate,
)
from acpio.schema.v2 import Command as SlashCommand

__all__ = ["PERMISSION_OPTIONS", "PLAN_ID", "check_fail", "help_text", "run_command", "run_prompt"]

#: The options of every ``permission`` request, in order (as on v1).
PERMISSION_OPTIONS: Final = (
    PermissionOption(option_id="allow-once", name="Allow once", kind=PermissionOptionKind.ALLOW_ONCE),
    PermissionOption(option_id="allow-always", name="Allow always", kind=PermissionOptionKind.ALLOW_ALWAYS),
    PermissionOption(option_id="reject-once", name="Reject", kind=PermissionOptionKind.REJECT_ONCE),
)
_ALLOWED: Final = frozenset({"allow-once", "allow-always"})
#: The id of the one plan a session has (``plan_update`` replaces its entries).
PLAN_ID: Final = "plan"
_STREAM_YIELD_EVERY: Final = 256


async def run_prompt(turn: TurnV2, text: str, script: Script | None) -> str:
    """Run the prompt (parsed as ``script``; ``None``: echo ``text``); the stop reason."""
    await turn.pause()
    if script is None:
        for word in split_words(text):
            turn.say(word)
        return "end_turn"
    if not script.ok:
        lines = "".join(f"  {error}\n" for error in script.errors)
        turn.say(
            "testy: this script has errors, so nothing was run:\n"
            f"{lines}Send `help` for the list of commands.\n"
        )
        return "end_turn"
    for line in script.lines:
        if turn.session.verbosity == "verbose":
            turn.think(f"running `{line.text}`\n")
        outcome = await run_command(turn, line.command)
        if outcome is not None:
            return outcome
        await turn.pause()
    return "end_turn"


async def run_command(turn: TurnV2, command: Command) -> str | None:
    """Run one command (the v2 ones; ``fail`` is handled before the prompt is accepted)."""
    match command:
        case Echo():
            for word in split_words(command.text):
                turn.say(word)
            turn.say("\n")
        case Stream():
            await stream(turn, command)
        case Think():
            turn.think(command.text)
        case Plan():
            turn.session.plan = command.steps
            send_plan(turn, done=0, started=False)
        case Progress():
            if not turn.session.plan:
                turn.say(
                    "progress: there is no plan in this session yet; send `plan STEP; STEP; ...` first\n"
                )
            else:
                send_plan(turn, done=command.done, started=True)
        case Tool():
            tool_call_id = turn.start_tool_call(command.title, ToolKind.OTHER, status=ToolCallStatus.PENDING)
            turn.update_tool_call(tool_call_id, ToolCallStatus.IN_PROGRESS)
            turn.end_tool_call(
                tool_call_id, ToolCallStatus.COMPLETED, [text_content(f"{command.title}: done")]
            )
        case Read():
            await read(turn, command)
        case Write():
            await write(turn, command)
        case Permission():
            return await permission(turn, command)
        case Run() | Timeout():
            await run(turn, command)
        case Work():
            await work(turn, command)
        case Background():
            background(turn, command)
        case Replace():
            turn.replace(command.text)
        case Notify():
            turn.cx.send_notification(command.method, command.params)
        case Sleep():
            await turn.sleep(command.seconds)
        case Hang():
            await turn.hang(command.seconds)
        case Exit():
            end_process(command.code, command.message)
        case Stop():
            return command.reason
        case Title():
            turn.session.title = command.text
            turn.send(SessionInfoUpdate(title=command.text))
        case Option():
            option(turn, command)
        case Commands():
            commands = [
                SlashCommand(name=spec.name, description=spec.summary_in(2), **_hint(spec.args))
                for spec in V2_COMMANDS
            ]
            turn.send(AvailableCommandsUpdate(available_commands=commands))
        case Usage():
            turn.send(UsageUpdate(used=turn.session.history_words(), size=CONTEXT_SIZE))
        case Help():
            turn.say(help_text(brief=turn.session.verbosity == "brief"))
        case _:
            raise ValueError(f"{command!r} is not a command of ACP v2")  # the parser refuses these
    return None


def _hint(args: str) -> dict[str, TextCommandInput]:
    return {"input": TextCommandInput(hint=args)} if args else {}


def help_text(*, brief: bool = False) -> str:
    """The text ``help`` answers with on v2."""
    if brief:
        return "testy commands: " + ", ".join(spec.name for spec in V2_COMMANDS) + "\n"
    return (
        "testy runs a prompt as a script when its first line starts with a command, one command per line "
        "(# starts a comment); anything else is echoed back.\n" + command_table(version=2) + "\n"
    )


async def stream(turn: TurnV2, command: Stream) -> None:
    """``stream N [TEXT]``: N identical chunks of the turn's message, encoded once."""
    message_id = turn.agent_message_id
    update = AgentMessageChunk(message_id=message_id, content=TextContent(text=command.text))
    notification = UpdateSessionNotification(session_id=turn.session.session_id, update=update)
    method, params = UpdateSessionNotification.METHOD, notification.to_wire()
    for sent in range(command.count):
        if sent % _STREAM_YIELD_EVERY == 0 and sent:
            await turn.pause()
        turn.cx.send_notification(method, params)
        await turn.cx.drain()
        turn.session.remember_agent(command.text, message_id)


def send_plan(turn: TurnV2, *, done: int, started: bool) -> None:
    """``plan_update`` of the session's plan: ``done`` entries completed, the next one in progress."""
    entries = []
    for index, step in enumerate(turn.session.plan):
        if index < done:
            status = PlanEntryStatus.COMPLETED
        elif index == done and started:
            status = PlanEntryStatus.IN_PROGRESS
        else:
            status = PlanEntryStatus.PENDING
        entries.append(PlanEntry(content=step, priority=PlanEntryPriority.MEDIUM, status=status))
    turn.send(PlanUpdate(plan=PlanItems(plan_id=PLAN_ID, entries=entries)))


def option(turn: TurnV2, command: Option) -> None:
    """``option ID VALUE``: change a config option, send every option (``config_option_update``)."""
    value: str | bool = command.value
    if command.config_id != "verbosity" and command.value in ("true", "false"):
        value = command.value == "true"
    try:
        turn.session.set_config_option(command.config_id, value)
    except InvalidParams as error:
        turn.say(f"option: {error.message}\n")
        return
    turn.send(ConfigOptionUpdate(config_options=config_options(turn.session)))


# --- files: testy reads and writes them itself -----------------------------------------------------


async def read(turn: TurnV2, command: Read) -> None:
    """``read PATH``: a read tool call whose content is the file's text (testy reads it)."""
    path = turn.session.resolve(command.path)
    tool_call_id = turn.start_tool_call(
        f"Read {command.path}", ToolKind.READ, path=path, raw_input={"path": path}
    )
    try:
        text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        turn.fail_tool_call(tool_call_id, f"testy cannot read {path}: {error}")
        return
    turn.end_tool_call(tool_call_id, ToolCallStatus.COMPLETED, [text_content(text)])


async def write(turn: TurnV2, command: Write) -> None:
    """``write PATH TEXT``: an edit tool call; testy writes the file and shows ``changes`` and a git patch."""
    path = turn.session.resolve(command.path)
    tool_call_id = turn.start_tool_call(
        f"Write {command.path}", ToolKind.EDIT, path=path, raw_input={"path": path, "content": command.text}
    )
    file = Path(path)
    try:
        old_text: str | None = await asyncio.to_thread(file.read_text, encoding="utf-8")
    except FileNotFoundError:
        old_text = None
    except (OSError, UnicodeDecodeError) as error:
        turn.fail_tool_call(tool_call_id, f"testy cannot read {path} before writing it: {error}")
        return
    try:
        await asyncio.to_thread(file.write_text, command.text, encoding="utf-8")
    except OSError as error:
        turn.fail_tool_call(tool_call_id, f"testy cannot write {path}: {error}")
        return
    turn.end_tool_call(tool_call_id, ToolCallStatus.COMPLETED, [file_diff(path, old_text, command.text)])


# --- permission -----------------------------------------------------------------------------------


async def permission(turn: TurnV2, command: Permission) -> str | None:
    """``permission [TITLE]``: ask about an edit tool call (the ``subject``); a refusal stops the script.

    The turn is ``requires_action`` while the client answers, ``running`` again after.
    """
    title = command.title or "testy asks for permission"
    tool_call_id = turn.session.next_tool_call_id()
    call = ToolCallUpdate(
        tool_call_id=tool_call_id, title=title, kind=ToolKind.EDIT, status=ToolCallStatus.PENDING
    )
    request = RequestPermissionRequest(
        session_id=turn.session.session_id,
        title=title,
        description="testy's permission command: allow to go on, anything else stops the script",
        subject=ToolCallPermissionSubject(tool_call=call),
        options=list(PERMISSION_OPTIONS),
    )
    turn.requires_action()
    try:
        response: RequestPermissionResponse = await turn.ask(request)
    except AcpError as error:
        answer, allowed = f"error ({error})", False
    else:
        outcome = response.outcome
        if isinstance(outcome, SelectedPermissionOutcome):
            answer, allowed = outcome.option_id, outcome.option_id in _ALLOWED
        elif isinstance(outcome, CancelledPermissionOutcome):
            answer, allowed = "cancelled", False
        else:  # v2: an unknown outcome is never an approval
            answer, allowed = "unknown outcome", False
    if turn.cancelled:
        turn.end_tool_call(tool_call_id, ToolCallStatus.CANCELLED)
        raise TurnCancelled()
    turn.running()
    turn.end_tool_call(tool_call_id, ToolCallStatus.COMPLETED if allowed else ToolCallStatus.FAILED)
    turn.say(f"permission: {answer}\n")
    if allowed:
        return None
    turn.say("Permission denied: stopping.\n")
    return "end_turn"


# --- agent-owned terminals ------------------------------------------------------------------------


async def run(turn: TurnV2, command: Run | Timeout) -> None:
    """``run``/``timeout``: the command in an agent terminal, shown in an execute tool call.

    The terminal is announced (``terminal_update``), its output streamed; ``terminal/cancel`` (or
    the ``timeout``) kills it. Then a message with the output and the exit status, and the tool call
    ``completed`` for exit status 0, else ``failed``.
    """
    argv = [command.command, *command.args]
    tool_call_id = turn.start_tool_call(
        shlex.join(argv), ToolKind.EXECUTE, raw_input={"command": command.command, "args": list(command.args)}
    )
    terminal = AgentTerminal(turn.session.next_id("terminal"), argv, turn.session.cwd, turn.send)
    try:
        await terminal.start()
    except OSError as error:
        turn.fail_tool_call(tool_call_id, f"testy cannot run {command.command}: {error}")
        return
    turn.terminals[terminal.terminal_id] = terminal
    turn.update_tool_call(tool_call_id, content=[Terminal(terminal_id=terminal.terminal_id)])
    limit = command.seconds if isinstance(command, Timeout) else None
    try:
        status = await turn.until_cancelled(_wait(terminal, limit))
    except (TurnCancelled, asyncio.CancelledError):
        terminal.cancel()
        raise
    finally:
        turn.terminals.pop(terminal.terminal_id, None)
    text = terminal.output
    if text and not text.endswith("\n"):
        text += "\n"
    if limit is not None and terminal.killed:
        text += f"killed after {limit:g} s\n"
    ending = f"exit status {status.exit_code}" if status.exit_code is not None else f"signal {status.signal}"
    turn.say(f"{text}{ending}\n")
    turn.end_tool_call(
        tool_call_id, ToolCallStatus.COMPLETED if status.exit_code == 0 else ToolCallStatus.FAILED
    )


async def _wait(terminal: AgentTerminal, limit: float | None) -> TerminalExitStatus:
    """The terminal's exit; past ``limit`` seconds, the command is killed first."""
    waiting = asyncio.ensure_future(terminal.wait())
    if limit is not None:
        done, _ = await asyncio.wait((waiting,), timeout=limit)
        if not done:
            terminal.cancel()
    return await waiting


# --- v2 only --------------------------------------------------------------------------------------


async def work(turn: TurnV2, command: Work) -> None:
    """``work SECONDS TITLE``: a tool call that advertises ``capabilities.cancel`` and takes SECONDS.

    ``tool_call/cancel`` ends it ``cancelled`` (and the script goes on); otherwise ``completed``.
    """
    tool_call_id = turn.start_tool_call(command.title, ToolKind.OTHER, cancellable=True)
    cancelled = turn.cancellable[tool_call_id]
    try:
        with contextlib.suppress(TimeoutError):
            await turn.until_cancelled(asyncio.wait_for(cancelled.wait(), command.seconds))
    except TurnCancelled:
        turn.end_tool_call(tool_call_id, ToolCallStatus.CANCELLED)
        raise
    if cancelled.is_set():
        turn.end_tool_call(
            tool_call_id, ToolCallStatus.CANCELLED, [text_content(f"{command.title}: cancelled")]
        )
        turn.say(f"work: {command.title} was cancelled\n")
    else:
        turn.end_tool_call(tool_call_id, ToolCallStatus.COMPLETED, [text_content(f"{command.title}: done")])


def background(turn: TurnV2, command: Background) -> None:
    """``background SECONDS TEXT``: SECONDS after the turn's end, TEXT as a new message."""
    session = turn.session

    async def later() -> None:
        await turn.wait_finished()
        await asyncio.sleep(command.seconds)
        message_id = session.new_message_id("agent")
        session.remember_agent(command.text, message_id)
        turn.send(AgentMessageChunk(message_id=message_id, content=TextContent(text=command.text)))

    turn.cx.spawn(later)
    turn.say(f"background: in {command.seconds:g} s\n")


def check_fail(script: Script | None) -> RequestError | None:
    """The error of the script's first ``fail`` line: on v2 it refuses the prompt before it is accepted."""
    for line in script.lines if script is not None and script.ok else ():
        if isinstance(line.command, Fail):
            return RequestError(line.command.code, line.command.message)
    return None
