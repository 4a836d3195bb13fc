"""The typed floor: the floor's agent (``bare_agent.py``) with pydantic models, and nothing of acpio.

What any agent whose messages are pydantic models pays before its library adds anything: importing
pydantic, building a validator for each message it reads and a serializer for each it writes, and,
for each streamed update, building three models (text content, chunk, notification) and writing them
with pydantic's serializer. Its models are the few fields the benchmark uses, written here by hand;
each request's params are validated into one, each result and update is one. Everything else (the
loop, the batched writes while streaming, the answers) is the floor's. The targets table of
``benchmarks/run.py`` sets the builder agent's figures beside this agent's: what is left between
them is acpio's own cost. An agent only (``bare -> pydantic``); run by a client over stdio.
"""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import orjson
from bare_agent import BATCH, STREAM_PREFIX, stdio
from pydantic import BaseModel, ConfigDict


class Model(BaseModel):
    """camelCase on the wire, unknown fields kept: as ACP models are."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)

    def to_json(self) -> bytes:
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_unset=True)


class InitializeParams(Model):
    protocolVersion: int


class NewSessionParams(Model):
    cwd: str
    mcpServers: list[dict[str, Any]]


class SetModeParams(Model):
    sessionId: str
    modeId: str


class TextBlock(Model):
    type: Literal["text"]
    text: str


class PromptParams(Model):
    sessionId: str
    prompt: list[TextBlock]


class InitializeResult(Model):
    protocolVersion: int


class NewSessionResult(Model):
    sessionId: str


class EmptyResult(Model):
    pass


class PromptResult(Model):
    stopReason: str


class TextContent(Model):
    type: Literal["text"] = "text"
    text: str


class AgentMessageChunk(Model):
    content: TextContent
    sessionUpdate: Literal["agent_message_chunk"] = "agent_message_chunk"


class SessionNotification(Model):
    sessionId: str
    update: AgentMessageChunk


def update_frame(session_id: str, text: str) -> bytes:
    """One streamed update: three models built, then written by pydantic."""
    content = TextContent(type="text", text=text)  # the tags set, so that they are written (as acpio's)
    chunk = AgentMessageChunk(content=content, sessionUpdate="agent_message_chunk")
    note = SessionNotification(sessionId=session_id, update=chunk)
    return b'{"jsonrpc":"2.0","method":"session/update","params":' + note.to_json() + b"}\n"


async def stream(writer: asyncio.StreamWriter, session_id: str, count: int) -> None:
    batch: list[bytes] = []
    for _ in range(count):
        batch.append(update_frame(session_id, "chunk"))
        if len(batch) == BATCH:
            writer.write(b"".join(batch))
            batch.clear()
            await writer.drain()
    writer.write(b"".join(batch))


async def answer(method: str, params: dict[str, Any], writer: asyncio.StreamWriter) -> Model | None:
    """The result of one request, ``None`` for a method the benchmark does not use."""
    if method == "initialize":
        InitializeParams.model_validate(params)
        return InitializeResult(protocolVersion=1)
    if method == "session/new":
        NewSessionParams.model_validate(params)
        return NewSessionResult(sessionId="bench-1")
    if method == "session/set_mode":
        SetModeParams.model_validate(params)
        return EmptyResult()
    if method == "session/prompt":
        prompt = PromptParams.model_validate(params)
        text = prompt.prompt[0].text if prompt.prompt else ""
        if text.startswith(STREAM_PREFIX):
            await stream(writer, prompt.sessionId, int(text.removeprefix(STREAM_PREFIX)))
        return PromptResult(stopReason="end_turn")
    return None


async def serve() -> None:
    reader, writer = await stdio()
    while line := await reader.readline():
        message = orjson.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        result = await answer(method, message.get("params") or {}, writer)
        head = b'{"jsonrpc":"2.0","id":' + orjson.dumps(message["id"])
        if result is None:
            error = {"code": -32601, "message": "Method not found", "data": {"method": method}}
            writer.write(head + b',"error":' + orjson.dumps(error) + b"}\n")
        else:
            writer.write(head + b',"result":' + result.to_json() + b"}\n")
        await writer.drain()


if __name__ == "__main__":
    asyncio.run(serve())
