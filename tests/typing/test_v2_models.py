"""pyright (strict) and mypy (strict, with and without the pydantic plugin) accept user code on v2 models."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

#: Slow (type checkers, real processes): run first, so that no worker is left with them at the end.
pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "v2_models.py"
BIN = Path(sys.executable).parent


@pytest.mark.parametrize("checker", ["pyright", "mypy", "mypy-pydantic"])
def test_user_code_on_v2_models_type_checks(checker: str, tmp_path: Path) -> None:
    config = tmp_path / "mypy.ini"
    config.write_text("[mypy]\nplugins = pydantic.mypy\n" if checker == "mypy-pydantic" else "[mypy]\n")
    if checker == "pyright":
        pyright = BIN / "basedpyright"
        if not pyright.exists():
            pytest.skip(f"{pyright} is not installed (make test installs the dev extra)")
        command = [str(pyright), "--level", "error", str(SOURCE)]
    else:
        command = [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--config-file", str(config)]
        command.append(str(SOURCE))
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
