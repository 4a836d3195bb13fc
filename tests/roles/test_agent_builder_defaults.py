"""An Agent builder answers initialize by default, and a failing prompt fails only its request."""

from __future__ import annotations

import pytest

from acpio import Agent
from acpio import schema as acp
from acpio.capabilities import LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS
from acpio.jsonrpc import Builder, Connection, Responder
from acpio.testing import WirePeer, serving

PROMPT = {"sessionId": "s1", "prompt": [{"type": "text", "text": "hi"}]}


async def ask(peer: WirePeer, method: str, params: object) -> dict[str, object]:
    request_id = peer.request(method, params)
    answer = await peer.recv()
    assert answer["id"] == request_id
    return answer  # type: ignore[no-any-return]


async def initialize(app: Builder, version: int = 1) -> dict[str, object]:
    async with serving(app) as peer:
        answer = await ask(peer, "initialize", {"protocolVersion": version})
    assert "result" in answer, answer
    return answer["result"]  # type: ignore[return-value]


@pytest.mark.parametrize("version", SUPPORTED_PROTOCOL_VERSIONS)
async def test_a_supported_version_is_answered_in_kind(version: int) -> None:
    result = await initialize(Agent.builder(name="echo", version="1.0"), version)
    assert result["protocolVersion"] == version


@pytest.mark.parametrize("version", [0, 99])
async def test_an_unsupported_version_is_answered_with_the_latest(version: int) -> None:
    result = await initialize(Agent.builder(name="echo", version="1.0"), version)
    assert result["protocolVersion"] == LATEST_PROTOCOL_VERSION


async def test_agent_info_comes_from_the_builder() -> None:
    result = await initialize(Agent.builder(name="echo", version="1.2.3", title="Echo Agent"))
    assert result["agentInfo"] == {"name": "echo", "version": "1.2.3", "title": "Echo Agent"}
    untitled = await initialize(Agent.builder(name="echo", version="1.0"))
    assert untitled["agentInfo"] == {"name": "echo", "version": "1.0"}


async def test_an_agent_with_no_optional_handlers_promises_nothing() -> None:
    app = Agent.builder(name="plain", version="1.0")

    @app.on_request
    async def new_session(req: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id="s1")

    result = await initialize(app)
    assert result["agentCapabilities"] == {}  # no loadSession, prompt capabilities all false


async def test_capabilities_follow_the_registered_handlers() -> None:
    app = Agent.builder(name="sessions", version="1.0")

    @app.on_request
    async def load(req: acp.LoadSessionRequest) -> acp.LoadSessionResponse:
        return acp.LoadSessionResponse()

    @app.on_request
    async def listing(req: acp.ListSessionsRequest) -> acp.ListSessionsResponse:
        return acp.ListSessionsResponse(sessions=[])

    @app.on_request
    async def resume(req: acp.ResumeSessionRequest) -> acp.ResumeSessionResponse:
        return acp.ResumeSessionResponse()

    caps = (await initialize(app))["agentCapabilities"]
    assert caps == {"loadSession": True, "sessionCapabilities": {"list": {}, "resume": {}}}
    parsed = acp.AgentCapabilities.model_validate(caps)
    assert parsed.prompt_capabilities is None or not parsed.prompt_capabilities.image


async def test_the_builders_own_initialize_handler_wins() -> None:
    app = Agent.builder(name="mine", version="1.0")

    @app.on_request
    async def init(req: acp.InitializeRequest) -> acp.InitializeResponse:
        prompts = acp.PromptCapabilities(image=True)
        return acp.InitializeResponse(
            protocol_version=1, agent_capabilities=acp.AgentCapabilities(prompt_capabilities=prompts)
        )

    result = await initialize(app)
    assert result == {"protocolVersion": 1, "agentCapabilities": {"promptCapabilities": {"image": True}}}


async def test_bad_initialize_params_answer_invalid_params() -> None:
    async with serving(Agent.builder(name="echo", version="1.0")) as peer:
        answer = await ask(peer, "initialize", {"protocolVersion": "one"})
    assert answer["error"]["code"] == -32602  # type: ignore[index]


def failing_agent(*, error_details: bool = True) -> Builder:
    app = Agent.builder(name="fragile", version="1.0", error_details=error_details)
    turns: list[str] = []

    @app.on_request
    async def prompt(req: acp.PromptRequest, cx: Connection) -> acp.PromptResponse:
        turns.append(req.session_id)
        if len(turns) == 1:
            raise RuntimeError("the model went away")
        return acp.PromptResponse(stop_reason=acp.StopReason.END_TURN)

    return app


async def test_a_prompt_that_raises_answers_internal_error_with_its_message_and_the_agent_goes_on() -> None:
    async with serving(failing_agent()) as peer:
        await ask(peer, "initialize", {"protocolVersion": 1})
        failed = await ask(peer, "session/prompt", PROMPT)
        assert failed["error"] == {
            "code": -32603,
            "message": "Internal error",
            "data": {"details": "the model went away", "type": "RuntimeError"},
        }
        second = await ask(peer, "session/prompt", PROMPT)
        assert second["result"] == {"stopReason": "end_turn"}


async def test_error_details_false_hides_the_message() -> None:
    async with serving(failing_agent(error_details=False)) as peer:
        failed = await ask(peer, "session/prompt", PROMPT)
        assert failed["error"] == {"code": -32603, "message": "Internal error"}
        assert (await ask(peer, "session/prompt", PROMPT))["result"] == {"stopReason": "end_turn"}


async def test_a_prompt_turn_spawned_by_its_handler_fails_only_its_request() -> None:
    app = Agent.builder(name="spawner", version="1.0")
    turns: list[str] = []

    @app.on_request
    async def prompt(
        req: acp.PromptRequest, responder: Responder[acp.PromptResponse], cx: Connection
    ) -> None:
        async def turn() -> None:
            turns.append(req.session_id)
            if len(turns) == 1:
                raise RuntimeError("turn one broke")
            responder.respond(acp.PromptResponse(stop_reason=acp.StopReason.END_TURN))

        cx.spawn(turn)

    async with serving(app) as peer:
        failed = await ask(peer, "session/prompt", PROMPT)
        assert failed["error"]["data"] == {"details": "turn one broke", "type": "RuntimeError"}  # type: ignore[index]
        assert (await ask(peer, "session/prompt", PROMPT))["result"] == {"stopReason": "end_turn"}
