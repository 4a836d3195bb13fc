"""The floor: an agent on a plain asyncio + orjson loop, no ACP library and no validation.

Read a line, parse it, write the reply. It answers what the benchmark clients send (``initialize``,
``session/new``, ``session/set_mode``, and ``session/prompt`` with ``stream N`` by N ``session/update``
notifications, written in batches), ignores notifications and answers anything else with ``-32601``.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import orjson

STREAM_PREFIX = "stream "
#: Notifications joined into one write while streaming.
BATCH = 1024


async def stdio() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 24)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, sys.stdout)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


async def stream(writer: asyncio.StreamWriter, session_id: Any, count: int) -> None:
    batch: list[bytes] = []
    for _ in range(count):
        params = {
            "sessionId": session_id,
            "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "chunk"}},
        }
        batch.append(orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}) + b"\n")
        if len(batch) == BATCH:
            writer.write(b"".join(batch))
            batch.clear()
            await writer.drain()
    writer.write(b"".join(batch))


async def serve() -> None:
    reader, writer = await stdio()
    while line := await reader.readline():
        message = orjson.loads(line)
        if "id" not in message:
            continue
        method, params = message.get("method"), message.get("params") or {}
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if method == "initialize":
            reply["result"] = {"protocolVersion": 1}
        elif method == "session/new":
            reply["result"] = {"sessionId": "bench-1"}
        elif method == "session/set_mode":
            reply["result"] = {}
        elif method == "session/prompt":
            first = (params.get("prompt") or [{}])[0]
            text = first.get("text", "") if first.get("type") == "text" else ""
            if text.startswith(STREAM_PREFIX):
                await stream(writer, params.get("sessionId"), int(text.removeprefix(STREAM_PREFIX)))
            reply["result"] = {"stopReason": "end_turn"}
        else:
            reply["error"] = {"code": -32601, "message": "Method not found", "data": {"method": method}}
        writer.write(orjson.dumps(reply) + b"\n")
        await writer.drain()


if __name__ == "__main__":
    asyncio.run(serve())
