"""The package as PyPI would get it: the sdist and wheel build, and twine accepts their metadata.

Built without build isolation (hatchling comes with the dev extra), so no network is needed; about
3 s.
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return out


def test_twine_accepts_the_sdist_and_the_wheel(dist: Path) -> None:
    built = sorted(str(p) for p in dist.iterdir())
    assert sorted(Path(p).suffix for p in built) == [".gz", ".whl"]
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *built],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_wheel_is_the_typed_package_and_its_command(dist: Path) -> None:
    (wheel,) = dist.glob("*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert {"acpio/py.typed", "acpio/app/__init__.py", "acpio/schema/_models.py"} <= names
    assert not any(n.startswith(("tests/", "docs/", "examples/")) for n in names)
    assert "acpio = acpio.cli:main" in entry_points
    # the pytest plugin, loaded by pytest wherever acpio[testing] is installed
    assert "[pytest11]\nacpio = acpio.testing.plugin" in entry_points
    assert "Provides-Extra: testing" in metadata
    assert "Requires-Python: >=3.11" in metadata
    assert "License-Expression: Apache-2.0" in metadata
    assert "Description-Content-Type: text/markdown" in metadata


def test_the_sdist_has_no_tool_caches(dist: Path) -> None:
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        tops = {name.split("/")[1] for name in archive.getnames() if name.count("/") >= 1}
    assert {"src", "README.md", "LICENSE", "pyproject.toml"} <= tops
    assert not tops & {".grimp_cache", ".import_linter_cache", ".cache", "site", ".venv"}
