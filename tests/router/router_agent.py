"""An agent process serving ACP v1 and v2 on its stdio: ``VersionRouter`` over the two echo examples.

v1 clients reach ``examples/echo_agent.py``'s builder, v2 clients ``examples/v2_echo_agent.py``'s.
``--only 1`` or ``--only 2`` serves one of them (still through the router).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import acpio
from acpio import Stdio, VersionRouter

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def router(only: int | None = None) -> VersionRouter:
    components = {1: example("echo_agent").app, 2: example("v2_echo_agent").echo_agent()}
    if only is not None:
        components = {only: components[only]}
    return VersionRouter(components)


if __name__ == "__main__":
    only = int(sys.argv[2]) if sys.argv[1:2] == ["--only"] else None
    acpio.run(router(only).serve(Stdio()))
