"""Running a main coroutine on the fastest event loop available: :func:`run`.

acpio works on any asyncio event loop. uvloop (the optional ``acpio[fast]`` extra) answers a
request sooner, because each turn of its loop costs less: in ``benchmarks/run.py`` it adds about a
sixth to acpio's round trips per second. :func:`run` uses it when it is installed; every
``acpio`` command and :meth:`AgentApp.run <acpio.AgentApp.run>` start through it.

The environment variable ``ACPIO_EVENT_LOOP`` decides instead of the installation: ``asyncio``
keeps asyncio's own loop, ``uvloop`` requires uvloop (an error if it is missing).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import TypeVar

__all__ = ["EVENT_LOOP_VARIABLE", "EventLoopError", "run"]

#: The environment variable that chooses the event loop: ``asyncio`` or ``uvloop``.
EVENT_LOOP_VARIABLE = "ACPIO_EVENT_LOOP"

_T = TypeVar("_T")


class EventLoopError(RuntimeError):
    """``ACPIO_EVENT_LOOP`` asks for an event loop acpio cannot run on: the message says what to do."""


def run(main: Coroutine[object, object, _T], *, debug: bool | None = None) -> _T:
    """Run ``main`` to completion and return its result, as ``asyncio.run()`` does.

    The loop is uvloop's when uvloop is installed, asyncio's otherwise; ``ACPIO_EVENT_LOOP``
    (``asyncio`` or ``uvloop``) overrides that. Raises :class:`EventLoopError` for another value
    of the variable, or when it asks for uvloop and uvloop is not installed.
    """
    try:
        factory = _loop_factory()
    except BaseException:
        main.close()  # never started: no "coroutine was never awaited" warning on top of the error
        raise
    with asyncio.Runner(debug=debug, loop_factory=factory) as runner:
        return runner.run(main)


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """Uvloop's loop factory, or ``None`` for asyncio's loop, as installed and asked for."""
    wanted = os.environ.get(EVENT_LOOP_VARIABLE, "").strip().lower()
    if wanted not in ("", "asyncio", "uvloop"):
        raise EventLoopError(
            f"{EVENT_LOOP_VARIABLE}={os.environ[EVENT_LOOP_VARIABLE]!r} is not an event loop acpio knows: "
            "use 'asyncio', 'uvloop', or leave it unset (uvloop when it is installed)"
        )
    if wanted == "asyncio":
        return None
    try:
        import uvloop
    except ImportError:
        if wanted == "uvloop":
            raise EventLoopError(
                f"{EVENT_LOOP_VARIABLE}=uvloop, but uvloop is not installed: install it with "
                "`pip install 'acpio[fast]'`, or unset the variable to run on asyncio's loop"
            ) from None
        return None
    factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
    return factory
