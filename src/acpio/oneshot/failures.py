"""The messages of ``acpio prompt`` when the agent fails: how it went away, and the end of its stderr.

Each function returns the one message the user sees (:class:`~acpio.oneshot.options.PromptFailed`
carries it): what happened, what it usually means, and what to try; the last lines the agent wrote
on its stderr follow it, quoted.
"""

from __future__ import annotations

import signal
from typing import Final

from acpio.capabilities import UnsupportedProtocolVersion
from acpio.errors import AcpError, ConnectionClosed, TransportError
from acpio.oneshot.notes import StdoutWatch
from acpio.session import ProtocolChoice
from acpio.transports import AgentProcess

__all__ = [
    "agent_gone",
    "component_failed",
    "named",
    "no_initialize_answer",
    "not_an_agent",
    "signal_name",
    "unsupported_version",
    "with_stderr_tail",
]

#: Lines of the agent's stderr shown when it fails.
STDERR_LINES: Final = 12


def with_stderr_tail(headline: str, tail: str | None) -> str:
    """``headline``, then the last :data:`STDERR_LINES` lines of ``tail`` (the agent's stderr), quoted."""
    if not tail:
        return f"{headline}; it wrote nothing on stderr."
    lines = tail.splitlines()[-STDERR_LINES:]
    return f"{headline}. The end of its stderr:\n" + "\n".join(f"  | {line}" for line in lines)


def agent_gone(process: AgentProcess | None, exc: AcpError, watch: StdoutWatch) -> str:
    """One line saying how the agent went away, then the last lines of its stderr."""
    if process is None:
        return f"The agent closed the connection: {exc}"
    name = process.command.display()
    waiting = f" before answering {exc.method}" if isinstance(exc, ConnectionClosed) and exc.method else ""
    if not watch.answered:
        waiting = f" before answering initialize{not_an_agent(watch)}"
    returncode = process.returncode
    cause = exc.__cause__ if isinstance(exc.__cause__, TransportError) else exc
    if returncode is not None:
        how = (
            f"was killed by {signal_name(-returncode)}"
            if returncode < 0
            else f"exited with exit code {returncode}"
        )
        headline = f"The agent {name!r} {how}{waiting}"
    elif isinstance(cause, TransportError):  # a read or write failure while it still runs
        headline = str(cause).split("\n", 1)[0].rstrip(".")
    else:
        headline = f"The agent {name!r} closed the connection{waiting}"
    return with_stderr_tail(headline, process.stderr_tail)


def component_failed(message: str, data: dict[str, object]) -> str:
    """A conductor's error about a component it lost: its message, then the component's stderr it sent."""
    tail = data.get("stderr")
    if not isinstance(tail, str) or not tail.strip():
        return message
    return with_stderr_tail(message, tail)


def not_an_agent(watch: StdoutWatch) -> str:
    """Why an agent gone before answering ``initialize`` may be no ACP agent: what it printed, if anything."""
    if watch.echoed:
        return ", after sending acpio's own messages back (it echoes its input, as cat does): no ACP agent"
    if watch.first_non_json is not None:
        printed = f"after writing {watch.first_non_json!r} on its stdout, which is not ACP"
    else:
        printed = "without writing anything on its stdout"
    return f", {printed}: check that the command starts an ACP agent (some need a flag such as --acp)"


def unsupported_version(error: UnsupportedProtocolVersion, protocol: ProtocolChoice) -> str:
    """The error of an agent answering another version than ``--protocol``: which flag works with it."""
    if protocol == 2 and error.version == 1:
        return (
            "The agent speaks ACP protocol version 1, but this client speaks only 2 (--protocol 2): "
            "leave --protocol out (acpio then negotiates and speaks v1 with it) or pass --protocol 1."
        )
    return str(error)


def no_initialize_answer(process: AgentProcess | None, limit: float, first_non_json: str | None) -> str:
    """One line saying the agent did not answer ``initialize``, with a hint, then the end of its stderr."""
    name = named(process)
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
    return with_stderr_tail(headline, process.stderr_tail if process is not None else None)


def named(process: AgentProcess | None) -> str:
    """`` 'COMMAND'``, the agent's command quoted after a space; empty for an agent run in-process."""
    return f" {process.command.display()!r}" if process is not None else ""


def signal_name(number: int) -> str:
    """The name of signal ``number`` (``SIGKILL``), or ``signal N`` for one Python does not name."""
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
