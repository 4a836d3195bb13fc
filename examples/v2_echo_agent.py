"""An echo agent on ACP v2, in the builder style, over stdio: each prompt's text comes back.

It speaks v2 only, with typed handlers on ``acpio.schema.v2``'s models: a v1 client's
``initialize`` is refused (``-32602``, it has no ``info``; ``-32022`` when it asks for 1 in v2's
shape). A v2 turn: ``session/prompt`` is answered at once with the id of the user's message; the
turn then goes on in ``session/update`` notifications (the user message, ``state_update``
running, the reply's chunks, ``state_update`` idle with the stop reason). To serve v1 clients as
well, put it behind ``acpio.VersionRouter`` beside a v1 agent (docs/v2.md).

Run by any ACP v2 client: ``python examples/v2_echo_agent.py``
"""

from __future__ import annotations

import uuid

import acpio
from acpio import AcpConnection, Agent, Builder, Responder, Stdio, select_version
from acpio.schema import v2


def echo_agent() -> Builder[AcpConnection]:
    """The v2 echo agent's builder (served on stdio below; ``tests/router`` serves it in-process too)."""
    app = Agent.builder(name="v2-echo", version="1.0")

    @app.on_request
    async def initialize(request: v2.InitializeRequest) -> v2.InitializeResponse:
        return v2.InitializeResponse(
            protocol_version=select_version(request.protocol_version, (2,)),  # -32022 below 2
            info=v2.Implementation(name="v2-echo", version="1.0"),
            capabilities=v2.AgentCapabilities(session=v2.SessionCapabilities()),  # {} = the session methods
        )

    @app.on_request
    async def new_session(request: v2.NewSessionRequest) -> v2.NewSessionResponse:
        return v2.NewSessionResponse(session_id=f"echo-{uuid.uuid4().hex[:8]}")

    @app.on_request
    async def prompt(
        request: v2.PromptRequest, responder: Responder[v2.PromptResponse], cx: AcpConnection
    ) -> None:
        user_message = f"user-{uuid.uuid4().hex[:8]}"
        responder.respond(v2.PromptResponse(message_id=user_message))  # accepted; the turn goes on

        def update(change: v2.SessionUpdate) -> None:
            cx.send_notification(v2.UpdateSessionNotification(session_id=request.session_id, update=change))

        update(v2.UserMessage(message_id=user_message, content=request.prompt))
        update(v2.RunningStateUpdate())
        reply = f"agent-{uuid.uuid4().hex[:8]}"
        for block in request.prompt:
            if isinstance(block, v2.TextContent):
                update(v2.AgentMessageChunk(message_id=reply, content=v2.TextContent(text=block.text)))
        update(v2.IdleStateUpdate(stop_reason="end_turn"))

    return app


if __name__ == "__main__":
    acpio.run(echo_agent().serve(Stdio()))
