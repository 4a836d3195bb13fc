"""An ACP agent written with the official Python SDK (module ``acp``), for acpio's interoperability tests.

Run it with the interpreter of the official SDK's virtualenv (``peers/install.py`` makes it):
``<official-python> peers/official_py/agent.py``. It speaks ACP v1 on stdin/stdout and runs the same turn as
``peers/ts/agent.mjs`` (see ``peers/README.md``):

* a prompt whose text is ``wait`` streams one chunk, waits for ``session/cancel`` (at most 30 s) and ends the
  turn ``cancelled``;
* any other prompt: the text streamed back one word per chunk; tool call ``edit-1`` and a permission request
  (allow-once / reject-once); ``input.txt`` read and written upper-cased to ``output.txt`` through the client;
  tool call ``run-1`` running ``echo terminal works`` in a client terminal; a closing ``done: ...`` chunk;
  ``end_turn``. A step the client did not advertise is skipped with a chunk saying so.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import PurePath
from typing import Any

from acp import (
    PROTOCOL_VERSION,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    tool_terminal_ref,
    update_agent_message_text,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import (
    AgentCapabilities,
    AllowedOutcome,
    ClientCapabilities,
    Implementation,
    PermissionOption,
    ToolCallLocation,
    ToolCallUpdate,
)

WAIT_LIMIT = 30.0
NAME = "official-python-peer-agent"


class Cancelled(Exception):
    """The turn was cancelled by ``session/cancel``."""


@dataclass
class Session:
    """A session: its working directory and the cancel switch of its running turn."""

    cwd: str
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


def words(text: str) -> list[str]:
    """``"a b  c"`` -> ``["a ", "b  ", "c"]``: one chunk per word, every space kept."""
    return re.findall(r"\S+\s*|\s+", text)


class PeerAgent:
    """The agent; the SDK calls one method per request it receives."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.capabilities = ClientCapabilities()
        self.sessions: dict[str, Session] = {}

    def on_connect(self, conn: Client) -> None:
        """The SDK hands over the connection to the client."""
        self.client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        """Remember what the client can do; present this agent."""
        self.capabilities = client_capabilities or ClientCapabilities()
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=False),
            agent_info=Implementation(
                name=NAME, title="Official Python SDK peer agent", version=version("agent-client-protocol")
            ),
            auth_methods=[],
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        """A new session in ``cwd``."""
        session_id = f"py-session-{len(self.sessions) + 1}"
        self.sessions[session_id] = Session(cwd=cwd)
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        """Stop the session's running turn at its next step."""
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancelled.set()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        """Run one turn; ``cancelled`` if ``session/cancel`` stopped it."""
        session = self.sessions.get(session_id)
        if session is None:
            raise RequestError.invalid_params({"sessionId": session_id, "reason": "unknown session"})
        session.cancelled = asyncio.Event()
        text = "\n".join(block.text for block in prompt if getattr(block, "type", None) == "text")
        try:
            stop_reason = await self.turn(session_id, session, text)
        except Cancelled:
            stop_reason = "cancelled"
        if session.cancelled.is_set():
            stop_reason = "cancelled"
        return PromptResponse(stop_reason=stop_reason)

    async def turn(self, session_id: str, session: Session, text: str) -> str:
        """The turn's steps (see the module docstring); returns the stop reason."""
        client = self.client
        assert client is not None

        def check() -> None:
            if session.cancelled.is_set():
                raise Cancelled

        async def update(body: Any) -> None:
            check()
            await client.session_update(session_id=session_id, update=body)

        async def say(chunk: str) -> None:
            await update(update_agent_message_text(chunk))

        if text.strip() == "wait":
            await say("waiting for cancel")
            try:
                await asyncio.wait_for(session.cancelled.wait(), WAIT_LIMIT)
            except TimeoutError:
                return "end_turn"
            raise Cancelled

        for word in words(text):
            await say(word)

        input_path = str(PurePath(session.cwd) / "input.txt")
        output_path = str(PurePath(session.cwd) / "output.txt")
        title = "Copy input.txt to output.txt in upper case"
        await update(
            start_tool_call(
                "edit-1",
                title,
                kind="edit",
                status="pending",
                locations=[ToolCallLocation(path=input_path), ToolCallLocation(path=output_path)],
            )
        )
        check()
        permission = await client.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id="edit-1", title=title, kind="edit", status="pending"),
            options=[
                PermissionOption(option_id="allow-once", name="Allow once", kind="allow_once"),
                PermissionOption(option_id="reject-once", name="Reject", kind="reject_once"),
            ],
        )
        check()
        outcome = permission.outcome
        if not (isinstance(outcome, AllowedOutcome) and outcome.option_id == "allow-once"):
            await update(update_tool_call("edit-1", status="failed"))
            await say("permission denied")
            return "end_turn"

        read_length = 0
        fs = self.capabilities.fs
        if fs is not None and fs.read_text_file and fs.write_text_file:
            await update(update_tool_call("edit-1", status="in_progress"))
            read = await client.read_text_file(session_id=session_id, path=input_path)
            check()
            read_length = len(read.content)
            new_text = read.content.upper()
            await client.write_text_file(session_id=session_id, path=output_path, content=new_text)
            await update(
                update_tool_call(
                    "edit-1", status="completed", content=[tool_diff_content(output_path, new_text)]
                )
            )
        else:
            await update(update_tool_call("edit-1", status="failed"))
            await say("the client has no fs capability; skipping the file step. ")

        terminal_said = "(no terminal)"
        exit_code: int | None = None
        if self.capabilities.terminal:
            await update(
                start_tool_call("run-1", "echo terminal works", kind="execute", status="in_progress")
            )
            created = await client.create_terminal(
                session_id=session_id, command="echo", args=["terminal", "works"], cwd=session.cwd
            )
            terminal_id = created.terminal_id
            try:
                await update(update_tool_call("run-1", content=[tool_terminal_ref(terminal_id)]))
                exit_status = await client.wait_for_terminal_exit(
                    session_id=session_id, terminal_id=terminal_id
                )
                output = await client.terminal_output(session_id=session_id, terminal_id=terminal_id)
                exit_code = exit_status.exit_code
                terminal_said = output.output.strip()
            finally:
                await client.release_terminal(session_id=session_id, terminal_id=terminal_id)
            await update(
                update_tool_call(
                    "run-1",
                    status="completed" if exit_code == 0 else "failed",
                    content=[tool_content(text_block(terminal_said))],
                )
            )
        else:
            await say("the client has no terminal capability; skipping the terminal step. ")

        shown = "null" if exit_code is None else str(exit_code)
        await say(
            f"done: read {read_length} chars, wrote output.txt, terminal said: {terminal_said} (exit {shown})"
        )
        return "end_turn"


if __name__ == "__main__":
    asyncio.run(run_agent(PeerAgent()))
