"""A stdio MCP server for the reference agent's tests: ``add`` appends a note to ``notes.log`` in its
working directory (the session's), ``fail`` always fails, ``env`` says what ``NOTES_TAG`` is."""

from __future__ import annotations

import os
from pathlib import Path

from mcp.server.mcpserver import MCPServer

notes = MCPServer("notes")


@notes.tool()
def add(text: str) -> str:
    """Append a note to notes.log; returns how many notes there are."""
    with Path("notes.log").open("a") as log:
        log.write(text + "\n")
    return f"{len(Path('notes.log').read_text().splitlines())} note(s); tag {os.environ.get('NOTES_TAG')}"


@notes.tool()
def fail() -> str:
    """Always fails."""
    raise ValueError("this tool always fails")


if __name__ == "__main__":
    notes.run()
