"""The engine's tests that set ``BOTH_EVENT_LOOPS = True`` run on asyncio's loop and on uvloop's.

The same hook as the transports' (:mod:`tests.transports.conftest`).
"""

from tests.transports.conftest import pytest_asyncio_loop_factories

__all__ = ["pytest_asyncio_loop_factories"]
