"""Process control: how a run of acpio learns that it must end, and starting process groups safely.

``acpio prompt`` and ``acpio conductor`` start processes in process groups of their own (the agent,
proxies, the agent's terminal commands), which no signal sent to acpio reaches. So acpio must end
them itself, however it is asked to stop:

* SIGINT (Ctrl-C), SIGTERM and SIGHUP are handled, never left to their default action, which would
  end acpio at once and leave the groups running (:func:`ending_signals` gives the last two);
* the death of the process that started acpio (an editor that crashed) is noticed by
  :func:`watch_parent`, which polls the parent process id: when the parent exits, acpio is
  re-parented (to init or a subreaper) and its parent id changes. Polling is used rather than
  Linux's ``prctl(PR_SET_PDEATHSIG)``: that signal fires when the *thread* that started acpio
  exits, not the process (an editor that spawns from a short-lived thread would end acpio early),
  and it exists on Linux only.

:func:`handling_endings` sets both up for the length of a run.

The parent's exit is treated as a hang-up. A run started with SIGHUP ignored (``nohup acpio ...``)
keeps ignoring it, and does not watch its parent either: that is how a user says "keep running
after I am gone".

A process killed with SIGKILL can do nothing of this: its agent sees its stdin close (ACP agents
exit then), but commands the agent started through acpio keep running.

:func:`spawn_in_new_group` starts a process in a new session (so a new process group), and makes
sure that a spawn cancelled half-way (the run is being stopped) leaves nothing behind: asyncio's
own clean-up would kill the new process only, not what it may already have started. On uvloop it
also keeps the child from inheriting extra copies of its own pipes (see :func:`_close_extra_fds`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import signal
from collections.abc import Callable, Iterator
from typing import Any, Final, TypeVar

__all__ = [
    "PARENT_POLL_INTERVAL",
    "ending_signals",
    "handling_endings",
    "signal_exit_code",
    "spawn_in_new_group",
    "watch_parent",
]

P = TypeVar("P", bound=asyncio.BaseProtocol)

#: Seconds between two looks at the parent process id.
PARENT_POLL_INTERVAL: Final = 0.5


def ending_signals() -> tuple[signal.Signals, ...]:
    """The signals that end a run in order: SIGTERM, and SIGHUP unless it is ignored (``nohup``).

    SIGINT is not among them: each command handles it its own way. Call this before installing
    handlers (it looks at the current disposition of SIGHUP). When SIGHUP is not in the answer,
    do not :func:`watch_parent` either.
    """
    if signal.getsignal(signal.SIGHUP) is signal.SIG_IGN:
        return (signal.SIGTERM,)
    return (signal.SIGTERM, signal.SIGHUP)


def signal_exit_code(number: int) -> int:
    """The exit code of a run ended by signal ``number``, as shells report it: 128 + ``number``."""
    return 128 + number


def watch_parent(
    on_gone: Callable[[], None], *, interval: float = PARENT_POLL_INTERVAL
) -> asyncio.Task[None] | None:
    """Call ``on_gone()`` once, soon after the parent process exits; cancel the task to stop watching.

    Returns ``None`` (nothing to watch) when the parent is already init or outside our PID namespace.
    """
    parent = os.getppid()
    if parent <= 1:
        return None

    async def watch() -> None:
        # Nothing wakes a process when its parent exits (short of PR_SET_PDEATHSIG): look, now and then.
        while True:
            await asyncio.sleep(interval)
            if os.getppid() != parent:
                on_gone()
                return

    return asyncio.get_running_loop().create_task(watch(), name="acpio parent watch")


@contextlib.contextmanager
def handling_endings(
    on_signal: Callable[[signal.Signals], None],
    on_parent_gone: Callable[[], None],
    *,
    on_sigint: Callable[[], None] | None = None,
) -> Iterator[None]:
    """Handle SIGINT, the :func:`ending_signals` and the parent's exit inside; stop handling on leaving.

    SIGINT calls ``on_sigint()``, or ``on_signal(SIGINT)`` without it; SIGTERM and SIGHUP call
    ``on_signal(number)``; the parent's exit calls ``on_parent_gone()``, and is watched (see
    :func:`watch_parent`) only when SIGHUP is handled. Needs the running loop of the main thread.
    """
    loop = asyncio.get_running_loop()
    ending = ending_signals()
    handled: list[signal.Signals] = []
    watch = None
    try:
        if on_sigint is None:
            loop.add_signal_handler(signal.SIGINT, on_signal, signal.SIGINT)
        else:
            loop.add_signal_handler(signal.SIGINT, on_sigint)
        handled.append(signal.SIGINT)
        for number in ending:
            loop.add_signal_handler(number, on_signal, number)
            handled.append(number)
        if signal.SIGHUP in ending:  # nohup: the parent's exit is no reason to stop either
            watch = watch_parent(on_parent_gone)
        yield
    finally:
        if watch is not None:
            watch.cancel()
        for number in handled:
            loop.remove_signal_handler(number)


async def spawn_in_new_group(
    protocol_factory: Callable[[], P], *argv: str, **options: Any
) -> tuple[asyncio.SubprocessTransport, P]:
    """``loop.subprocess_exec(protocol_factory, *argv, start_new_session=True, **options)``, cancel-safe.

    If the caller is cancelled while the process is being started, the start is let finish, then
    the whole new process group is killed (SIGKILL: nobody will ever talk to it) before the
    cancellation goes on.
    """
    loop = asyncio.get_running_loop()
    if type(loop).__module__.startswith("uvloop") and "preexec_fn" not in options:
        options["preexec_fn"] = functools.partial(_close_extra_fds, frozenset(options.get("pass_fds", ())))
    spawning = loop.create_task(
        loop.subprocess_exec(protocol_factory, *argv, start_new_session=True, **options),
        name=f"acpio: starting {argv[0] if argv else '?'}",
    )
    try:
        return await asyncio.shield(spawning)
    except asyncio.CancelledError:
        spawning.add_done_callback(_end_unwanted)
        with contextlib.suppress(asyncio.CancelledError):  # cancelled again: the callback still ends it
            await asyncio.wait((spawning,))
        raise


def _close_extra_fds(kept: frozenset[int]) -> None:
    """In the child, before its stdio is set up: let every descriptor from 3 on (but ``kept``) close on exec.

    uvloop hands the child's ends of its pipes to libuv as inheritable descriptors, and libuv, which
    expects them to close on exec, copies them to 0, 1 and 2 without closing them: the program would
    start with a second copy of its stdout (and stdin, stderr). An agent that closes its stdout would
    then never be seen doing so, as its own spare copy keeps the pipe open. uvloop runs this hook
    after the fork and before libuv duplicates the pipes, which stay open until the ``exec``.
    """
    try:
        fds = [int(name) for name in os.listdir("/dev/fd")]  # Linux (through /proc) and macOS
    except OSError:  # not mounted: every possible descriptor
        fds = list(range(3, os.sysconf("SC_OPEN_MAX")))
    for fd in fds:
        if fd > 2 and fd not in kept:
            with contextlib.suppress(OSError):
                os.set_inheritable(fd, False)


def _end_unwanted(spawning: asyncio.Task[tuple[asyncio.SubprocessTransport, Any]]) -> None:
    if spawning.cancelled() or spawning.exception() is not None:
        return
    transport, _ = spawning.result()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(transport.get_pid(), signal.SIGKILL)
    transport.close()
