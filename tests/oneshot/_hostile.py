"""A scripted in-process agent for the security tests: it sends what a hostile agent would.

``scripted_agent(steps)`` builds an agent whose turn runs ``steps`` in order. A step is either a
request the agent sends the client (``("terminal/create", {...})``; the session id is filled in
when the params leave it out) or a ``session/update`` (``("update", {...})``). Every answer the
client gives (a result or an error, as the JSON object of the response) is appended to
``agent.answers``, in order; the turn then ends with ``end_turn``.
"""

from __future__ import annotations

from typing import Any

from acpio import Agent
from acpio import schema as acp
from acpio.errors import RequestError
from acpio.jsonrpc import Connection

SESSION_ID = "hostile-1"

Step = tuple[str, dict[str, Any]]


class ScriptedAgent:
    """The builder to pass as ``PromptOptions.agent`` and what the client answered."""

    def __init__(self, steps: list[Step], *, session_id: str = SESSION_ID) -> None:
        self.steps = steps
        self.session_id = session_id
        self.answers: list[dict[str, Any]] = []
        self.builder = self._build()

    def _build(self) -> Any:
        app = Agent.builder(name="hostile")

        @app.on_request
        async def initialize(req: acp.InitializeRequest) -> acp.InitializeResponse:
            return acp.InitializeResponse(protocol_version=1)

        @app.on_request
        async def new_session(req: acp.NewSessionRequest) -> acp.NewSessionResponse:
            return acp.NewSessionResponse(session_id=self.session_id)

        @app.on_request
        async def prompt(req: acp.PromptRequest, responder: Any, cx: Connection) -> None:
            async def turn() -> None:
                for method, params in self.steps:
                    if method == "update":
                        cx.send_notification(
                            acp.SessionNotification.model_validate(
                                {"sessionId": self.session_id, "update": params}
                            )
                        )
                        continue
                    sent = {"sessionId": self.session_id, **params}
                    try:
                        result = await cx.send_request(method, sent)
                    except RequestError as exc:
                        self.answers.append(
                            {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
                        )
                    else:
                        self.answers.append({"result": result})
                responder.respond(acp.PromptResponse(stop_reason=acp.StopReason.END_TURN))

            cx.spawn(turn)

        return app
