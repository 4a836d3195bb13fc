"""The prompt turn and its cancellation (spec-conformance.md §G, §H, and A.11/A.12)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import pytest

from acpio.capabilities import CapabilityNotAdvertised
from acpio.errors import MethodNotFound, RequestCancelled
from acpio.jsonrpc import Builder, Connection, Responder, UntypedMessage
from acpio.roles import Agent, Client
from acpio.schema import (
    AgentCapabilities,
    AudioContent,
    CancelledPermissionOutcome,
    CancelNotification,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    InitializeRequest,
    NewSessionRequest,
    PermissionOption,
    PermissionOptionKind,
    PromptCapabilities,
    PromptRequest,
    PromptResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResourceLink,
    SelectedPermissionOutcome,
    SessionNotification,
    StopReason,
    TextContent,
    TextResourceContents,
    ToolCallUpdate,
    UsageUpdate,
)
from acpio.session import SessionMessage, TurnEnded

from ._support import (
    TIMEOUT,
    RecordingClient,
    ScriptAgent,
    ScriptCompatAgent,
    builder_client,
    chunk,
    compat_pair,
)

INIT = InitializeRequest(protocol_version=1)
IMAGE = ImageContent(data="iVBORw0KGgo=", mime_type="image/png")
AUDIO = AudioContent(data="UklGRg==", mime_type="audio/wav")
EMBEDDED = EmbeddedResource(resource=TextResourceContents(uri="file:///a.py", text="x = 1"))
LINK = ResourceLink(uri="file:///a.py", name="a.py")
ALL_CONTENT = AgentCapabilities(
    prompt_capabilities=PromptCapabilities(image=True, audio=True, embedded_context=True)
)


async def test_builder_refuses_prompt_content_the_agent_did_not_advertise() -> None:
    # 110: image/audio/embedded resource only when advertised; text and resource_link always (46, 233).
    agent = ScriptAgent()
    async with builder_client(agent) as (cx, tap):
        await cx.send_request(INIT)
        async with cx.build_session("/work").start_session() as session:
            cases: list[tuple[ContentBlock, str]] = [
                (IMAGE, "image"),
                (AUDIO, "audio"),
                (EMBEDDED, "embeddedContext"),
            ]
            for block, flag in cases:
                with pytest.raises(CapabilityNotAdvertised, match=rf"promptCapabilities\.{flag}"):
                    session.send_prompt([TextContent(text="look"), block])
            assert "session/prompt" not in tap.sent_methods()
            session.send_prompt([TextContent(text="read this"), LINK])
            async with asyncio.timeout(TIMEOUT):
                assert await session.read_to_string() == "readthis"
        # 111, 112: the agent received both blocks, parsed.
        prompt = agent.received[-1]
        assert isinstance(prompt, PromptRequest)
        assert [type(b) for b in prompt.prompt] == [TextContent, ResourceLink]
        assert [b["type"] for b in tap.sent_request("session/prompt")["params"]["prompt"]] == [
            "text",
            "resource_link",
        ]


async def test_builder_sends_advertised_prompt_content() -> None:
    async with builder_client(ScriptAgent(ALL_CONTENT)) as (cx, tap):
        await cx.send_request(INIT)
        async with cx.build_session("/work").start_session() as session:
            session.send_prompt([IMAGE, AUDIO, EMBEDDED])
            async with asyncio.timeout(TIMEOUT):
                await session.read_to_string()
        blocks = tap.sent_request("session/prompt")["params"]["prompt"]
        assert [b["type"] for b in blocks] == ["image", "audio", "resource"]


async def test_compat_refuses_prompt_content_the_agent_did_not_advertise() -> None:
    async with compat_pair() as (_, client, tap):
        await client.initialize(INIT)
        sid = (await client.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))).session_id
        with pytest.raises(CapabilityNotAdvertised, match=r"promptCapabilities\.image"):
            await client.prompt(PromptRequest(session_id=sid, prompt=[IMAGE]))
        assert "session/prompt" not in tap.sent_methods()
        done = await client.prompt(PromptRequest(session_id=sid, prompt=[TextContent(text="hi"), LINK]))
        assert done.stop_reason == StopReason.END_TURN


async def test_compat_prompt_before_initialize_is_refused() -> None:
    # 109 (trait style).
    async with compat_pair() as (_, client, tap):
        with pytest.raises(RuntimeError, match="before initialize"):
            await client.prompt(PromptRequest(session_id="s", prompt=[TextContent(text="hi")]))
        assert tap.sent == []


async def test_builder_turn_updates_precede_the_stop_reason_and_turns_follow_each_other() -> None:
    # 12, 114, 118, 121: every update is read before the stop reason; a second turn after the first.
    async with builder_client(ScriptAgent()) as (cx, tap):
        await cx.send_request(INIT)
        async with cx.build_session("/work").start_session() as session, asyncio.timeout(TIMEOUT):
            session.send_prompt("one two three")
            seen = [message.text async for message in session]
            assert seen == ["one", "two", "three"]
            assert session.stop_reason == StopReason.END_TURN
            session.send_prompt("four")
            assert await session.read_to_string() == "four"
        prompts = [i for i, m in enumerate(tap.frames) if m[1].get("method") == "session/prompt"]
        first_answer = next(
            i
            for i, (d, m) in enumerate(tap.frames)
            if d == "in" and "result" in m and "stopReason" in m["result"]
        )
        assert prompts[0] < first_answer < prompts[1]
        assert tap.answer_to(tap.sent_request("session/prompt"))["result"] == {"stopReason": "end_turn"}


async def test_compat_every_update_is_handled_before_prompt_returns() -> None:
    # 12 (trait style).
    client = RecordingClient()
    async with compat_pair(client=client) as (_, agent, _tap):
        await agent.initialize(INIT)
        sid = (await agent.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))).session_id
        done = await agent.prompt(PromptRequest(session_id=sid, prompt=[TextContent(text="a b c")]))
        assert done.stop_reason == StopReason.END_TURN
        assert client.updates == [(sid, "a"), (sid, "b"), (sid, "c")]


def test_session_update_kinds_carry_their_discriminator_and_unknown_kinds_are_kept() -> None:
    # 115, 117.
    for kind in ("agent_message_chunk", "user_message_chunk", "agent_thought_chunk"):
        note = SessionNotification.model_validate(
            {"sessionId": "s", "update": {"sessionUpdate": kind, "content": {"type": "text", "text": "x"}}}
        )
        assert note.to_wire()["update"]["sessionUpdate"] == kind
    future = SessionNotification.model_validate(
        {"sessionId": "s", "update": {"sessionUpdate": "_vendor_thing"}}
    )
    assert future.to_wire()["update"]["sessionUpdate"] == "_vendor_thing"
    usage = UsageUpdate.model_validate({"sessionUpdate": "usage_update", "used": 10, "size": 100})
    assert (usage.used, usage.size) == (10, 100)
    for bad in ({"used": 1}, {"size": 1}):
        with pytest.raises(ValueError):
            UsageUpdate.model_validate({"sessionUpdate": "usage_update", **bad})


# --- cancellation ------------------------------------------------------------------------------


async def test_builder_cancel_is_a_notification_and_late_updates_precede_cancelled() -> None:
    # 11, 122, 126, 128, 129: the agent reads session/cancel while its prompt is pending, never
    # answers it, sends a last update, then ends the turn with cancelled; the client reads all of it.
    agent = ScriptAgent()
    async with builder_client(agent) as (cx, tap):
        await cx.send_request(INIT)
        async with cx.build_session("/work").start_session() as session, asyncio.timeout(TIMEOUT):
            session.send_prompt("wait")
            first = await session.read_update()
            assert not isinstance(first, TurnEnded)
            assert first.text == "waiting"
            session.cancel()
            rest = [message.text async for message in session]
            assert rest == ["after-cancel"]
            assert session.stop_reason == StopReason.CANCELLED
        cancel = [m for m in tap.sent if m.get("method") == "session/cancel"]
        assert cancel == [{"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": "s-1"}}]
        # Nothing came back for the notification: every response answers one of our requests.
        requests = {m["id"] for m in tap.sent if "id" in m}
        assert all(m["id"] in requests for m in tap.received if "method" not in m)


async def test_compat_cancel_reaches_the_running_turn_and_late_updates_precede_cancelled() -> None:
    client = RecordingClient()
    async with compat_pair(client=client) as (_, agent, tap):
        await agent.initialize(INIT)
        sid = (await agent.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))).session_id
        turn = asyncio.create_task(
            agent.prompt(PromptRequest(session_id=sid, prompt=[TextContent(text="wait")]))
        )
        await client.update_seen.wait()
        await agent.cancel(CancelNotification(session_id=sid))
        done = await turn
        assert done.stop_reason == StopReason.CANCELLED
        assert client.updates == [(sid, "waiting"), (sid, "after-cancel")]
        assert "id" not in next(m for m in tap.sent if m.get("method") == "session/cancel")


async def test_cancel_request_for_a_pending_prompt_gets_exactly_one_answer() -> None:
    # 130, 133, 137: $/cancel_request {requestId}; exactly one response (-32800 here).
    async with compat_pair() as (_, agent, tap):
        await agent.initialize(INIT)
        sid = (await agent.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))).session_id
        turn = asyncio.create_task(
            agent.prompt(PromptRequest(session_id=sid, prompt=[TextContent(text="wait")]))
        )
        await agent.client.update_seen.wait()  # type: ignore[attr-defined]  # the turn is running
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        request = tap.sent_request("session/prompt")
        cancel = next(m for m in tap.sent if m.get("method") == "$/cancel_request")
        assert cancel == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": request["id"]},
        }
        # A later round trip proves the answer arrived; exactly one answer for the prompt.
        await agent.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))
        assert tap.answer_to(request)["error"]["code"] == -32800


class AsksPermission(ScriptCompatAgent):
    """Asks permission during the turn; records the outcome the client gave."""

    outcomes: ClassVar[list[object]] = []

    async def prompt(self, params: PromptRequest) -> PromptResponse:
        options = [PermissionOption(option_id="ok", name="OK", kind=PermissionOptionKind.ALLOW_ONCE)]
        tool_call = ToolCallUpdate(tool_call_id="t-1", title="Edit")
        await self.conn.session_update(chunk(params.session_id, "asking"))
        answer = await self.conn.request_permission(
            RequestPermissionRequest(session_id=params.session_id, tool_call=tool_call, options=options)
        )
        self.outcomes.append(answer.outcome)
        return PromptResponse(stop_reason=StopReason.CANCELLED)


class SlowToDecide(RecordingClient):
    """Never decides a permission request by itself (a user who has not clicked yet)."""

    def __init__(self) -> None:
        super().__init__()
        self.gave_up = asyncio.Event()

    async def request_permission(self, params: RequestPermissionRequest) -> RequestPermissionResponse:
        try:
            await asyncio.Event().wait()
        finally:
            self.gave_up.set()  # cancelled: the dialog can close
        raise AssertionError("unreachable")


async def test_cancel_answers_pending_permission_requests_cancelled() -> None:
    # 124, 147 (trait style): cancel() answers the pending request_permission and cancels its task.
    client = SlowToDecide()
    AsksPermission.outcomes = []
    async with compat_pair(AsksPermission, client) as (_, agent, tap):
        await agent.initialize(INIT)
        sid = (await agent.new_session(NewSessionRequest(cwd="/work", mcp_servers=[]))).session_id
        turn = asyncio.create_task(
            agent.prompt(PromptRequest(session_id=sid, prompt=[TextContent(text="x")]))
        )
        await client.update_seen.wait()
        await agent.cancel(CancelNotification(session_id=sid))
        try:
            async with asyncio.timeout(1):
                assert (await turn).stop_reason == StopReason.CANCELLED
                await client.gave_up.wait()
        finally:
            turn.cancel()
        assert isinstance(AsksPermission.outcomes[0], CancelledPermissionOutcome)
        # On the wire: exactly one answer, the cancelled outcome (not an error).
        assert permission_answers(tap) == [(1, [{"outcome": {"outcome": "cancelled"}}])]


def asking_agent(outcomes: list[object], asks: int = 1) -> Builder:
    """A builder-style agent whose turn asks ``asks`` permissions at once, then says ``asked``.

    It waits for every answer, records the outcomes, and ends the turn ``cancelled`` if one was
    cancelled (``end_turn`` otherwise).
    """
    app = Agent.builder(name="asking-agent")

    @app.on_request
    async def prompt(req: PromptRequest, responder: Responder[Any], cx: Connection) -> None:
        sid = req.session_id
        options = [PermissionOption(option_id="ok", name="OK", kind=PermissionOptionKind.ALLOW_ONCE)]
        asked = [
            cx.send_request(
                RequestPermissionRequest(
                    session_id=sid,
                    tool_call=ToolCallUpdate(tool_call_id=f"t-{n}", title="Edit"),
                    options=options,
                )
            )
            for n in range(asks)
        ]
        cx.send_notification(chunk(sid, "asked"))

        async def finish() -> None:
            for sent in asked:
                outcomes.append((await sent).outcome)
            cancelled = any(isinstance(outcome, CancelledPermissionOutcome) for outcome in outcomes)
            responder.respond(
                PromptResponse(stop_reason=StopReason.CANCELLED if cancelled else StopReason.END_TURN)
            )

        cx.spawn(finish)

    app.merge(ScriptAgent().builder())  # initialize, session/new, session/cancel
    return app


def permission_answers(tap: Any) -> list[tuple[Any, Any]]:
    """Every permission request the client received, paired with every answer it sent to it."""
    asks = [m for m in tap.received if m.get("method") == "session/request_permission"]
    return [
        (ask["id"], [m.get("result") for m in tap.sent if "method" not in m and m["id"] == ask["id"]])
        for ask in asks
    ]


async def test_builder_session_cancel_answers_pending_permission_requests_cancelled() -> None:
    # 124, 147 (builder style, read from the session): the request the user has not answered yet
    # and the one still queued are both answered cancelled when the client cancels the turn.
    outcomes: list[object] = []
    async with builder_client(asking_agent(outcomes, asks=2)) as (cx, tap):
        await cx.send_request(INIT)
        async with cx.build_session("/work").start_session() as session, asyncio.timeout(TIMEOUT):
            session.send_prompt("edit this")
            first = await session.read_update()
            assert isinstance(first, SessionMessage)
            assert first.method == "session/request_permission"
            with pytest.raises(MethodNotFound):  # a round trip: the agent's other messages are queued
                await cx.send_request("_test/barrier", {})
            session.cancel()
            assert first.dispatch.responder.done  # type: ignore[union-attr]
            rest = [message.text async for message in session]
            assert rest == ["asked"]  # the queued request was answered, and dropped from the queue
            assert session.stop_reason == StopReason.CANCELLED
            # The user clicks too late: the answer is ignored.
            first.dispatch.responder.respond(  # type: ignore[union-attr]
                RequestPermissionResponse(outcome=SelectedPermissionOutcome(option_id="ok"))
            )
        assert outcomes == [CancelledPermissionOutcome(), CancelledPermissionOutcome()]
        cancelled = {"outcome": {"outcome": "cancelled"}}
        assert [answers for _, answers in permission_answers(tap)] == [[cancelled], [cancelled]]
        methods = [m.get("method", "answer") for d, m in tap.frames if d == "out"]
        assert methods[-3:] == ["session/cancel", "answer", "answer"]


async def test_builder_handler_permission_request_is_answered_cancelled_and_its_work_stopped() -> None:
    # 124 (builder style, a client handler deciding in the background): session/cancel, here sent
    # untyped, answers the request and stops the work the handler runs with run_until_cancelled().
    outcomes: list[object] = []
    asked = asyncio.Event()
    stopped = asyncio.Event()
    client = Client.builder(name="client")

    @client.on_request
    async def request_permission(
        req: RequestPermissionRequest, responder: Responder[RequestPermissionResponse], cx: Connection
    ) -> None:
        async def decide() -> None:
            asked.set()
            try:
                await responder.run_until_cancelled(asyncio.Event().wait())  # the user never clicks
            except RequestCancelled:
                stopped.set()

        cx.spawn(decide)

    async with builder_client(asking_agent(outcomes), client=client) as (cx, tap):
        await cx.send_request(INIT)
        async with cx.build_session("/work").start_session() as session, asyncio.timeout(TIMEOUT):
            session.send_prompt("edit this")
            await asked.wait()
            cx.send_notification(UntypedMessage("session/cancel", {"sessionId": session.session_id}))
            await stopped.wait()
            assert [message.text async for message in session] == ["asked"]
            assert session.stop_reason == StopReason.CANCELLED
        assert outcomes == [CancelledPermissionOutcome()]
        assert [answers for _, answers in permission_answers(tap)] == [
            [{"outcome": {"outcome": "cancelled"}}]
        ]


async def test_cancel_leaves_answered_permission_requests_and_other_sessions_alone() -> None:
    # Only the cancelled session's requests, and only those still unanswered, get the outcome.
    outcomes: list[object] = []
    async with builder_client(asking_agent(outcomes)) as (cx, _tap):
        await cx.send_request(INIT)
        async with (
            cx.build_session("/work").start_session() as one,
            cx.build_session("/work").start_session() as other,
            asyncio.timeout(TIMEOUT),
        ):
            one.send_prompt("edit this")
            ask = await one.read_update()
            assert isinstance(ask, SessionMessage)
            allow = RequestPermissionResponse(outcome=SelectedPermissionOutcome(option_id="ok"))
            ask.dispatch.responder.respond(allow)  # type: ignore[union-attr]
            other.send_prompt("edit that")
            pending = await other.read_update()
            assert isinstance(pending, SessionMessage)
            one.cancel()
            assert [message.text async for message in one] == ["asked"]
            assert one.stop_reason == StopReason.END_TURN  # the answer given stands
            assert not pending.dispatch.responder.done  # type: ignore[union-attr]
            pending.dispatch.responder.respond(allow)  # type: ignore[union-attr]
            assert [message.text async for message in other] == ["asked"]
        assert outcomes == [SelectedPermissionOutcome(option_id="ok")] * 2
