"""A reader finds every guide from where they start: the README and the site's home page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def guides() -> list[str]:
    """The pages of mkdocs.yml's "Guides" section, relative to docs/."""
    text = (ROOT / "mkdocs.yml").read_text()
    section = re.search(r"^  - Guides:\n((?:      - .*\n)+)", text, re.M)
    assert section is not None, "mkdocs.yml's nav has no Guides section"
    return re.findall(r"^      - .*: (\S+\.md)$", section.group(1), re.M)


def links(page: Path) -> set[str]:
    """The targets of ``page``'s markdown links, relative to docs/, anchors dropped."""
    found = {target.split("#")[0] for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text())}
    if page.parent == ROOT:
        return {target.removeprefix("docs/") for target in found if target.startswith("docs/")}
    return found


@pytest.mark.parametrize("start", ["README.md", "docs/index.md"])
def test_every_guide_is_linked_from_where_a_reader_starts(start: str) -> None:
    missing = [page for page in guides() if page not in links(ROOT / start)]
    assert missing == [], f"{start} links to no page of mkdocs.yml's Guides: {missing}"


def test_the_guides_are_read_from_the_nav() -> None:
    assert {"drive.md", "frameworks/langgraph.md", "check.md"} <= set(guides())
