"""The function types of ``acpio.app`` are typing objects a user's code can combine at run time.

They name models (``StopReason``, ``InitializeRequest``...) as forward references, so that reading
them creates no model class and imports no pydantic (``test_app_startup.py``); they must still be
what an annotation evaluated at run time can use, ``PromptFunction | None`` in a module without
``from __future__ import annotations``.
"""

from __future__ import annotations

import subprocess
import sys

USER_MODULE = """
import sys
from acpio.app import CloseFunction, InitializeFunction, OpenFunction, PromptFunction

def register(prompt: PromptFunction | None = None, init: InitializeFunction | None = None) -> None: ...

hooks: list[OpenFunction | CloseFunction] = []
print("pydantic" in sys.modules)
"""


def test_the_aliases_combine_at_run_time_without_importing_pydantic() -> None:
    done = subprocess.run([sys.executable, "-c", USER_MODULE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
