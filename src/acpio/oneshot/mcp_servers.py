"""``acpio prompt --mcp NAME=SPEC``: the MCP servers offered to the agent in the session.

Three kinds, told apart by SPEC:

* ``NAME=https://host/mcp`` (or ``http://``): an HTTP MCP server, declared (``type: "http"``); the
  agent connects to it;
* ``NAME=python:FILE.py:ATTR`` or ``NAME=python:MODULE:ATTR``: an MCP server written with the
  official ``mcp`` package (``MCPServer``, formerly FastMCP, or a low-level ``Server``), loaded from
  that file or module and served by acpio itself over the ACP connection (``type: "acp"``, through
  :class:`acpio.mcp.McpServer`; needs ``acpio[mcp]``);
* anything else is a command (shell words or JSON, as for ``--agent``): a stdio MCP server,
  declared with the program's absolute path (as ACP wants: found on ``PATH`` here); the agent
  starts it.

:func:`parse_mcp` turns one SPEC into what :class:`~acpio.oneshot.PromptOptions` takes; a mistake
raises ``ValueError`` with a message for the user. An agent that does not advertise the kind
(``mcpCapabilities.http``, ``.acp``) is refused before anything is sent.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from acpio.schema import EnvVariable, McpServerHttp, McpServerStdio
from acpio.transports.commands import AgentCommand

__all__ = ["parse_mcp"]


def parse_mcp(text: str) -> Any:
    """``NAME=SPEC`` as a declaration (``McpServerHttp``, ``McpServerStdio``) or a served ``McpServer``.

    Raises ``ValueError`` saying what is wrong.
    """
    name, equals, spec = text.partition("=")
    name, spec = name.strip(), spec.strip()
    if not equals or not name or not spec:
        raise ValueError(
            f"{text!r} is not NAME=SPEC: give the server's name, '=', then a URL, python:FILE.py:ATTR "
            "or a command (as in --mcp files='npx @modelcontextprotocol/server-filesystem .')"
        )
    if spec.split("://", 1)[0].lower() in ("http", "https"):
        return McpServerHttp(name=name, url=spec, headers=[])
    if spec.startswith("python:"):
        return _hosted(name, spec.removeprefix("python:"))
    command = AgentCommand.from_string(spec)
    env = [EnvVariable(name=key, value=value) for key, value in command.env.items()]
    # ACP wants the program's absolute path: resolved here, as a shell would find it
    program = command.command if os.path.isabs(command.command) else shutil.which(command.command)
    if program is None:
        raise ValueError(f"{name}={spec}: {command.command!r} is not found on PATH (or give its full path)")
    return McpServerStdio(name=name, command=program, args=list(command.args), env=env)


def _hosted(name: str, where: str) -> Any:
    """The MCP server object ``ATTR`` of ``FILE.py`` or ``MODULE``, wrapped to be served over ACP."""
    source, colon, attribute = where.rpartition(":")
    if not colon or not source or not attribute:
        raise ValueError(
            f"python:{where}: give the file or module and the server's name, as python:tools.py:server"
        )
    try:
        from acpio.mcp import McpServer
    except ImportError as exc:
        raise ValueError(
            f"python:{where}: serving an MCP server needs the mcp extra: pip install 'acpio[mcp]'"
        ) from exc
    module = _load(source)
    server = getattr(module, attribute, None)
    if server is None:
        raise ValueError(f"python:{where}: {source} has no {attribute!r}")
    try:
        return McpServer(server, name=name)
    except TypeError as exc:
        raise ValueError(f"python:{where}: {exc}") from exc


def _load(source: str) -> Any:
    if source.endswith(".py"):
        path = Path(source).expanduser()
        if not path.is_file():
            raise ValueError(f"python:{source}: no such file")
        spec = importlib.util.spec_from_file_location(f"acpio_prompt_mcp_{path.stem}", path)
        if spec is None or spec.loader is None:
            raise ValueError(f"python:{source}: cannot be loaded as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise ValueError(f"python:{source}: loading it failed: {type(exc).__name__}: {exc}") from exc
        return module
    try:
        return importlib.import_module(source)
    except Exception as exc:
        raise ValueError(f"python:{source}: importing it failed: {type(exc).__name__}: {exc}") from exc
