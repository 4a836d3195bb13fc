"""What each testy command does on the wire: one function per command.

:func:`run_prompt` is the whole turn: it parses the prompt (see :mod:`acpio.agents.testy.script`),
echoes it back if it is not a script, reports the errors if the script does not parse, and
otherwise runs the commands in order. Each command function returns ``None`` to go on, a
:class:`~acpio.schema.StopReason` to end the turn, or a :class:`~acpio.RequestError` to answer the
prompt with (``fail``). A client request that fails is reported in the command's tool call and the
script goes on; a cancel raises :class:`~acpio.agents.testy.turn.TurnCancelled` out of any wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
from typing import Any, Final, TypeAlias

import orjson

from acpio.agents.testy.script import (
    COMMANDS,
    Command,
    Commands,
    Compact,
    Echo,
    Elicit,
    ElicitUrl,
    Exit,
    Fail,
    Hang,
    Help,
    Mcp,
    Mode,
    Notice,
    Notify,
    Option,
    Permission,
    Plan,
    Progress,
    Read,
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
    Write,
    command_table,
    parse_prompt,
    split_words,
)
from acpio.agents.testy.turn import TestyTurn, TurnCancelled, end_process, text_content
from acpio.errors import AcpError, InvalidParams, RequestError
from acpio.schema import (
    AgentMessageChunk,
    AvailableCommand,
    AvailableCommandsUpdate,
    BooleanPropertySchema,
    CancelledPermissionOutcome,
    CompactionSummaryChunk,
    CompactionUpdate,
    CompleteElicitationNotification,
    ConfigOptionUpdate,
    CreateElicitationRequest,
    CreateElicitationResponse,
    CreateTerminalRequest,
    CurrentModeUpdate,
    Diff,
    ElicitationSchema,
    EnumOption,
    IntegerPropertySchema,
    KillTerminalRequest,
    MultiSelectPropertySchema,
    NumberPropertySchema,
    PermissionOption,
    PermissionOptionKind,
    PlanEntry,
    PlanEntryPriority,
    PlanEntryStatus,
    ReadTextFileRequest,
    ReadTextFileResponse,
    ReleaseTerminalRequest,
    RequestPermissionRequest,
    SelectedPermissionOutcome,
    SessionInfoUpdate,
    SessionNotification,
    StopReason,
    StringMultiSelectItems,
    StringPropertySchema,
    Terminal,
    TerminalOutputRequest,
    TerminalOutputResponse,
    TextContent,
    ToolCallContent,
    ToolCallStatus,
    ToolCallUpdate,
    ToolKind,
    UnstructuredCommandInput,
    UsageUpdate,
    WaitForTerminalExitRequest,
    WaitForTerminalExitResponse,
    WriteTextFileRequest,
)
from acpio.schema import Notice as NoticeUpdate
from acpio.schema import Plan as PlanUpdate

__all__ = [
    "CONTEXT_SIZE",
    "ELICITATION_FORM",
    "PERMISSION_OPTIONS",
    "Outcome",
    "help_text",
    "run_command",
    "run_prompt",
]

#: What a command function returns: ``None`` (go on), a stop reason, or an error to answer with.
Outcome: TypeAlias = StopReason | RequestError | None

#: The options of every ``permission`` request, in order.
PERMISSION_OPTIONS: Final = (
    PermissionOption(option_id="allow-once", name="Allow once", kind=PermissionOptionKind.ALLOW_ONCE),
    PermissionOption(option_id="allow-always", name="Allow always", kind=PermissionOptionKind.ALLOW_ALWAYS),
    PermissionOption(option_id="reject-once", name="Reject", kind=PermissionOptionKind.REJECT_ONCE),
)
_ALLOWED: Final = frozenset({"allow-once", "allow-always"})

#: The context window ``usage`` reports (``used`` is the number of words in the session's history).
CONTEXT_SIZE: Final = 200_000

#: The form ``elicit`` asks the user to fill: one field of every kind the schema has.
ELICITATION_FORM: Final = ElicitationSchema(
    type="object",
    title="testy wants to know you",
    properties={
        "name": StringPropertySchema(title="Name", description="What to call you", min_length=1),
        "email": StringPropertySchema(title="Email", format="email"),
        "age": IntegerPropertySchema(title="Age", minimum=0, maximum=150),
        "ratio": NumberPropertySchema(title="Ratio", description="From 0 to 1", minimum=0, maximum=1),
        "subscribe": BooleanPropertySchema(title="Subscribe", default=False),
        "colour": StringPropertySchema(title="Colour", enum=["red", "green", "blue"], default="green"),
        "size": StringPropertySchema(
            title="Size",
            one_of=[
                EnumOption(const="s", title="Small"),
                EnumOption(const="m", title="Medium"),
                EnumOption(const="l", title="Large"),
            ],
        ),
        "tags": MultiSelectPropertySchema(
            title="Tags", items=StringMultiSelectItems(enum=["python", "rust", "typescript"]), max_items=2
        ),
    },
    required=["name"],
)

# ``stream`` lets the dispatch loop run (to see a cancel, and to let the writer flush) this often.
_STREAM_YIELD_EVERY: Final = 256


async def run_prompt(turn: TestyTurn, text: str) -> StopReason | RequestError:
    """Run one prompt's text: echo it, report its script errors, or run its script."""
    await turn.pause()  # a cancel sent right behind the prompt is seen before anything is said
    script = parse_prompt(text)
    if script is None:
        for word in split_words(text):
            turn.say(word)
        return StopReason.END_TURN
    if not script.ok:
        turn.say(_errors_text(script))
        return StopReason.END_TURN
    for line in script.lines:
        if turn.session.verbosity == "verbose":
            turn.think(f"running `{line.text}`\n")
        outcome = await run_command(turn, line.command)
        if outcome is not None:
            return outcome
        await turn.pause()  # the next step: a cancel that came meanwhile ends the turn here
    return StopReason.END_TURN


def _errors_text(script: Script) -> str:
    lines = [f"  {error}" for error in script.errors]
    return (
        "testy: this script has errors, so nothing was run:\n"
        + "\n".join(lines)
        + "\nSend `help` for the list of commands.\n"
    )


async def run_command(turn: TestyTurn, command: Command) -> Outcome:
    """Run one command."""
    match command:
        case Echo():
            return echo(turn, command)
        case Stream():
            return await stream(turn, command)
        case Think():
            return think(turn, command)
        case Plan():
            return plan(turn, command)
        case Progress():
            return progress(turn, command)
        case Tool():
            return tool(turn, command)
        case Read():
            return await read(turn, command)
        case Write():
            return await write(turn, command)
        case Permission():
            return await permission(turn, command)
        case Run():
            return await run(turn, command)
        case Timeout():
            return await timeout(turn, command)
        case Notify():
            return notify(turn, command)
        case Mcp():
            return await mcp(turn, command)
        case Sleep():
            return await sleep(turn, command)
        case Hang():
            await turn.hang(command.seconds)
            return None
        case Exit():
            end_process(command.code, command.message)
        case Fail():
            return fail(turn, command)
        case Stop():
            return stop(turn, command)
        case Mode():
            return mode(turn, command)
        case Title():
            return title(turn, command)
        case Notice():
            return notice(turn, command)
        case Compact():
            return compact(turn, command)
        case Option():
            return option(turn, command)
        case Elicit():
            return await elicit(turn, command)
        case ElicitUrl():
            return await elicit_url(turn, command)
        case Commands():
            return commands(turn, command)
        case Usage():
            return usage(turn, command)
        case Help():
            return help_(turn, command)
        case _:
            raise ValueError(f"{command!r} is not a command of ACP v1")  # the parser refuses these


# --- messages -------------------------------------------------------------------------------------


def echo(turn: TestyTurn, command: Echo) -> Outcome:
    """``echo TEXT``: one chunk per word (each keeps the spaces after it), then a newline chunk."""
    for word in split_words(command.text):
        turn.say(word)
    turn.say("\n")
    return None


async def stream(turn: TestyTurn, command: Stream) -> Outcome:
    """``stream N [TEXT]``: N identical chunks, encoded once and sent as fast as the loop allows."""
    notification = SessionNotification(
        session_id=turn.session.session_id, update=AgentMessageChunk(content=TextContent(text=command.text))
    )
    method, params = SessionNotification.METHOD, notification.to_wire()
    for sent in range(command.count):
        if sent % _STREAM_YIELD_EVERY == 0 and sent:
            await turn.pause()
        turn.cx.send_notification(method, params)
        await turn.cx.drain()  # at the client's pace: a stalled reader must not grow this process
        turn.session.remember_agent(command.text)
    return None


def think(turn: TestyTurn, command: Think) -> Outcome:
    """``think TEXT``: one thought chunk."""
    turn.think(command.text)
    return None


def help_(turn: TestyTurn, command: Help) -> Outcome:
    """``help``: the command list (only the words with verbosity ``brief``)."""
    turn.say(help_text(brief=turn.session.verbosity == "brief"))
    return None


def help_text(*, brief: bool = False) -> str:
    """The text ``help`` answers with."""
    if brief:
        return "testy commands: " + ", ".join(spec.name for spec in COMMANDS) + "\n"
    return (
        "testy runs a prompt as a script when its first line starts with a command, one command per line "
        "(# starts a comment); anything else is echoed back.\n" + command_table() + "\n"
    )


# --- plans and tool calls -------------------------------------------------------------------------


def plan(turn: TestyTurn, command: Plan) -> Outcome:
    """``plan STEP; STEP``: remember the steps, send them all pending."""
    turn.session.plan = command.steps
    return _send_plan(turn, done=0, started=False)


def progress(turn: TestyTurn, command: Progress) -> Outcome:
    """``progress N``: the whole plan again, N entries completed and the next one in progress."""
    if not turn.session.plan:
        turn.say("progress: there is no plan in this session yet; send `plan STEP; STEP; ...` first\n")
        return None
    return _send_plan(turn, done=command.done, started=True)


def _send_plan(turn: TestyTurn, *, done: int, started: bool) -> Outcome:
    entries = []
    for index, step in enumerate(turn.session.plan):
        if index < done:
            status = PlanEntryStatus.COMPLETED
        elif index == done and started:
            status = PlanEntryStatus.IN_PROGRESS
        else:
            status = PlanEntryStatus.PENDING
        entries.append(PlanEntry(content=step, priority=PlanEntryPriority.MEDIUM, status=status))
    turn.send_update(PlanUpdate(entries=entries))
    return None


def tool(turn: TestyTurn, command: Tool) -> Outcome:
    """``tool TITLE``: a tool call, pending, then in progress, then completed with text content."""
    tool_call_id = turn.start_tool_call(command.title, ToolKind.OTHER, status=ToolCallStatus.PENDING)
    turn.update_tool_call(tool_call_id, ToolCallStatus.IN_PROGRESS)
    turn.update_tool_call(tool_call_id, ToolCallStatus.COMPLETED, [text_content(f"{command.title}: done")])
    return None


def _client_error_text(error: AcpError) -> str:
    """What the client said when a request failed: its message, and its data when that is text."""
    if isinstance(error, RequestError):
        data = f": {error.data}" if isinstance(error.data, str) and error.data else ""
        return f"{error.message}{data}"
    return str(error)


def _not_advertised(what: str, capability: str) -> str:
    return f"testy cannot {what}: the client did not advertise clientCapabilities.{capability} at initialize"


# --- the file system ------------------------------------------------------------------------------


async def read(turn: TestyTurn, command: Read) -> Outcome:
    """``read PATH``: ``fs/read_text_file`` in a read tool call whose content is the file's text."""
    path = turn.session.resolve(command.path)
    tool_call_id = turn.start_tool_call(
        f"Read {command.path}", ToolKind.READ, path=path, raw_input={"path": path}
    )
    if not turn.client.read_text_file:
        turn.fail_tool_call(tool_call_id, _not_advertised(f"read {path}", "fs.readTextFile"))
        return None
    try:
        response: ReadTextFileResponse = await turn.request(
            ReadTextFileRequest(session_id=turn.session.session_id, path=path)
        )
    except AcpError as error:
        turn.fail_tool_call(tool_call_id, _client_error_text(error))
        return None
    turn.update_tool_call(tool_call_id, ToolCallStatus.COMPLETED, [text_content(response.content)])
    return None


async def write(turn: TestyTurn, command: Write) -> Outcome:
    """``write PATH TEXT``: ``fs/write_text_file`` in an edit tool call whose content is the diff.

    The old text comes from ``fs/read_text_file`` when the client can read files; a file that cannot
    be read (it does not exist yet) has no old text (``oldText: null``).
    """
    session = turn.session
    path = session.resolve(command.path)
    tool_call_id = turn.start_tool_call(
        f"Write {command.path}", ToolKind.EDIT, path=path, raw_input={"path": path, "content": command.text}
    )
    if not turn.client.write_text_file:
        turn.fail_tool_call(tool_call_id, _not_advertised(f"write {path}", "fs.writeTextFile"))
        return None
    old_text: str | None = None
    if turn.client.read_text_file:
        try:
            old: ReadTextFileResponse = await turn.request(
                ReadTextFileRequest(session_id=session.session_id, path=path)
            )
            old_text = old.content
        except AcpError:
            old_text = None  # a new file
    try:
        await turn.request(
            WriteTextFileRequest(session_id=session.session_id, path=path, content=command.text)
        )
    except AcpError as error:
        turn.fail_tool_call(tool_call_id, _client_error_text(error))
        return None
    diff = Diff(path=path, old_text=old_text, new_text=command.text)
    turn.update_tool_call(tool_call_id, ToolCallStatus.COMPLETED, [diff])
    return None


# --- permission -----------------------------------------------------------------------------------


async def permission(turn: TestyTurn, command: Permission) -> Outcome:
    """``permission [TITLE]``: ask; an allow option goes on, anything else stops the script.

    The request describes an edit tool call; once answered, that tool call is ended ``completed``
    (allowed) or ``failed`` (refused), so that clients do not show it waiting forever.
    """
    session = turn.session
    tool_call_id = session.next_tool_call_id()
    call = ToolCallUpdate(
        tool_call_id=tool_call_id,
        title=command.title or "testy asks for permission",
        kind=ToolKind.EDIT,
        status=ToolCallStatus.PENDING,
    )
    request = RequestPermissionRequest(
        session_id=session.session_id, tool_call=call, options=list(PERMISSION_OPTIONS)
    )
    try:
        response = await turn.request(request)
    except AcpError as error:
        answer, allowed = f"error ({_client_error_text(error)})", False
    else:
        outcome = response.outcome
        if isinstance(outcome, SelectedPermissionOutcome):
            answer, allowed = outcome.option_id, outcome.option_id in _ALLOWED
        elif isinstance(outcome, CancelledPermissionOutcome):
            answer, allowed = "cancelled", False
        else:
            answer, allowed = "unknown outcome", False
    turn.update_tool_call(tool_call_id, ToolCallStatus.COMPLETED if allowed else ToolCallStatus.FAILED)
    turn.say(f"permission: {answer}\n")
    if allowed:
        return None
    turn.say("Permission denied: stopping.\n")
    return StopReason.END_TURN


# --- terminals ------------------------------------------------------------------------------------


async def run(turn: TestyTurn, command: Run | Timeout, limit: float | None = None) -> Outcome:
    """``run COMMAND [ARGS...]``: a client terminal in an execute tool call.

    ``terminal/create`` (in the session's cwd), the terminal as tool content,
    ``terminal/wait_for_exit``, ``terminal/output``, ``terminal/release``; then the output and the
    exit status as a message, and the tool call ``completed`` for exit status 0, else ``failed``.
    """
    session = turn.session
    argv = [command.command, *command.args]
    tool_call_id = turn.start_tool_call(
        shlex.join(argv), ToolKind.EXECUTE, raw_input={"command": command.command, "args": list(command.args)}
    )
    if not turn.client.terminal:
        turn.fail_tool_call(tool_call_id, _not_advertised(f"run {command.command}", "terminal"))
        return None
    create = CreateTerminalRequest(
        session_id=session.session_id, command=command.command, args=list(command.args), cwd=session.cwd
    )
    try:
        terminal_id: str = (await turn.request(create)).terminal_id
    except AcpError as error:
        turn.fail_tool_call(tool_call_id, _client_error_text(error))
        return None
    turn.update_tool_call(tool_call_id, content=[Terminal(terminal_id=terminal_id)])
    release = ReleaseTerminalRequest(session_id=session.session_id, terminal_id=terminal_id)
    try:
        exited = await _wait_for_exit(turn, terminal_id, limit)
        output: TerminalOutputResponse = await turn.request(
            TerminalOutputRequest(session_id=session.session_id, terminal_id=terminal_id)
        )
    except AcpError as error:
        await _release(turn, release)
        turn.fail_tool_call(tool_call_id, _client_error_text(error))
        return None
    except (TurnCancelled, asyncio.CancelledError):
        turn.send_and_forget(release)  # cancelled: the client kills the command, nobody waits
        raise
    await _release(turn, release)
    turn.say(_run_report(output, exited))
    status = ToolCallStatus.COMPLETED if exited.exit_code == 0 else ToolCallStatus.FAILED
    turn.update_tool_call(tool_call_id, status)
    return None


async def timeout(turn: TestyTurn, command: Timeout) -> Outcome:
    """``timeout SECONDS COMMAND [ARGS...]``: ``run``, with ``terminal/kill`` once SECONDS have passed."""
    return await run(turn, command, command.seconds)


async def _wait_for_exit(
    turn: TestyTurn, terminal_id: str, limit: float | None
) -> WaitForTerminalExitResponse:
    """``terminal/wait_for_exit``; past ``limit`` seconds, ``terminal/kill`` and wait for the exit."""
    session_id = turn.session.session_id
    wait = WaitForTerminalExitRequest(session_id=session_id, terminal_id=terminal_id)
    if limit is None:
        exited: WaitForTerminalExitResponse = await turn.request(wait)
        return exited
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(limit):
            exited = await turn.request(wait)
            return exited
    await turn.request(KillTerminalRequest(session_id=session_id, terminal_id=terminal_id))
    turn.say(f"killed after {limit:g} s\n")
    exited = await turn.request(wait)
    return exited


async def _release(turn: TestyTurn, release: ReleaseTerminalRequest) -> None:
    try:
        await turn.request(release)
    except AcpError as error:
        turn.say(f"terminal/release failed: {_client_error_text(error)}\n")


def _run_report(output: TerminalOutputResponse, exited: WaitForTerminalExitResponse) -> str:
    text = output.output
    if text and not text.endswith("\n"):
        text += "\n"
    if output.truncated:
        text += "(output truncated)\n"
    if exited.exit_code is not None:
        return f"{text}exit status {exited.exit_code}\n"
    if exited.signal is not None:
        return f"{text}signal {exited.signal}\n"
    return f"{text}exit status unknown\n"


# --- the rest -------------------------------------------------------------------------------------


def notify(turn: TestyTurn, command: Notify) -> Outcome:
    """``notify METHOD [JSON]``: the extension notification, params as written."""
    turn.cx.send_notification(command.method, command.params)
    return None


async def mcp(turn: TestyTurn, command: Mcp) -> Outcome:
    """``mcp SERVER TOOL [JSON]``: a tool call that lists SERVER's tools and calls TOOL with JSON.

    SERVER is the name of an MCP server the session was set up with: an ``acp`` one (reached with
    ``mcp/message`` over this connection) or an ``http`` one. The tool call's content is the list
    of tools, then the text the tool returned; it ends failed if the tool reports an error, or the
    server cannot be reached.
    """
    tool_call_id = turn.start_tool_call(
        f"mcp {command.server} {command.tool}", ToolKind.OTHER, raw_input=command.arguments
    )
    store = turn.session.store
    record = await store.get(turn.session.session_id) if store is not None else None
    servers = [dict(server) for server in (record.mcp_servers if record is not None else ())]
    declared = next((server for server in servers if server.get("name") == command.server), None)
    if declared is None:
        known = ", ".join(str(server.get("name")) for server in servers) or "none"
        turn.fail_tool_call(
            tool_call_id, f"No MCP server named {command.server!r} in this session (it has: {known})"
        )
        return None
    try:
        from acpio.mcp import connect_declared
    except ImportError as exc:  # the mcp package is an optional extra
        turn.fail_tool_call(tool_call_id, f"The mcp command needs acpio[mcp] installed ({exc})")
        return None

    async def call() -> tuple[list[str], Any]:
        async with connect_declared(turn.cx, declared) as client:
            listed = await client.list_tools()
            return [tool.name for tool in listed.tools], await client.call_tool(
                command.tool, command.arguments
            )

    try:
        names, result = await turn.until_cancelled(call())
    except TurnCancelled:
        raise
    except Exception as exc:  # an MCPError, a refused connection...: reported, and the script goes on
        cause: BaseException = exc
        while isinstance(cause, BaseExceptionGroup) and cause.exceptions:  # the mcp client's task groups
            cause = cause.exceptions[0]
        reason = str(cause) or type(cause).__name__  # some errors (httpx ReadError) have no message
        turn.fail_tool_call(tool_call_id, f"MCP server {command.server!r} failed: {reason}")
        return None
    texts = [block.text for block in result.content if getattr(block, "type", None) == "text"]
    report: list[ToolCallContent] = [
        text_content(f"tools: {', '.join(names)}"),
        *(text_content(text) for text in texts),
    ]
    status = ToolCallStatus.FAILED if result.is_error else ToolCallStatus.COMPLETED
    turn.update_tool_call(tool_call_id, status, report)
    return None


async def sleep(turn: TestyTurn, command: Sleep) -> Outcome:
    """``sleep SECONDS``: wait (a cancel ends the turn at once)."""
    await turn.sleep(command.seconds)
    return None


def fail(turn: TestyTurn, command: Fail) -> Outcome:
    """``fail CODE [MESSAGE]``: answer the prompt with this error."""
    return RequestError(command.code, command.message)


def stop(turn: TestyTurn, command: Stop) -> Outcome:
    """``stop REASON``: end the turn with this stop reason."""
    return StopReason(command.reason)


def mode(turn: TestyTurn, command: Mode) -> Outcome:
    """``mode ID``: switch the session's mode and send ``current_mode_update``."""
    turn.session.set_mode(command.mode_id)
    turn.send_update(CurrentModeUpdate(current_mode_id=command.mode_id))
    return None


def title(turn: TestyTurn, command: Title) -> Outcome:
    """``title TEXT``: set the session's title and send ``session_info_update``."""
    turn.session.title = command.text
    turn.send_update(SessionInfoUpdate(title=command.text))
    return None


def commands(turn: TestyTurn, command: Commands) -> Outcome:
    """``commands``: ``available_commands_update`` with every testy command."""
    available = []
    for spec in COMMANDS:
        hint = {"input": UnstructuredCommandInput(hint=spec.args)} if spec.args else {}
        available.append(AvailableCommand(name=spec.name, description=spec.summary, **hint))
    turn.send_update(AvailableCommandsUpdate(available_commands=available))
    return None


def usage(turn: TestyTurn, command: Usage) -> Outcome:
    """``usage``: ``usage_update``; ``used`` counts the words of the session's history."""
    turn.send_update(UsageUpdate(used=turn.session.history_words(), size=CONTEXT_SIZE))
    return None


# --- what the user sees beside the conversation ---------------------------------------------------


def notice(turn: TestyTurn, command: Notice) -> Outcome:
    """``notice SEVERITY TITLE [-- DESCRIPTION]``: a ``notice`` update, or a message when notices are off.

    The spec lets an agent send notices only to clients that advertise ``session.notices``; to others
    the same information goes out as agent message text.
    """
    if turn.client.has("session.notices"):
        extra = {"description": command.description} if command.description else {}
        turn.send_update(NoticeUpdate(severity=command.severity, title=command.title, **extra))
        return None
    detail = f": {command.description}" if command.description else ""
    turn.say(f"notice ({command.severity}): {command.title}{detail}\n")
    return None


def compact(turn: TestyTurn, command: Compact) -> Outcome:
    """``compact TEXT``: ``compaction_update`` in progress, the summary word by word, then completed."""
    if not turn.client.has("session.compaction"):
        turn.say(_not_advertised("compact the context", "session.compaction") + "\n")
        return None
    compaction_id = turn.session.next_id("compaction")
    turn.send_update(CompactionUpdate(compaction_id=compaction_id, status="in_progress"))
    for word in split_words(command.summary):
        turn.send_update(CompactionSummaryChunk(compaction_id=compaction_id, content=TextContent(text=word)))
    turn.send_update(CompactionUpdate(compaction_id=compaction_id, status="completed"))
    return None


def option(turn: TestyTurn, command: Option) -> Outcome:
    """``option ID VALUE``: change a config option (``true``/``false`` for a boolean), send every option."""
    value: str | bool = command.value
    if command.config_id != "verbosity" and command.value in ("true", "false"):
        value = command.value == "true"
    try:
        turn.session.set_config_option(command.config_id, value)
    except InvalidParams as error:
        turn.say(f"option: {error.message}\n")
        return None
    turn.send_update(ConfigOptionUpdate(config_options=turn.session.config_options()))
    return None


# --- elicitation ----------------------------------------------------------------------------------


async def elicit(turn: TestyTurn, command: Elicit) -> Outcome:
    """``elicit [MESSAGE]``: the form :data:`ELICITATION_FORM`; the answer is reported as a message.

    The report is ``elicitation: ACTION`` and, for ``accept``, the content as JSON with sorted keys.
    """
    if not turn.client.elicitation_form:
        turn.say(_not_advertised("ask with a form", "elicitation.form") + "\n")
        return None
    request = CreateElicitationRequest(
        session_id=turn.session.session_id,
        mode="form",
        message=command.message or "Please tell testy about yourself.",
        requested_schema=ELICITATION_FORM,
    )
    answer = await _elicitation(turn, request)
    if answer is not None:
        content = answer.content if answer.action == "accept" else None
        shown = f" {orjson.dumps(content, option=orjson.OPT_SORT_KEYS).decode()}" if content else ""
        turn.say(f"elicitation: {answer.action}{shown}\n")
    return None


async def elicit_url(turn: TestyTurn, command: ElicitUrl) -> Outcome:
    """``elicit-url URL [MESSAGE]``: a URL-mode elicitation; after ``accept``, ``elicitation/complete``."""
    if not turn.client.elicitation_url:
        turn.say(_not_advertised("send you to a URL", "elicitation.url") + "\n")
        return None
    elicitation_id = turn.session.next_id("elicitation")
    request = CreateElicitationRequest(
        session_id=turn.session.session_id,
        mode="url",
        message=command.message or "Please open this page to go on.",
        elicitation_id=elicitation_id,
        url=command.url,
    )
    answer = await _elicitation(turn, request)
    if answer is None:
        return None
    turn.say(f"elicitation: {answer.action}\n")
    if answer.action == "accept":
        turn.cx.send_notification(CompleteElicitationNotification(elicitation_id=elicitation_id))
        turn.say(f"elicitation {elicitation_id} complete\n")
    return None


async def _elicitation(
    turn: TestyTurn, request: CreateElicitationRequest
) -> CreateElicitationResponse | None:
    try:
        answer: CreateElicitationResponse = await turn.request(request)
    except AcpError as error:
        turn.say(f"elicitation failed: {_client_error_text(error)}\n")
        return None
    return answer
