"""The trait style: subclass :class:`AgentTrait` or :class:`ClientTrait`, serve it with a connection.

This is the shape of the Rust SDK's ``Agent``/``Client`` traits and of the official Python SDK
(``acp``), on the acpio engine: one async method per protocol method, taking the typed params
model and returning the typed result::

    from acpio.traits import AgentSideConnection, AgentTrait
    from acpio.schema import PromptRequest, PromptResponse, StopReason
    from acpio.transports import Stdio

    class Echo(AgentTrait):
        def __init__(self, client: AgentSideConnection) -> None:
            self.client = client  # the client's methods: session_update, request_permission...

        async def prompt(self, params: PromptRequest) -> PromptResponse:
            return PromptResponse(stop_reason=StopReason.END_TURN)

    await AgentSideConnection(Echo, Stdio()).serve()

* :class:`AgentTrait` / :class:`ClientTrait`: the classes to subclass (a method you do not
  override answers ``-32601``);
* :class:`AgentSideConnection` serves an ``AgentTrait`` and is the ``ClientTrait`` it talks to;
  :class:`ClientSideConnection` serves a ``ClientTrait`` and is the ``AgentTrait`` it talks to;
* ``conn.subscribe()``: every message with its :class:`StreamDirection`, as :class:`StreamMessage`;
* :data:`AGENT_METHODS` / :data:`CLIENT_METHODS`: which Python method handles which wire method.

The names ``acpio.Agent`` and ``acpio.Client`` are the *roles* of the builder API
(``Agent.builder()``); the classes you subclass here end in ``Trait``. ``docs/migration.md`` maps
the official SDK's names to these.
"""

from acpio.traits.bases import AgentTrait, ClientTrait
from acpio.traits.connection import AGENT_METHODS, CLIENT_METHODS, AgentSideConnection, ClientSideConnection
from acpio.traits.stream import StreamDirection, StreamMessage, Subscription
from acpio.traits.table import TraitMethod

__all__ = [
    "AGENT_METHODS",
    "CLIENT_METHODS",
    "AgentSideConnection",
    "AgentTrait",
    "ClientSideConnection",
    "ClientTrait",
    "StreamDirection",
    "StreamMessage",
    "Subscription",
    "TraitMethod",
]
