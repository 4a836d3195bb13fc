"""Fixtures for the interoperability tests: the real peers, installed once per run by ``peers/install.py``.

Each fixture asks ``peers/install.py`` for one peer (it installs into the cache directory on first use, under
a lock) and turns :class:`PeersUnavailable` into a skip that says why: no npm, registry unreachable... The
peers are pinned in ``peers/package.json`` and ``peers/requirements-official.txt``.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from ._support import INPUT_TEXT, PEERS

INSTALL_SCRIPT = PEERS / "install.py"


def _load_install() -> ModuleType:
    spec = importlib.util.spec_from_file_location("acpio_peers_install", INSTALL_SCRIPT)
    assert spec is not None, f"cannot load {INSTALL_SCRIPT}"
    assert spec.loader is not None, f"cannot load {INSTALL_SCRIPT}"
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


install = _load_install()


def _peer(function: Callable[[], Any]) -> Any:
    try:
        return function()
    except install.PeersUnavailable as error:
        pytest.skip(f"interop peer unavailable: {error}")


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """The ``node_modules`` directory with the pinned TypeScript SDK, acpx and Node 22."""
    return Path(_peer(install.node_modules))


@pytest.fixture(scope="session")
def node(node_modules: Path) -> str:
    """The machine's ``node``, to run the TypeScript SDK peers (``peers/ts``)."""
    return str(_peer(install.node))


@pytest.fixture(scope="session")
def acpx(node_modules: Path) -> list[str]:
    """The argv prefix that runs acpx under Node 22."""
    return [str(word) for word in _peer(install.acpx)]


@pytest.fixture(scope="session")
def official_python() -> str:
    """The interpreter of the virtualenv holding the official Python SDK (module ``acp``)."""
    return str(_peer(install.official_python))


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A session directory with ``input.txt``; the clients confine file access to it."""
    directory = tmp_path / "work"
    directory.mkdir()
    (directory / "input.txt").write_text(INPUT_TEXT)
    return directory
