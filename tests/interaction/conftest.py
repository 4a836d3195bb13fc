"""Each test that joins a client and an agent with ``builder_client`` runs over three wires: in process,
WebSocket and Streamable HTTP (``acpio.remote``, on a loopback port)."""

from __future__ import annotations

import inspect
from collections.abc import Iterator

import pytest

from ._support import WIRE

WIRES = ("channel", "websocket", "http")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "wire" in metafunc.fixturenames and "builder_client(" in inspect.getsource(metafunc.function):
        metafunc.parametrize("wire", WIRES, indirect=True)


@pytest.fixture(autouse=True)
def wire(request: pytest.FixtureRequest) -> Iterator[str]:
    """The wire this test runs over (``channel`` for those that do not use ``builder_client``)."""
    name: str = getattr(request, "param", "channel")
    if name != "channel":
        pytest.importorskip("uvicorn")
    token = WIRE.set(name)
    try:
        yield name
    finally:
        WIRE.reset(token)
