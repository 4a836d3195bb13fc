"""How ``acpio prompt`` opens its session: ``initialize``, then a new session, or one continued.

:func:`open_session` advertises what the run serves (or what the ``--as`` editor does), logs in
with ``--auth``, and starts the session with ``session/new`` or, for ``--session``, ``session/load``
(the replayed history shown dimmed) or ``session/resume``. Every refusal becomes a
:class:`~acpio.oneshot.options.PromptFailed` that says what to change.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from acpio.capabilities import LATEST_PROTOCOL_VERSION, CapabilityNotAdvertised, UnsupportedProtocolVersion
from acpio.errors import AuthRequired, InvalidParams, RequestError
from acpio.oneshot.auth import LoginFailed, authenticate
from acpio.oneshot.controls import client_capabilities
from acpio.oneshot.failures import component_failed, named, no_initialize_answer, unsupported_version
from acpio.oneshot.notes import StdoutWatch
from acpio.oneshot.options import ExitCode, PromptFailed, PromptOptions
from acpio.oneshot.render import Renderer
from acpio.schema import (
    ClientCapabilities,
    Implementation,
    InitializeRequest,
    InitializeResponse,
    NewSessionRequest,
)
from acpio.session import ActiveSession, McpServerList, SessionBuilder, SessionConnection
from acpio.transports import AgentProcess

if TYPE_CHECKING:
    from acpio.schema import v2

__all__ = ["STILL_WAITING_AFTER", "open_session"]

_log = logging.getLogger("acpio.oneshot")

#: Seconds without an answer to ``initialize`` after which acpio says it is still waiting, and why.
STILL_WAITING_AFTER: Final = 5.0


async def open_session(
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
        message = no_initialize_answer(process, limit, watch.first_non_json)
        raise PromptFailed(message, ExitCode.AGENT_FAILED) from exc
    except UnsupportedProtocolVersion as exc:
        raise PromptFailed(unsupported_version(exc, cx.protocol), ExitCode.AGENT_ERROR) from exc
    except RequestError as exc:
        if watch.echoed:  # cat: our initialize came back as a request, our error answer as the reply
            raise PromptFailed(_echoes(process), ExitCode.AGENT_FAILED) from exc
        if isinstance(exc.data, dict) and {"lane", "component"} <= exc.data.keys():
            # A conductor answers this way when it lost a component. Our own (--proxy, --trace) has
            # logged the component's stderr already; one given as --agent has only this error to tell it.
            own = bool(options.proxies) or options.trace is not None
            message = exc.message if own else component_failed(exc.message, exc.data)
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
    name = named(process)
    until = f"gives up after {limit:g} s" if limit is not None else "waits with no limit"
    return (
        f"still waiting for the agent{name} to answer initialize ({STILL_WAITING_AFTER:g} s so far): the "
        "program may not be an ACP agent, may need a flag such as --acp, or may be waiting for a login; "
        f"acpio {until} (--init-timeout SECONDS changes that), Ctrl-C stops now"
    )


def _echoes(process: AgentProcess | None) -> str:
    name = named(process)
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
