"""`make docs` fails on what would mislead a reader: a broken link, a docstring naming a name that is gone."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MKDOCS = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin" / "mkdocs"


def _docs_command() -> list[str]:
    """The mkdocs command line of the Makefile's docs target, as `make docs` runs it."""
    recipe = re.search(r"^docs:.*\n\t(.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert recipe is not None
    words = shlex.split(recipe.group(1))
    start = next(i for i, word in enumerate(words) if word.endswith("/mkdocs"))
    return [str(MKDOCS), *words[start + 1 :]]


def _site(tmp_path: Path, page: str, module: str) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(page)
    package = tmp_path / "src" / "demo_pkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(module)
    (tmp_path / "mkdocs.yml").write_text(
        "site_name: gate\n"
        "plugins:\n"
        "  - mkdocstrings:\n"
        "      handlers:\n"
        "        python:\n"
        "          paths: [src]\n"
        "          options:\n"
        f"            extensions: [{ROOT / 'scripts' / 'griffe_sphinx_roles.py'}]\n"
        "            docstring_style: sphinx\n"
    )
    return tmp_path


def _build(site: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(site / "src")}
    return subprocess.run(_docs_command(), cwd=site, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture(autouse=True)
def _needs_mkdocs() -> None:
    if not MKDOCS.exists():
        pytest.skip(f"mkdocs is not installed at {MKDOCS} (make test installs it)")


def test_a_broken_link_fails_the_build(tmp_path: Path) -> None:
    site = _site(tmp_path, "# Home\n\n[gone](nowhere.md)\n", '"""Demo."""\n')
    result = _build(site)
    assert result.returncode != 0, result.stderr
    assert "nowhere.md" in result.stderr


def test_a_docstring_naming_a_name_that_is_gone_fails_the_build(tmp_path: Path) -> None:
    module = (
        '"""Demo: see :class:`~demo_pkg.Gone` and :class:`~demo_pkg.Here`."""\n\n\n'
        'class Here:\n    """Here."""\n'
    )
    site = _site(tmp_path, "# Home\n\n::: demo_pkg\n", module)
    result = _build(site)
    assert result.returncode != 0, result.stderr
    assert "names demo_pkg.Gone, which does not exist" in result.stderr
    assert "demo_pkg.Here, which" not in result.stderr


def test_a_name_that_exists_only_at_run_time_is_not_stale(tmp_path: Path) -> None:
    module = (
        '"""Demo: see :class:`~demo_pkg.Made`."""\n\n'
        "def __getattr__(name: str) -> type:\n"
        "    if name == 'Made':\n"
        "        return type('Made', (), {})\n"
        "    raise AttributeError(name)\n"
    )
    site = _site(tmp_path, "# Home\n\n::: demo_pkg\n", module)
    result = _build(site)
    assert result.returncode == 0, result.stderr
