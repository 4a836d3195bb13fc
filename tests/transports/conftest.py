"""The tests of a module that sets ``BOTH_EVENT_LOOPS = True`` run on asyncio's loop and on uvloop's.

Child processes are where the two loops differ most (uvloop spawns through libuv, with socket
pairs for pipes): what :class:`~acpio.transports.AcpAgent` promises must hold on both.
"""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Mapping

import pytest


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """asyncio's loop for every test here; uvloop's too for the modules that ask (when it is installed)."""
    factories: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {"asyncio": asyncio.new_event_loop}
    module = getattr(item, "module", None)
    if getattr(module, "BOTH_EVENT_LOOPS", False) and importlib.util.find_spec("uvloop") is not None:
        import uvloop

        factories["uvloop"] = uvloop.new_event_loop
    return factories
