"""The pool's tests that set ``BOTH_EVENT_LOOPS = True`` run on asyncio's loop and on uvloop's.

The watchdog's timing and the processes it kills and starts are where the loops may differ.
"""

from tests.transports.conftest import pytest_asyncio_loop_factories

__all__ = ["pytest_asyncio_loop_factories"]
