"""The benchmark agent on the official Python SDK (``agent-client-protocol``, module ``acp``).

The same behaviour as ``acpio_agent.py``, written the way the SDK's README writes agents: a class with one
method per request, served by ``acp.run_agent`` over stdio, sending each update with
``await conn.session_update(...)``. Runs in the official SDK's own virtualenv (``peers/install.py``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import acp
from acp.schema import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    SetSessionModeResponse,
    TextContentBlock,
)

STREAM_PREFIX = "stream "


class BenchAgent(acp.Agent):
    """Answers initialize, session/new, session/set_mode and ``stream N`` prompts."""

    def on_connect(self, conn: acp.Client) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=min(protocol_version, acp.PROTOCOL_VERSION))

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id="bench-1")

    async def set_session_mode(self, session_id: str, mode_id: str, **kwargs: Any) -> SetSessionModeResponse:
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        first = prompt[0] if prompt else None
        count = 0
        if isinstance(first, TextContentBlock) and first.text.startswith(STREAM_PREFIX):
            count = int(first.text.removeprefix(STREAM_PREFIX))
        for _ in range(count):
            await self._conn.session_update(session_id, acp.update_agent_message_text("chunk"))
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    asyncio.run(acp.run_agent(BenchAgent()))
