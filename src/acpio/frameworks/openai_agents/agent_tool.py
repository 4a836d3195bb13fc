"""An ACP agent as a tool of an OpenAI Agents SDK agent: :func:`acp_agent_tool`.

The tool takes a ``prompt``; each call starts the ACP agent (or connects to it), opens a session in
the tool's directory, prompts it, and returns the text the agent answered, read with
:meth:`ActiveSession.read_to_string <acpio.session.ActiveSession.read_to_string>`: the agent's
permission requests are answered by ``permissions``, its file requests inside ``cwd`` when
``files`` is true. Cancelling the run cancels the call, and the agent process is stopped.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agents import FunctionTool, function_tool

from acpio.client import PermissionChoice
from acpio.jsonrpc.builder import Target
from acpio.roles import Client
from acpio.schema import ClientCapabilities, FileSystemCapabilities, InitializeRequest
from acpio.session import SessionConnection
from acpio.transports.subprocess import AcpAgent

__all__ = ["acp_agent_tool"]


def acp_agent_tool(
    agent: str | Sequence[str] | Target,
    *,
    name: str,
    description: str,
    cwd: str | Path = ".",
    permissions: PermissionChoice = "deny",
    files: bool = False,
) -> FunctionTool:
    """A function tool that asks the ACP agent ``agent`` (a command line, or any ACP target) a prompt.

    ``name`` and ``description`` are what the model sees. ``cwd`` is the session's directory (and
    the agent process's). ``permissions`` answers the agent's permission requests (``"allow"``,
    ``"deny"``, a callback or a policy, as ``read_to_string`` takes them); with ``files`` the
    client offers the agent ``fs/read_text_file`` and ``fs/write_text_file``, confined to ``cwd``.
    A turn that ends other than ``end_turn`` says so after the text.
    """
    root = Path(cwd).resolve()

    async def ask(prompt: str) -> str:
        """Ask the agent.

        Args:
            prompt: What to ask the agent, in full: it does not see this conversation.
        """
        return await Client.builder().connect_with(
            _target(agent, root), lambda cx: _prompt(cx, prompt, root, permissions, files)
        )

    return function_tool(ask, name_override=name, description_override=description)


def _target(agent: str | Sequence[str] | Target, root: Path) -> Target:
    if isinstance(agent, str):
        return AcpAgent(agent, cwd=root)
    if isinstance(agent, Sequence):
        return AcpAgent(list(agent), cwd=root)
    return agent


async def _prompt(
    cx: SessionConnection, prompt: str, root: Path, permissions: PermissionChoice, files: bool
) -> str:
    offered = FileSystemCapabilities(read_text_file=True, write_text_file=True) if files else None
    capabilities = ClientCapabilities(fs=offered) if offered else ClientCapabilities()
    await cx.send_request(InitializeRequest(protocol_version=1, client_capabilities=capabilities))
    async with cx.build_session(root).start_session() as session:
        session.send_prompt(prompt)
        text = await session.read_to_string(permissions=permissions, files=root if files else None)
        stopped = session.stop_reason
    return text if stopped == "end_turn" else f"{text}\n[the agent stopped: {stopped}]"
