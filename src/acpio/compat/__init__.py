"""The trait-style API: subclass :class:`Agent` or :class:`Client`, serve it with a connection.

This is the shape of the Rust SDK's ``Agent``/``Client`` traits and of the official Python SDK
(``acp``), on the acpio engine. One async method per protocol method, taking the typed params
model and returning the typed result::

    from acpio.compat import Agent, AgentSideConnection
    from acpio.schema import PromptRequest, PromptResponse, StopReason
    from acpio.transports import Stdio

    class Echo(Agent):
        def __init__(self, client: AgentSideConnection) -> None:
            self.client = client  # the client's methods: session_update, request_permission...

        async def prompt(self, params: PromptRequest) -> PromptResponse:
            return PromptResponse(stop_reason=StopReason.END_TURN)

    await AgentSideConnection(Echo, Stdio()).listen()

* :class:`Agent` / :class:`Client`: the traits (a method you do not override answers ``-32601``);
* :class:`AgentSideConnection` serves an ``Agent`` and is the ``Client`` it talks to;
  :class:`ClientSideConnection` serves a ``Client`` and is the ``Agent`` it talks to;
* ``conn.subscribe()``: every message with its :class:`StreamDirection`, as :class:`StreamMessage`;
* :data:`AGENT_METHODS` / :data:`CLIENT_METHODS`: which Python method handles which wire method.

The role names ``acpio.Agent`` and ``acpio.Client`` belong to the builder API; these traits live
here. ``docs/migration.md`` maps the official SDK's names to these.
"""

from acpio.compat.connection import AGENT_METHODS, CLIENT_METHODS, AgentSideConnection, ClientSideConnection
from acpio.compat.stream import StreamDirection, StreamMessage, Subscription
from acpio.compat.table import TraitMethod
from acpio.compat.traits import Agent, Client

__all__ = [
    "AGENT_METHODS",
    "CLIENT_METHODS",
    "Agent",
    "AgentSideConnection",
    "Client",
    "ClientSideConnection",
    "StreamDirection",
    "StreamMessage",
    "Subscription",
    "TraitMethod",
]
