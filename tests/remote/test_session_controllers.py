"""Several clients on one session (unstable): controllers prompt, cancel, race to answer a turn's requests."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib.util
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import orjson
import pytest
import websockets

from acpio import Client, SessionConnection
from acpio import schema as acp
from acpio.app import AgentApp, Turn
from acpio.remote import RemoteAgent, RemoteServer
from acpio.session import (
    ActiveSession,
    AttachedRequestResolved,
    AttachedTurnEnded,
    ControlledSession,
    CreateElicitationMessage,
    RequestPermissionMessage,
    control_session,
)

pytest.importorskip("uvicorn")

ALLOW = acp.RequestPermissionResponse(outcome=acp.SelectedPermissionOutcome(option_id="allow"))
DENY = acp.RequestPermissionResponse(outcome=acp.SelectedPermissionOutcome(option_id="deny"))


def asking_app(store: str | None = None, asks: int = 1) -> AgentApp:
    """Says ``TEXT:begun``; a prompt starting with "ask" then asks ``asks`` permissions, saying each."""
    app = AgentApp("asking", unstable=True, store=store)

    @app.prompt
    async def prompt(turn: Turn) -> None:
        await turn.say(f"{turn.text}:begun ")
        if turn.text.startswith("ask"):
            for n in range(asks):
                async with turn.tool_call(f"Delete build{n}/", kind="delete") as call:
                    allowed = await turn.ask_permission(call)
                await turn.say(f"{n}:{'allowed' if allowed else 'denied'} ")

    return app


async def connected(url: str, main: Callable[[SessionConnection], Awaitable[Any]]) -> Any:
    async def run(cx: SessionConnection) -> Any:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        return await main(cx)

    return await Client.builder().connect_with(RemoteAgent(url), run)


def said(items: list[Any]) -> str:
    """The agent's text among what a controller read."""
    return "".join(
        item.update.content.text
        for item in items
        if isinstance(item, acp.SessionNotification)
        and isinstance(item.update, acp.AgentMessageChunk)
        and isinstance(item.update.content, acp.TextContent)
    )


async def owner_reads_turn(session: ActiveSession) -> tuple[str, list[Any]]:
    """The owner's text for its turn, and the ``request_resolved`` it was sent; it answers no request."""
    text: list[str] = []
    resolved: list[Any] = []
    async for message in session:
        if message.text is not None:
            text.append(message.text)
        elif message.method == AttachedRequestResolved.METHOD:
            resolved.append(AttachedRequestResolved.model_validate(message.dispatch.params))
    return "".join(text), resolved


async def first_answer_race(rounds: int) -> None:
    async with RemoteServer(asking_app(asks=rounds), port=0) as server:
        url = server.url.replace("http", "ws", 1)
        opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        both_attached = asyncio.Event()
        attached: list[str] = []

        async def owner(cx: SessionConnection) -> tuple[str, list[Any]]:
            async with cx.build_session(Path.cwd()).start_session() as session:
                opened.set_result(session.session_id)
                await both_attached.wait()
                session.send_prompt("ask")
                return await owner_reads_turn(session)

        async def controller(cx: SessionConnection, answer: acp.RequestPermissionResponse) -> Any:
            controlled = await control_session(cx, await opened)
            attached.append("x")
            if len(attached) == 2:
                both_attached.set()
            asked: dict[Any, str] = {}  # request id -> the option this controller chose
            resolved: list[AttachedRequestResolved] = []
            items: list[Any] = []
            while True:
                item = await controlled.read()
                if isinstance(item, AttachedTurnEnded):
                    return asked, resolved, said(items), item
                if isinstance(item, RequestPermissionMessage):
                    assert item.request.tool_call.title is not None
                    item.respond(answer)  # as soon as it is read: the two controllers race
                    assert isinstance(answer.outcome, acp.SelectedPermissionOutcome)
                    asked[item.dispatch.id] = answer.outcome.option_id
                elif isinstance(item, AttachedRequestResolved):
                    resolved.append(item)
                else:
                    items.append(item)

        async with asyncio.timeout(30):
            allowing = asyncio.ensure_future(connected(url, lambda cx: controller(cx, ALLOW)))
            denying = asyncio.ensure_future(connected(url, lambda cx: controller(cx, DENY)))
            owner_text, owner_resolved = await connected(url, owner)
            results = [await allowing, await denying]

    # every request was decided by exactly one controller; the other and the owner were told which answer won
    winners: list[str] = []
    for n in range(rounds):
        lost = []
        for asked, resolved, _, _ in results:
            ids = list(asked)
            mine = [r for r in resolved if r.request_id == ids[n]]
            lost.append(mine[0] if mine else None)
        assert sum(r is None for r in lost) == 1, lost  # one winner per request
        winner = next(i for i, r in enumerate(lost) if r is None)
        choice = list(results[winner][0].values())[n]
        winners.append(choice)
        loser = lost[1 - winner]
        assert loser is not None
        assert loser.method == "session/request_permission"
        assert loser.result == {"outcome": {"outcome": "selected", "optionId": choice}}
        assert owner_resolved[n].result == loser.result
    # the turn went by the winners' answers, and every client saw the same turn
    shown = {"allow": "allowed", "deny": "denied"}
    expected = "ask:begun " + "".join(f"{n}:{shown[choice]} " for n, choice in enumerate(winners))
    assert owner_text == expected
    for _, _, text, ended in results:
        assert text == expected
        assert ended.stop_reason == "end_turn"


LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {"asyncio": asyncio.new_event_loop}
if importlib.util.find_spec("uvloop") is not None:
    import uvloop

    LOOPS["uvloop"] = uvloop.new_event_loop


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_two_controllers_race_to_answer_the_first_answer_wins_the_others_are_told(loop: str) -> None:
    if loop not in LOOPS:
        pytest.skip("uvloop is not installed (pip install uvloop)")
    run_on(LOOPS[loop], first_answer_race(rounds=8))


def run_on(factory: Callable[[], asyncio.AbstractEventLoop], work: Coroutine[Any, Any, None]) -> None:
    with asyncio.Runner(loop_factory=factory) as runner:
        runner.run(work)


async def until_asked(controlled: ControlledSession) -> tuple[list[Any], RequestPermissionMessage]:
    """What a controller reads up to the turn's permission request, and the request."""
    items: list[Any] = []
    while True:
        item = await controlled.read()
        if isinstance(item, RequestPermissionMessage):
            return items, item
        items.append(item)


@pytest.mark.parametrize("store", [None, "memory:"], ids=["no-store", "store"])
async def test_the_owner_leaving_cancels_its_turn_and_the_controller_owns_the_session(
    store: str | None,
) -> None:
    async with RemoteServer(asking_app(store), port=0) as server:
        url = server.url.replace("http", "ws", 1)
        asked: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        attached = asyncio.Event()
        controller_asked = asyncio.Event()

        async def owner(cx: SessionConnection) -> None:
            async with cx.build_session(Path.cwd()).start_session() as session:
                asked.set_result(session.session_id)
                await attached.wait()
                session.send_prompt("ask first")
                while not isinstance(await session.read_update(), RequestPermissionMessage):
                    pass
                await controller_asked.wait()
            # the owner leaves with its turn waiting for the permission

        async def controller(cx: SessionConnection) -> None:
            session_id = await asked
            async with await control_session(cx, session_id) as controlled:
                attached.set()
                _, request = await until_asked(controlled)
                controller_asked.set()
                items: list[Any] = []
                while not isinstance(item := await controlled.read(), AttachedTurnEnded):
                    items.append(item)
                # the owner's turn ended cancelled when it left; this late answer is ignored
                assert (item.stop_reason, item.error) == ("cancelled", None)
                request.respond(ALLOW)
                # the session stays open: this controller owns it now, its turn's requests come here alone
                controlled.send_prompt("ask again")
                items, request = await until_asked(controlled)
                assert said(items) == "ask again:begun "
                request.respond(DENY)
                items, ended = await controlled.read_turn()
                assert said(items) == "0:denied "
                assert ended.stop_reason == "end_turn"

        async with asyncio.timeout(20):
            taking_over = asyncio.ensure_future(connected(url, controller))
            await connected(url, owner)
            await taking_over
            if store is not None:  # the new owner's turn was recorded: a load replays both turns

                async def load(cx: SessionConnection) -> str:
                    start = cx.build_session_load(await asked, Path.cwd()).start_session()
                    async with start as session:
                        return "".join(m.text or "" for m in session.history)

                assert await connected(url, load) == "ask first:begun ask again:begun 0:denied "


async def test_a_controller_cancels_the_owners_turn() -> None:
    async with RemoteServer(asking_app(), port=0) as server:
        url = server.url.replace("http", "ws", 1)
        opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        attached = asyncio.Event()

        async def owner(cx: SessionConnection) -> None:
            async with cx.build_session(Path.cwd()).start_session() as session:
                opened.set_result(session.session_id)
                await attached.wait()
                session.send_prompt("ask")
                text, resolved = await owner_reads_turn(session)
                assert text == "ask:begun "  # the permission was never granted
                assert session.stop_reason == "cancelled"
                # the cancel withdrew the request ($/cancel_request): nobody's answer resolved it
                assert resolved == []

        async def controller(cx: SessionConnection) -> None:
            controlled = await control_session(cx, await opened)
            attached.set()
            items, _ = await until_asked(controlled)
            assert said(items) == "ask:begun "
            controlled.cancel()
            _, ended = await controlled.read_turn()
            assert ended.stop_reason == "cancelled"

        async with asyncio.timeout(20):
            cancelling = asyncio.ensure_future(connected(url, controller))
            await connected(url, owner)
            await cancelling


async def test_an_observer_is_not_asked_and_what_it_answers_or_sends_changes_nothing() -> None:
    async with RemoteServer(asking_app(), port=0) as server:
        url = server.url.replace("http", "ws", 1)
        opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        observer_tried = asyncio.Event()
        attached = asyncio.Event()

        async def owner(cx: SessionConnection) -> None:
            async with cx.build_session(Path.cwd()).start_session() as session:
                opened.set_result(session.session_id)
                await attached.wait()
                session.send_prompt("ask")
                async for message in session:
                    if isinstance(message, RequestPermissionMessage):
                        # an observer answering the same id on its own connection decides nothing
                        observer_tried.set()
                        await asyncio.sleep(0.3)
                        assert not message.answered
                        message.respond(DENY)
                assert session.stop_reason == "end_turn"

        async def observer() -> list[dict[str, Any]]:
            received: list[dict[str, Any]] = []
            async with websockets.connect(url) as ws:

                async def call(message: dict[str, Any]) -> dict[str, Any]:
                    await ws.send(orjson.dumps(message))
                    while True:
                        frame = orjson.loads(await ws.recv())
                        received.append(frame)
                        if frame.get("id") == message.get("id") and "method" not in frame:
                            return frame

                await call(
                    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
                )
                session_id = await opened
                attach = {"sessionId": session_id, "role": "observer"}
                answer = await call(
                    {"jsonrpc": "2.0", "id": 2, "method": "_acpio/session/attach", "params": attach}
                )
                assert answer["result"] == {"running": False}
                attached.set()
                await observer_tried.wait()
                allow = {"outcome": {"outcome": "selected", "optionId": "allow"}}
                for request_id in (0, 1, 2, 3):  # whatever id the owner's copy has: none was sent here
                    await ws.send(orjson.dumps({"jsonrpc": "2.0", "id": request_id, "result": allow}))
                await ws.send(
                    orjson.dumps(
                        {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session_id}}
                    )
                )
                prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "ask"}]}
                refused = await call(
                    {"jsonrpc": "2.0", "id": 3, "method": "session/prompt", "params": prompt}
                )
                assert refused["error"]["code"] == -32600
                assert "observer" in refused["error"]["message"]
                while not any(f.get("method") == "_acpio/session/turn_ended" for f in received):
                    received.append(orjson.loads(await ws.recv()))
            return received

        async with asyncio.timeout(20):
            watching = asyncio.ensure_future(observer())
            await connected(url, owner)
            received = await watching
        methods = [frame.get("method") for frame in received]
        assert "session/request_permission" not in methods
        ended = next(f for f in received if f.get("method") == "_acpio/session/turn_ended")
        assert ended["params"]["stopReason"] == "end_turn"
        text = "".join(
            f["params"]["update"]["content"]["text"]
            for f in received
            if f.get("method") == "session/update"
            and f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
        )
        assert text == "ask:begun 0:denied "


async def test_a_form_goes_to_the_controllers_that_show_forms_and_the_first_answer_fills_it() -> None:
    app = AgentApp("former", unstable=True)

    @dataclasses.dataclass
    class Release:
        version: str

    @app.prompt
    async def prompt(turn: Turn) -> None:
        answer = await turn.elicit("Which version?", Release)
        await turn.say(answer.value.version if answer.value is not None else answer.action)

    forms = acp.ClientCapabilities.model_validate({"elicitation": {"form": {}}})
    async with RemoteServer(app, port=0) as server:
        url = server.url.replace("http", "ws", 1)
        opened: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        attached: list[bool] = []
        both = asyncio.Event()

        async def start(cx: SessionConnection, capabilities: acp.ClientCapabilities) -> None:
            await cx.send_request(acp.InitializeRequest(protocol_version=1, client_capabilities=capabilities))

        async def owner(cx: SessionConnection) -> tuple[str, list[Any]]:
            await start(cx, forms)
            async with cx.build_session(Path.cwd()).start_session() as session:
                opened.set_result(session.session_id)
                await both.wait()
                session.send_prompt("release")
                return await owner_reads_turn(session)

        async def controller(cx: SessionConnection, capabilities: acp.ClientCapabilities) -> list[Any]:
            await start(cx, capabilities)
            controlled = await control_session(cx, await opened)
            attached.append(True)
            if len(attached) == 2:
                both.set()
            items: list[Any] = []
            while not isinstance(item := await controlled.read(), AttachedTurnEnded):
                if isinstance(item, CreateElicitationMessage):
                    item.respond(acp.CreateElicitationResponse(action="accept", content={"version": "2.1"}))
                items.append(item)
            return items

        async with asyncio.timeout(20):
            showing = asyncio.ensure_future(
                Client.builder().connect_with(RemoteAgent(url), lambda cx: controller(cx, forms))
            )
            plain = asyncio.ensure_future(
                Client.builder().connect_with(
                    RemoteAgent(url), lambda cx: controller(cx, acp.ClientCapabilities())
                )
            )
            text, resolved = await Client.builder().connect_with(RemoteAgent(url), owner)
            shown, not_shown = await showing, await plain
        assert text == "2.1"  # the controller's answer filled the form: the owner answered nothing
        assert [r.method for r in resolved] == ["elicitation/create"]
        assert resolved[0].result == {"action": "accept", "content": {"version": "2.1"}}
        assert [type(i) for i in shown if not isinstance(i, acp.SessionNotification)] == [
            CreateElicitationMessage
        ]
        assert not any(isinstance(i, CreateElicitationMessage) for i in not_shown)  # it shows no forms
        assert said(not_shown) == "2.1"


async def test_a_controller_attaching_while_a_permission_waits_is_asked_too_and_may_answer_first() -> None:
    async with RemoteServer(asking_app(), port=0) as server:
        url = server.url.replace("http", "ws", 1)
        asked: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def owner(cx: SessionConnection) -> tuple[str, list[Any]]:
            async with cx.build_session(Path.cwd()).start_session() as session:
                session.send_prompt("ask")
                text, resolved = "", []
                async for message in session:
                    if isinstance(message, RequestPermissionMessage):
                        asked.set_result(session.session_id)  # and this client does not answer
                    elif message.method == AttachedRequestResolved.METHOD:
                        resolved.append(AttachedRequestResolved.model_validate(message.dispatch.params))
                    elif message.text is not None:
                        text += message.text
                return text, resolved

        async def controller(cx: SessionConnection) -> str:
            controlled = await control_session(cx, await asked)
            assert controlled.running
            assert said(list(controlled.replay)) == "ask:begun "
            items, request = await until_asked(controlled)
            assert items == []  # the waiting request comes first, right after the replay
            request.respond(DENY)
            items, ended = await controlled.read_turn()
            assert ended.stop_reason == "end_turn"
            return said(items)

        async with asyncio.timeout(20):
            late = asyncio.ensure_future(connected(url, controller))
            text, resolved = await connected(url, owner)
            assert await late == "0:denied "
        assert text == "ask:begun 0:denied "
        assert [r.result for r in resolved] == [{"outcome": {"outcome": "selected", "optionId": "deny"}}]


async def test_a_controller_that_detached_no_longer_decides_what_it_was_asked() -> None:
    async with RemoteServer(asking_app(), port=0) as server:
        url = server.url.replace("http", "ws", 1)
        asked: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        attached, gone = asyncio.Event(), asyncio.Event()

        async def owner(cx: SessionConnection) -> str:
            async with cx.build_session(Path.cwd()).start_session() as session:
                asked.set_result(session.session_id)
                await attached.wait()
                session.send_prompt("ask")
                text = ""
                async for message in session:
                    if isinstance(message, RequestPermissionMessage):
                        await gone.wait()  # the controller detached and answered meanwhile
                        await asyncio.sleep(0.2)
                        message.respond(DENY)
                    elif message.text is not None:
                        text += message.text
                return text

        async def controller(cx: SessionConnection) -> None:
            controlled = await control_session(cx, await asked)
            attached.set()
            _, request = await until_asked(controlled)
            await controlled.detach()
            request.respond(ALLOW)  # too late: it left the session
            gone.set()

        async with asyncio.timeout(20):
            late = asyncio.ensure_future(connected(url, controller))
            text = await connected(url, owner)
            await late
        assert text == "ask:begun 0:denied "
