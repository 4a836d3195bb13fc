"""An ``AgentApp`` turn's verbs send, store and forward the same bytes as ``turn.update`` does.

The verbs that fill in their updates (``say``, ``think``, ``plan``, ``report_usage``, tool calls)
write them from templates; ``turn.update(model)`` writes the model it is given with pydantic. One
turn runs every verb with awkward text; a second session then sends, through ``turn.update``, the
models the first turn's history reads back. Both turns' frames, stored histories and (v1) the
frames an attached observer receives must be the same bytes, session ids aside.
"""

from __future__ import annotations

import asyncio
import itertools
import tracemalloc
from pathlib import Path
from typing import Any
from unittest import mock

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpio import schema as acp
from acpio.app import AgentApp, Turn, protocol_v2, v2_shapes
from acpio.testing import WirePeer, serving

from ._wire import open_session, send_prompt
from ._wire_v2 import initialize_v2, is_idle, prompt_v2

AWKWARD = [
    "plain",
    "",
    'quote " backslash \\ slash /',
    "controls \x00\x01\x08\t\n\x0b\x0c\r\x1b\x1f DEL \x7f C1 \x85",
    "separators \u2028 \u2029 BOM \ufeff",
    "non-BMP \U0001f600 \U00010348, combining e\u0301",
]
_FRAME_HEAD = b'{"jsonrpc":"2.0","method":"session/update","params":'
#: Updates of the protocol's, not of the prompt function: left out of the comparison.
_NOT_THE_TURNS = {"user_message_chunk", "user_message", "state_update"}


async def run_verbs(turn: Turn) -> None:
    """Every verb written from a template, with awkward values."""
    for text in AWKWARD:
        await turn.say(text)
    await turn.think('thinking "hard" \u2028')
    await turn.think("")
    await turn.say("after a thought")
    await turn.plan(["read \U0001f600", 'write "it"'])
    await turn.report_usage(1_200, 200_000, cost=0.1 + 0.2, currency="EUR")
    await turn.report_usage(5, 10)
    call_meta = {"acpio.test": [1, 2.5, None], "why": 'a "quoted" \u2028 reason'}
    raw = {"path": 'notes "1".txt', "lines": [1, -2, 3.25e-9], "ok": True, "none": None}
    async with turn.tool_call(
        'Read "notes"', kind="read", locations=["notes.txt"], raw_input=raw, meta=call_meta
    ) as call:
        await call.update(status="in_progress", text="reading \u2026\n", raw_output={"read": 3})
        await call.update(title="Edit notes", diff=("notes.txt", "old\nline\n", "new\nline\n"))
        await call.update(diff=("new.txt", None, "fresh \U0001f600"))
        await call.show_terminal("term_1")
        if turn.protocol_version == 2:
            await call.update(status="paused")
    async with turn.tool_call("Fails", on_error="report"):
        raise ValueError('no such file: "x"\n')
    async with turn.tool_call("Completes"):
        pass


def wire_app(store: str | None, protocols: tuple[int, ...], read: list[acp.SessionUpdate]) -> AgentApp:
    """``verbs`` runs every verb; ``history`` reads its updates into ``read``; ``typed`` sends them."""
    app = AgentApp("wire", unstable=True, store=store, protocols=protocols)  # type: ignore[arg-type]

    @app.prompt
    async def prompt(turn: Turn) -> None:
        if turn.text == "verbs":
            await run_verbs(turn)
        elif turn.text == "history":
            read.extend(turn.history[-1].updates)
        elif turn.text == "typed":
            for update in read:
                await turn.update(update)

    return app


def turn_updates(frames: list[bytes]) -> list[bytes]:
    """The ``session/update`` frames of the prompt function (not the prompt's echo, not v2's states)."""
    return [
        frame
        for frame in frames
        if frame.startswith(_FRAME_HEAD)
        and orjson.loads(frame)["params"]["update"]["sessionUpdate"] not in _NOT_THE_TURNS
    ]


async def frames_of_turn_v1(peer: WirePeer, session_id: str, text: str) -> list[bytes]:
    """Prompt ``text``; every frame up to its answer, as bytes."""
    asked = send_prompt(peer, session_id, text)
    frames: list[bytes] = []
    while True:
        frame = await peer.recv_raw()
        assert frame is not None
        message = orjson.loads(frame)
        if message.get("id") == asked and "method" not in message:
            assert message["result"]["stopReason"] == "end_turn", message
            return frames
        frames.append(frame)


async def frames_of_turn_v2(peer: WirePeer, session_id: str, text: str) -> list[bytes]:
    """Prompt ``text`` (v2); every frame up to the turn's idle state, as bytes."""
    prompt_v2(peer, session_id, text)
    frames: list[bytes] = []
    while True:
        frame = await peer.recv_raw()
        assert frame is not None
        frames.append(frame)
        if is_idle(orjson.loads(frame)):
            assert orjson.loads(frame)["params"]["update"]["stopReason"] == "end_turn"
            return frames


async def stored(app: AgentApp, session_id: str) -> list[bytes]:
    """The session's stored updates, but the prompts."""
    assert app.store is not None
    await app.store.flush()
    return [
        params
        async for params in app.store.history(session_id)
        if orjson.loads(params)["update"]["sessionUpdate"] not in _NOT_THE_TURNS
    ]


def params_of(frames: list[bytes]) -> list[bytes]:
    return [frame[len(_FRAME_HEAD) : -1] for frame in frames]


def as_session(frames: list[bytes], session_id: str, instead: str) -> list[bytes]:
    return [frame.replace(session_id.encode(), instead.encode()) for frame in frames]


async def attach(observer: WirePeer, session_id: str) -> list[bytes]:
    """Attach ``observer`` to the session; the turns' updates it was replayed."""
    observer.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
    await observer.response_to(1)
    asked = observer.request("_acpio/session/attach", {"sessionId": session_id, "role": "observer"})
    replayed: list[bytes] = []
    while True:
        frame = await observer.recv_raw()
        assert frame is not None
        if orjson.loads(frame).get("id") == asked:
            return turn_updates(replayed)
        replayed.append(frame)


async def attach_observer(app: AgentApp, session_id: str) -> list[bytes]:
    """What an observer attaching now is replayed of the session's turns."""
    async with serving(app.builder()) as observer:
        return await attach(observer, session_id)


async def test_v1_verbs_send_store_and_forward_the_bytes_turn_update_does(tmp_path: Path) -> None:
    read: list[acp.SessionUpdate] = []
    app = wire_app("memory:", (1,), read)
    async with serving(app.builder()) as owner, serving(app.builder()) as observer:
        session_id = await open_session(owner, tmp_path, {})
        await attach(observer, session_id)

        fast = turn_updates(await frames_of_turn_v1(owner, session_id, "verbs"))
        watched: list[bytes] = []
        while len(watched) < len(fast):
            frame = await observer.recv_raw()
            assert frame is not None
            watched += turn_updates([frame])
        late = await attach_observer(app, session_id)  # replayed the turn: from its history
        assert await frames_of_turn_v1(owner, session_id, "history") == []

        new = owner.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        other = (await owner.response_to(new))["result"]["sessionId"]
        typed = as_session(turn_updates(await frames_of_turn_v1(owner, other, "typed")), other, session_id)
        fast_stored = await stored(app, session_id)
        typed_stored = as_session(await stored(app, other), other, session_id)

    assert len(fast) == len(AWKWARD) + 3 + 1 + 2 + 1 + 4 + 1 + 2 + 2
    assert len(read) == len(fast)
    assert fast == typed
    assert watched == fast  # the observer got the frames the session's own client got
    assert late == fast
    assert fast_stored == params_of(fast)  # the store keeps each update as sent
    assert typed_stored == fast_stored


async def test_v2_verbs_send_and_record_the_bytes_turn_update_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only the turn's own chunks get these ids: the user message's id, minted by protocol_v2 (which
    # imports the function by name), stays a real one whichever test imported protocol_v2 first.
    assert protocol_v2.new_message_id is v2_shapes.new_message_id  # imported above, before this patch
    numbers = [itertools.count()]
    monkeypatch.setattr(v2_shapes, "new_message_id", lambda: f"msg_{next(numbers[0])}")
    read: list[acp.SessionUpdate] = []
    app = wire_app(None, (2,), read)
    async with serving(app.builder(2)) as peer:
        await initialize_v2(peer)
        sessions = []
        for _ in range(2):
            new = peer.request("session/new", {"cwd": str(tmp_path)})
            sessions.append((await peer.response_to(new))["result"]["sessionId"])
        session_id, other = sessions
        fast = turn_updates(await frames_of_turn_v2(peer, session_id, "verbs"))
        await frames_of_turn_v2(peer, session_id, "history")
        numbers[0] = itertools.count()  # the same message ids again
        typed = as_session(turn_updates(await frames_of_turn_v2(peer, other, "typed")), other, session_id)
        fast_stored = await stored(app, session_id)
        typed_stored = as_session(await stored(app, other), other, session_id)

    assert len(fast) == len(AWKWARD) + 3 + 1 + 2 + 1 + 5 + 1 + 2 + 2
    assert b'"messageId":"msg_0"' in fast[0]
    assert fast == typed
    assert len(fast_stored) == len(fast)
    assert typed_stored == fast_stored


async def test_a_streamed_turn_keeps_its_updates_small_until_its_history_is_read(tmp_path: Path) -> None:
    count = 10_000
    read: list[int] = []
    app = AgentApp("stream")

    @app.prompt
    async def prompt(turn: Turn) -> None:
        if turn.text == "stream":
            for _ in range(count):
                await turn.say("chunk")
        else:
            read.append(len(turn.history[-1].updates))

    async with serving(app.builder(), timeout=60) as peer:
        session_id = await open_session(peer, tmp_path, {})
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            assert len(await frames_of_turn_v1(peer, session_id, "stream")) == count
            await asyncio.sleep(0)
            kept = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        await frames_of_turn_v1(peer, session_id, "read")
    # a model per update held 1.2 KB each; the text of each chunk is kept once for the reply anyway
    assert kept / count < 100, f"{kept / count:.0f} bytes kept per update"
    assert read == [count]


async def test_say_of_text_that_is_not_utf8_fails_the_turn_as_before(tmp_path: Path) -> None:
    app = AgentApp("surrogate")

    @app.prompt
    async def prompt(turn: Turn) -> None:
        if turn.text == "say":
            await turn.say("\ud800")
        else:
            await turn.update(acp.AgentMessageChunk(content=acp.TextContent(text="\ud800")))

    answers: list[Any] = []
    async with serving(app.builder()) as peer:
        session_id = await open_session(peer, tmp_path, {})
        for text in ("say", "update"):
            answer = await peer.response_to(send_prompt(peer, session_id, text))
            answers.append(answer["error"])
    assert answers[0] == answers[1]
    assert "not JSON serializable" in str(answers[0])


# --- any verb call: the bytes of the model the verb built before templates -----------------------

texts = st.one_of(st.sampled_from(AWKWARD), st.text(max_size=20))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1) | st.floats() | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)
paths = st.one_of(texts.filter(lambda p: "\x00" not in p), st.sampled_from(["/abs/é x", "a/../b", "./c"]))
metas = st.one_of(st.none(), st.just({}), st.dictionaries(texts, json_values, max_size=2))
entries = st.lists(
    st.one_of(
        texts,
        st.builds(
            acp.PlanEntry,
            content=texts,
            priority=st.sampled_from(["high", "medium", "low"]),
            status=st.sampled_from(["pending", "in_progress", "completed"]),
        ),
    ),
    max_size=3,
)
STATUSES = {1: ["pending", "in_progress", "completed", "failed"], 2: ["paused", "cancelled"]}


def call_steps(version: int) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    statuses = st.none() | st.sampled_from(STATUSES[1] + (STATUSES[2] if version == 2 else []))
    diffs = st.none() | st.tuples(paths, st.none() | texts, texts)
    update = st.tuples(
        st.just("update"), statuses, st.none() | texts, st.none() | texts, diffs, st.none() | json_values
    )
    return st.lists(update | st.tuples(st.just("terminal"), texts), max_size=3)


def actions(version: int) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    """Verb calls with every option the verbs take, as (verb, arguments...)."""
    kinds = st.none() | st.sampled_from(["read", "edit", "execute", "switch_mode", "other"])
    usage = st.tuples(
        st.just("usage"),
        st.integers(0, 2**64 - 1),
        st.integers(0, 2**64 - 1),
        st.none() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False),
        texts,
    )
    call = st.tuples(
        st.just("call"),
        texts,
        kinds,
        st.lists(paths, max_size=2),
        st.none() | json_values,
        metas,
        call_steps(version),
    )
    return st.lists(
        st.tuples(st.sampled_from(["say", "think"]), texts)
        | st.tuples(st.just("plan"), entries)
        | usage
        | call,
        min_size=1,
        max_size=4,
    )


async def run_with_verbs(turn: Turn, steps: list[tuple[Any, ...]], ids: list[str]) -> None:
    """Each step through its verb (the ids of the tool calls go to ``ids``)."""
    for verb, *args in steps:
        if verb == "say":
            await turn.say(args[0])
        elif verb == "think":
            await turn.think(args[0])
        elif verb == "plan":
            await turn.plan(args[0])
        elif verb == "usage":
            used, size, cost, currency = args
            await turn.report_usage(used, size, cost=cost, currency=currency)
        else:
            title, kind, locations, raw_input, meta, changes = args
            async with turn.tool_call(
                title, kind=kind, locations=locations, raw_input=raw_input, meta=meta
            ) as call:
                ids.append(call.id)
                for change, *values in changes:
                    if change == "terminal":
                        await call.show_terminal(values[0])
                    else:
                        status, new_title, text, diff, raw_output = values
                        await call.update(
                            status=status, title=new_title, text=text, diff=diff, raw_output=raw_output
                        )


def given_only(**fields: Any) -> dict[str, Any]:
    return {name: value for name, value in fields.items() if value is not None}


async def run_with_models(turn: Turn, steps: list[tuple[Any, ...]], ids: list[str]) -> None:
    """Each step as ``turn.update`` of the model its verb built before templates (tool calls: ``ids``)."""
    calls = iter(ids)
    for verb, *args in steps:
        if verb in ("say", "think"):
            chunk = acp.AgentMessageChunk if verb == "say" else acp.AgentThoughtChunk
            await turn.update(chunk(content=acp.TextContent(text=args[0])))
        elif verb == "plan":
            plan = [
                acp.PlanEntry(content=e, priority="medium", status="pending") if isinstance(e, str) else e
                for e in args[0]
            ]
            await turn.update(acp.Plan(entries=plan))
        elif verb == "usage":
            used, size, cost, currency = args
            extra = {"cost": acp.Cost(amount=cost, currency=currency)} if cost is not None else {}
            await turn.update(acp.UsageUpdate(used=used, size=size, **extra))
        else:
            title, kind, locations, raw_input, meta, changes = args
            call_id = next(calls)
            where = [acp.ToolCallLocation(path=str(turn.cwd / p)) for p in locations] or None
            optional = given_only(
                kind=kind, locations=where, raw_input=raw_input, meta=dict(meta) if meta else None
            )
            await turn.update(acp.ToolCall(tool_call_id=call_id, title=title, status="pending", **optional))
            final = False
            for change, *values in changes:
                if change == "terminal":
                    terminal = acp.Terminal(terminal_id=values[0])
                    await turn.update(acp.ToolCallUpdate(tool_call_id=call_id, content=[terminal]))
                    continue
                status, new_title, text, diff, raw_output = values
                content: list[Any] = []
                if text is not None:
                    content.append(acp.Content(content=acp.TextContent(text=text)))
                if diff is not None:
                    path, old, new = diff
                    content.append(acp.Diff(path=str(turn.cwd / path), old_text=old, new_text=new))
                changed = given_only(
                    status=status, title=new_title, content=content or None, raw_output=raw_output
                )
                await turn.update(acp.ToolCallUpdate(tool_call_id=call_id, **changed))
                final = final or status in ("completed", "failed", "cancelled")
            if not final:
                await turn.update(acp.ToolCallUpdate(tool_call_id=call_id, status="completed"))


async def verb_frames(
    version: int, steps: list[tuple[Any, ...]], ids: list[str], cwd: Path, *, verbs: bool
) -> list[bytes]:
    """The turn's ``session/update`` frames, its steps run through the verbs, or else as models."""
    app = AgentApp("verbs", protocols=(version,))  # type: ignore[arg-type]

    @app.prompt
    async def prompt(turn: Turn) -> None:
        await (run_with_verbs if verbs else run_with_models)(turn, steps, ids)

    async with serving(app.builder(version)) as peer:
        if version == 1:
            session_id = await open_session(peer, cwd, {})
            frames = await frames_of_turn_v1(peer, session_id, "go")
        else:
            await initialize_v2(peer)
            new = peer.request("session/new", {"cwd": str(cwd)})
            session_id = (await peer.response_to(new))["result"]["sessionId"]
            frames = await frames_of_turn_v2(peer, session_id, "go")
    return as_session(turn_updates(frames), session_id, "SESSION")


@settings(max_examples=40, deadline=None)
@given(data=st.data(), version=st.sampled_from([1, 2]))
def test_any_verb_call_sends_the_bytes_of_the_model_it_built_before_templates(
    data: st.DataObject, version: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    steps = data.draw(actions(version))
    cwd = tmp_path_factory.getbasetemp()
    ids: list[str] = []
    with mock.patch.object(v2_shapes, "new_message_id", side_effect=map("msg_{}".format, itertools.count())):
        fast = asyncio.run(verb_frames(version, steps, ids, cwd, verbs=True))
    with mock.patch.object(v2_shapes, "new_message_id", side_effect=map("msg_{}".format, itertools.count())):
        typed = asyncio.run(verb_frames(version, steps, ids, cwd, verbs=False))
    assert fast == typed
    assert len(fast) >= len(steps)
