"""Shared parts of the MCP-over-ACP tests: MCP servers of the official `mcp` package, schema checks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp.server.mcpserver import MCPServer
from referencing import Registry, Resource

from acpio.jsonrpc import Builder, Connection
from acpio.schema import InitializeRequest
from acpio.testing import WirePeer
from acpio.transports import Channel

#: Bound on one wait in these tests.
TIMEOUT = 10.0
SHARED_DIR = (Path(__file__).resolve().parents[2] / ".." / "shared").resolve()
SCHEMA_URI = "urn:acp:v1:schema.unstable.json"
SPEC = SHARED_DIR / "spec" / "v1" / "schema.unstable.json"

#: The inner `_meta` every 2026-07-28 request carries (what the TypeScript SDK's caller adds).
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}

_validators: dict[str, jsonschema.Draft202012Validator] = {}


def check(name: str, value: Any) -> None:
    """Fail unless ``value`` is valid as the schema's ``$defs`` entry ``name``."""
    if name not in _validators:
        if not SPEC.is_file():
            pytest.skip(f"reference material not found: {SPEC}")
        schema = json.loads(SPEC.read_text(encoding="utf-8"))
        registry: Registry[Any] = Registry().with_resource(SCHEMA_URI, Resource.from_contents(schema))
        _validators[name] = jsonschema.Draft202012Validator(
            {"$ref": f"{SCHEMA_URI}#/$defs/{name}"}, registry=registry
        )
    _validators[name].validate(value)


class Gate:
    """Lets a test hold a tool call open and see it started, ended or cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.release = asyncio.Event()
        self.cancelled = asyncio.Event()


def notes_server(gate: Gate | None = None) -> MCPServer:
    """An MCPServer with an adding tool, a failing one and (with ``gate``) a slow one."""
    app = MCPServer("notes")

    @app.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @app.tool()
    def fail() -> str:
        """Always raises."""
        raise ValueError("the notes are on fire")

    @app.tool()
    async def slow() -> str:
        """Waits for the test's gate."""
        assert gate is not None
        gate.started.set()
        try:
            await gate.release.wait()
        except asyncio.CancelledError:
            gate.cancelled.set()
            raise
        return "done"

    return app


async def initialize(cx: Connection, peer: WirePeer, acp: bool = True) -> None:
    """Client ``cx`` initializes; the raw peer answers as an agent with ``mcpCapabilities.acp``."""
    sent = cx.send_request(InitializeRequest(protocol_version=1))
    request = await peer.expect("initialize")
    capabilities = {
        "mcpCapabilities": {"acp": acp},
        "loadSession": True,
        "sessionCapabilities": {"resume": {}, "fork": {}},
    }
    peer.respond(request, {"protocolVersion": 1, "agentCapabilities": capabilities})
    async with asyncio.timeout(TIMEOUT):
        await sent


@asynccontextmanager
async def wire_connection(builder: Builder) -> AsyncIterator[tuple[Connection, WirePeer]]:
    """Serve ``builder`` on one end of a channel; yield its connection and a raw peer on the other."""
    ours, theirs = Channel.duplex()
    started: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    finished = asyncio.Event()

    async def main(cx: Connection) -> None:
        started.set_result(cx)
        await finished.wait()

    task = asyncio.create_task(builder.connect_with(ours, main))
    async with asyncio.timeout(TIMEOUT):
        cx = await started
    try:
        yield cx, WirePeer(theirs, timeout=TIMEOUT)
    finally:
        finished.set()
        await theirs.aclose()
        async with asyncio.timeout(TIMEOUT):
            await task


@asynccontextmanager
async def client_connection() -> AsyncIterator[tuple[Connection, WirePeer]]:
    """An initialized client connection with unstable methods on, and a raw agent on the wire."""
    from acpio.roles import Client

    async with wire_connection(Client.builder(unstable=True)) as (cx, peer):
        await initialize(cx, peer)
        yield cx, peer


def mcp_request(
    server_id: str, request_id: str, method: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """``mcp/message`` params for an inner request, checked against ``MessageMcpRequest``."""
    inner = {**(params or {}), "_meta": META}
    message = {"serverId": server_id, "requestId": request_id, "method": method, "params": inner}
    check("MessageMcpRequest", message)
    return message
