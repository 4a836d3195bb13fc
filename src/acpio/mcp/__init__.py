"""MCP over ACP on the official ``mcp`` package (the ``acpio[mcp]`` extra).

* :class:`McpServer`: serve an ``mcp`` server to the agent of a session (the provider side);
* :func:`connect`: an ``mcp.Client`` whose transport is the ACP connection (the consumer side);
* :func:`mcp_http_bridge`: the polyfill proxy for agents that only speak HTTP MCP
  (``python -m acpio.mcp.bridge`` under a conductor);
* :mod:`acpio.mcp.wire`: the ``mcp/message`` envelope and the binding's error codes.

See ``docs/mcp.md``.
"""

from __future__ import annotations

from acpio.mcp.bridge import mcp_http_bridge
from acpio.mcp.consumer import AcpTransport, acp_servers, connect, connect_declared
from acpio.mcp.provider import DEFAULT_MAX_ACTIVE_REQUESTS, McpServer

__all__ = [
    "DEFAULT_MAX_ACTIVE_REQUESTS",
    "AcpTransport",
    "McpServer",
    "acp_servers",
    "connect",
    "connect_declared",
    "mcp_http_bridge",
]
