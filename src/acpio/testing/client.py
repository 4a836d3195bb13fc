"""A typed client for tests: :func:`connect_client` and the :class:`TestClient` it yields.

::

    async with connect_client(app, cwd=tmp_path) as client:
        turn = await client.prompt("one two three", permissions="deny")
        assert turn.stop_reason == "end_turn"
        client.conversation.assert_said("Your prompt has 3 words.")
        client.conversation.assert_no_request("fs/write_text_file")

The client initializes (advertising ``fs`` reads and writes on v1), opens one session in ``cwd`` on
the first prompt, answers the agent's file requests inside ``cwd`` only and its permission requests
as each prompt says. Every message goes to :attr:`TestClient.conversation`, whose checks print the
conversation when they fail.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from acpio.testing.conversation import Conversation
from acpio.transports.tap import Tap

if TYPE_CHECKING:
    from acpio.app import AgentApp
    from acpio.client.permissions import PermissionChoice
    from acpio.session import ActiveSession, SessionConnection
    from acpio.transports.base import Component, Transport

__all__ = ["AgentUnderTest", "TestClient", "TurnResult", "as_component", "connect_client"]

#: An agent to test: an ``AgentApp``, a builder or any component, a transport, or a command line.
AgentUnderTest: TypeAlias = "AgentApp | Component | Transport | str"


def as_component(agent: AgentUnderTest | object) -> Any:
    """``agent`` as something to connect to: an ``AgentApp``'s builder, a command line spawned, or itself.

    Takes an ``AgentApp`` (anything with ``builder()``), a builder or any component (``AcpAgent``...),
    a transport, or a command line (``"python my_agent.py"``: started as a process). Raises
    ``TypeError`` for anything else.
    """
    if isinstance(agent, str):
        from acpio.transports import AcpAgent, AgentCommand

        return AcpAgent(AgentCommand.from_string(agent))
    builder = getattr(agent, "builder", None)
    if callable(builder) and not hasattr(agent, "open"):
        return builder()
    if hasattr(agent, "open") or hasattr(agent, "receive"):
        return agent
    raise TypeError(
        f"cannot test {agent!r}: give an AgentApp, a builder, a component (AcpAgent...) or the agent's "
        "command line"
    )


@dataclass(frozen=True)
class TurnResult:
    """One prompt turn as the client saw it: the agent's text and the stop reason."""

    text: str
    stop_reason: str


class TestClient:
    """A client connected to an agent under test (made by :func:`connect_client`)."""

    __test__ = False  # not a test class, whatever pytest thinks of its name

    def __init__(self, connection: SessionConnection, conversation: Conversation, cwd: Path) -> None:
        self.connection = connection
        """The typed connection, for anything :meth:`prompt` does not cover."""
        self.conversation = conversation
        """Every message of the connection, both ways; its checks print it when they fail."""
        self.cwd = cwd
        """The session's directory: the agent reads and writes files there and nowhere else."""
        self._stack = AsyncExitStack()
        self._session: ActiveSession | None = None

    async def session(self) -> ActiveSession:
        """The session, opened in :attr:`cwd` on first use."""
        if self._session is None:
            builder = self.connection.build_session(self.cwd)
            self._session = await self._stack.enter_async_context(builder.start_session())
        return self._session

    async def prompt(self, text: str, *, permissions: PermissionChoice = "deny") -> TurnResult:
        """Send ``text`` as a prompt and read the turn to its end.

        Permission requests are answered by ``permissions`` (``"allow"``, ``"deny"``, a callback or a
        policy, as :meth:`~acpio.session.ActiveSession.read_to_string` takes them); file requests
        inside :attr:`cwd`.
        """
        session = await self.session()
        session.send_prompt(text)
        said = await session.read_to_string(permissions=permissions, files=self.cwd)
        return TurnResult(said, str(session.stop_reason))

    async def aclose(self) -> None:
        """Close the session (the connection closes with :func:`connect_client`)."""
        await self._stack.aclose()


@asynccontextmanager
async def connect_client(
    agent: AgentUnderTest,
    *,
    cwd: str | Path,
    protocol: Literal[1, 2] = 1,
    wait_timeout: float = 10.0,
) -> AsyncIterator[TestClient]:
    """Connect a :class:`TestClient` to ``agent``: an ``AgentApp``, a builder, a component or a command line.

    ``protocol`` is the ACP version to speak (an agent that answers another one fails here).
    Initializing must take at most ``wait_timeout`` seconds, and so must closing.
    """
    from acpio import schema as acp
    from acpio.jsonrpc.builder import open_transport
    from acpio.roles import Client

    conversation = Conversation()
    transport = Tap(await open_transport(as_component(agent)), conversation)
    ready: asyncio.Future[TestClient] = asyncio.get_running_loop().create_future()
    finished = asyncio.Event()

    async def main(cx: SessionConnection) -> None:
        request: Any = None
        if protocol == 1:
            files = acp.FileSystemCapabilities(read_text_file=True, write_text_file=True)
            request = acp.InitializeRequest(
                protocol_version=1, client_capabilities=acp.ClientCapabilities(fs=files)
            )
        await cx.initialize(request)
        client = TestClient(cx, conversation, Path(cwd))
        ready.set_result(client)
        try:
            await finished.wait()
        finally:
            await client.aclose()

    builder = Client.builder(name="acpio test client", protocol=protocol)
    task = asyncio.create_task(builder.connect_with(transport, main))
    async with asyncio.timeout(wait_timeout):
        waiting: list[asyncio.Future[Any]] = [task, ready]
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    if not ready.done():
        await task  # it failed: raise why
        raise conversation.fail("the agent closed the connection before answering initialize")
    try:
        yield ready.result()
    finally:
        finished.set()
        try:
            async with asyncio.timeout(wait_timeout):
                await task
        except TimeoutError:
            task.cancel()
