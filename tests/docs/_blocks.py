"""scripts/doc_blocks.py, imported by path (scripts/ is not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("doc_blocks", ROOT / "scripts" / "doc_blocks.py")
assert _spec is not None
assert _spec.loader is not None
doc_blocks = importlib.util.module_from_spec(_spec)
sys.modules["doc_blocks"] = doc_blocks  # dataclasses look their module up by name
_spec.loader.exec_module(doc_blocks)

Block = doc_blocks.Block
DOC_FILES: list[Path] = doc_blocks.DOC_FILES
blocks = doc_blocks.blocks
python_blocks = doc_blocks.python_blocks
