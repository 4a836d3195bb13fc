"""Shared test helpers: where the reference material (``../shared``) lives.

The ACP schema and protocol docs are not part of the repository: they sit in the ``shared``
directory beside it. Tests that need them use the ``shared_dir`` / ``spec_dir`` fixtures, which
skip with a clear reason when the directory is absent. A test module that parametrizes over files
of ``shared`` at collection time defines ``parametrize_from_shared(metafunc, shared_dir)``;
``shared_dir`` is ``None`` when the directory is absent (the module then parametrizes a skip).
"""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest

# acpio's own pytest plugin (its fixtures: docs/testing-agents.md), loaded here when the installed
# acpio does not declare it yet (an editable install older than its entry point); pytester tests it.
_PLUGIN = "acpio.testing.plugin"
_INSTALLED = any(ep.value == _PLUGIN for ep in entry_points(group="pytest11"))
pytest_plugins = ["pytester"] if _INSTALLED else ["pytester", _PLUGIN]

#: The ``shared`` directory beside the repository (``<repo>/../shared``).
SHARED_DIR = (Path(__file__).resolve().parents[1] / ".." / "shared").resolve()

SHARED_MISSING_REASON = f"reference material not found: {SHARED_DIR} (the `shared` directory beside the repo)"


def find_shared_dir() -> Path | None:
    """The ``shared`` directory beside the repository, or ``None`` when it is absent."""
    return SHARED_DIR if (SHARED_DIR / "spec").is_dir() else None


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ``shared`` directory; skips the test when it is absent."""
    found = find_shared_dir()
    if found is None:
        pytest.skip(SHARED_MISSING_REASON)
    return found


@pytest.fixture(scope="session")
def spec_dir(shared_dir: Path) -> Path:
    """``shared/spec``: the ACP schema (``v1/*.json``) and protocol docs (``docs/``)."""
    return shared_dir / "spec"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Let a test module parametrize from files of ``shared`` (see the module docstring)."""
    hook = getattr(metafunc.module, "parametrize_from_shared", None)
    if hook is not None:
        hook(metafunc, find_shared_dir())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` first: handed out early, none is left running alone at the end of the run."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
