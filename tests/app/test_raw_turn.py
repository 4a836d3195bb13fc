"""A plain text ``session/prompt`` is answered from its raw params with the bytes of the typed path.

Each prompt is sent twice on a real in-process channel: with ``sessionId`` as clients send it (a
plain prompt: the raw turn), and with ``session_id``, which the models accept and the raw path
leaves to the typed handler. The turn's frames (its updates and the answer) must be the same bytes,
session ids aside, and the prompt function must read the same values; ``tests/app/test_app_startup.py``
shows the raw turn imports no pydantic.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpio import schema as acp
from acpio.app import AgentApp, StopReasonName, Turn
from acpio.errors import InvalidParams
from acpio.store import open_store
from acpio.testing import WirePeer, serving

from ._wire import open_session, typed_only
from .test_turn_wire_bytes import AWKWARD


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


PROMPTS: dict[str, list[dict[str, Any]]] = {
    "one block": [text("hello")],
    "awkward text": [text(value) for value in AWKWARD],
    "several blocks": [text("first"), text("second\nline"), text("")],
    "a slash command": [text("/review src/main.py  "), text("and more")],
    "an unknown command": [text("/nothing here")],
}
#: What the prompt function ends with: a value it returns, or an exception it raises.
OUTCOMES: dict[str, Any] = {
    "end_turn": "end_turn",
    "max_tokens": "max_tokens",
    "max_turn_requests": "max_turn_requests",
    "refusal": "refusal",
    "cancelled (returned)": "cancelled",
    "None": None,
    "a StopReason": acp.StopReason.REFUSAL,
    "an empty string": "",
    "a bad value": "done",
    "a bad type": 3,
    "a RequestError": InvalidParams({"why": 'no "thanks"'}),
    "an exception": RuntimeError("boom \u2028"),
}
WIRE, SNAKE = "sessionId", "session_id"


def make_app(outcome: Any, seen: list[tuple[Any, ...]]) -> AgentApp:
    app = AgentApp("raw")
    app.command("review", "Review", hint="a path")

    @app.prompt
    async def prompt(turn: Turn) -> Any:
        lazy = "prompt" not in vars(turn.exchange())  # the history's prompt is built when read
        await turn.say(turn.text)
        await turn.say(repr(turn.command))
        seen.append((lazy, turn.text, turn.command, list(turn.prompt), turn.exchange().prompt))
        if outcome == "wait":
            await turn.say("waiting")
            await asyncio.Event().wait()
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return app


async def frames_until_answer(
    peer: WirePeer, request_id: int, *, cancel: dict[str, str] | None = None
) -> list[bytes]:
    """Every frame up to the answer to ``request_id`` (with ``cancel``: the turn cancelled as it waits)."""
    frames: list[bytes] = []
    while True:
        frame = await peer.recv_raw()
        assert frame is not None
        frames.append(frame)
        message = orjson.loads(frame)
        if cancel is not None and b'"waiting"' in frame:
            peer.notify("session/cancel", cancel)
        if message.get("id") == request_id and "method" not in message:
            return frames


async def run_turn(
    outcome: Any, blocks: list[dict[str, Any]], key: str, cwd: Path, **extra: Any
) -> tuple[list[bytes], list[tuple[Any, ...]]]:
    """The frames of one turn (session ids replaced), and what the prompt function read.

    ``extra`` params are sent beside the session id and the prompt.
    """
    seen: list[tuple[Any, ...]] = []
    async with serving(make_app(outcome, seen).builder()) as peer:
        session_id = await open_session(peer, cwd, {})
        asked = peer.request("session/prompt", {key: session_id, "prompt": blocks, **extra})
        frames = await frames_until_answer(
            peer, asked, cancel={key: session_id} if outcome == "wait" else None
        )
    return [frame.replace(session_id.encode(), b"SESSION") for frame in frames], seen


@pytest.mark.parametrize("blocks", PROMPTS.values(), ids=PROMPTS.keys())
async def test_a_plain_prompts_frames_are_the_bytes_of_the_typed_path(
    blocks: list[dict[str, Any]], tmp_path: Path
) -> None:
    raw, raw_seen = await run_turn("end_turn", blocks, WIRE, tmp_path)
    typed, typed_seen = await run_turn("end_turn", blocks, SNAKE, tmp_path)
    assert raw == typed
    assert raw[-1] == b'{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}'
    [(raw_lazy, *raw_values)], [(typed_lazy, *typed_values)] = raw_seen, typed_seen
    assert (raw_lazy, typed_lazy) == (True, False)  # the raw path was taken, then the typed one
    assert raw_values == typed_values  # text, command, prompt models, the history's prompt
    text_read, _, prompt, history_prompt = raw_values
    assert text_read == "\n".join(block["text"] for block in blocks)
    assert [block.to_wire() for block in prompt] == blocks
    assert tuple(prompt) == history_prompt


async def test_the_command_is_read_from_the_raw_text(tmp_path: Path) -> None:
    _, [(_, _, command, *_)] = await run_turn("end_turn", PROMPTS["a slash command"], WIRE, tmp_path)
    assert (command.name, command.input) == ("review", "src/main.py  \nand more")


@pytest.mark.parametrize("outcome", OUTCOMES.values(), ids=OUTCOMES.keys())
async def test_each_way_a_turn_ends_is_answered_with_the_bytes_of_the_typed_path(
    outcome: Any, tmp_path: Path
) -> None:
    raw, _ = await run_turn(outcome, [text("hi")], WIRE, tmp_path)
    typed, _ = await run_turn(outcome, [text("hi")], SNAKE, tmp_path)
    assert raw == typed
    answer = orjson.loads(raw[-1])
    if isinstance(outcome, Exception) or outcome in ("done", 3):
        assert answer["error"]["code"] in (-32602, -32603)
    else:
        assert answer["result"] == {"stopReason": outcome or "end_turn"}


async def test_a_cancelled_turn_is_answered_with_the_bytes_of_the_typed_path(tmp_path: Path) -> None:
    # the raw cancel (sessionId) of a raw turn, then the typed cancel (session_id) of a typed turn
    raw, _ = await run_turn("wait", [text("hi")], WIRE, tmp_path)
    typed, _ = await run_turn("wait", [text("hi")], SNAKE, tmp_path)
    assert raw == typed
    assert raw[-1] == b'{"jsonrpc":"2.0","id":3,"result":{"stopReason":"cancelled"}}'


#: Prompts the typed path accepts that are no plain text prompt: typed both times, the same frames.
NOT_PLAIN: dict[str, list[dict[str, Any]]] = {
    "an image": [text("look"), {"type": "image", "data": "aGk=", "mimeType": "image/png"}],
    "a resource link": [{"type": "resource_link", "uri": "file:///notes.txt", "name": "notes"}],
    "a text block with annotations": [{**text("hi"), "annotations": {"priority": 0.5}}],
    "a text block with _meta": [{**text("hi"), "_meta": {"k": 1}}],
    "an unknown block type": [{"type": "video", "text": "hi"}],
    "no block": [],
}


@pytest.mark.parametrize("blocks", NOT_PLAIN.values(), ids=NOT_PLAIN.keys())
async def test_other_prompts_take_the_typed_path(blocks: list[dict[str, Any]], tmp_path: Path) -> None:
    wire, wire_seen = await run_turn("end_turn", blocks, WIRE, tmp_path)
    typed, typed_seen = await run_turn("end_turn", blocks, SNAKE, tmp_path)
    assert wire == typed
    assert wire_seen == typed_seen
    assert wire_seen[0][0] is False  # typed: the prompt was validated into models
    assert [block.to_wire() for block in wire_seen[0][3]] == blocks


async def test_a_prompt_whose_meta_is_no_object_takes_the_typed_path(tmp_path: Path) -> None:
    wire, wire_seen = await run_turn("end_turn", [text("hi")], WIRE, tmp_path, _meta=1)
    typed, typed_seen = await run_turn("end_turn", [text("hi")], SNAKE, tmp_path, _meta=1)
    assert (wire, wire_seen) == (typed, typed_seen)
    assert wire_seen[0][0] is False


#: Params the typed path refuses: the same ``-32602`` as before, from its validation.
BAD: dict[str, dict[str, Any]] = {
    "no sessionId": {"prompt": [text("hi")]},
    "a sessionId that is no string": {"sessionId": 3, "prompt": [text("hi")]},
    "a prompt that is no list": {"sessionId": "S", "prompt": "hi"},
    "a block that is no object": {"sessionId": "S", "prompt": ["hi"]},
    "a text that is no string": {"sessionId": "S", "prompt": [{"type": "text", "text": 1}]},
    "a text block without text": {"sessionId": "S", "prompt": [{"type": "text"}]},
}


@pytest.mark.parametrize("params", BAD.values(), ids=BAD.keys())
async def test_malformed_prompts_get_the_typed_paths_error(params: dict[str, Any], tmp_path: Path) -> None:
    async with serving(make_app("end_turn", []).builder()) as peer:
        session_id = await open_session(peer, tmp_path, {})
        if params.get("sessionId") == "S":
            params = {**params, "sessionId": session_id}
        answer = await peer.response_to(peer.request("session/prompt", params))
    error = answer["error"]
    assert error["code"] == -32602
    assert error["data"]["method"] == "session/prompt"  # the validation errors of the typed handler
    assert error["data"]["errors"]


async def test_a_plain_prompt_for_an_unknown_session_gets_the_typed_paths_error(tmp_path: Path) -> None:
    answers = []
    for key in (WIRE, SNAKE):
        async with serving(make_app("end_turn", []).builder()) as peer:
            await open_session(peer, tmp_path, {})
            answers.append(
                await peer.response_to(peer.request("session/prompt", {key: "nope", "prompt": [text("hi")]}))
            )
    assert answers[0] == answers[1]
    assert answers[0]["error"]["code"] == -32002


async def test_a_prompt_function_may_replace_the_prompt_it_reads(tmp_path: Path) -> None:
    app = AgentApp("replaced")
    seen: list[tuple[str, str]] = []

    @app.prompt
    async def prompt(turn: Turn) -> None:
        before = turn.text
        turn.prompt = [acp.TextContent(text="other")]
        seen.append((before, turn.text))

    async with serving(app.builder()) as peer:
        session_id = await open_session(peer, tmp_path, {})
        answer = await peer.response_to(
            peer.request("session/prompt", {"sessionId": session_id, "prompt": [text("hi")]})
        )
    assert answer["result"] == {"stopReason": "end_turn"}
    assert seen == [("hi", "other")]


# --- any prompt: the raw turn against the typed path's --------------------------------------------

#: Text as users type it: slash commands with odd spacing and case, unicode, the awkward strings.
prompt_text = st.one_of(
    st.text(),
    st.sampled_from(AWKWARD),
    st.builds(
        "".join,
        st.lists(
            st.sampled_from(["/", "review", "REVIEW", "nothing", " ", "  ", "\t", "\n", "é", "\u2028", "x"])
        ),
    ),
)
odd = st.sampled_from([None, 5, "x", True, [], {}, {"k": [1]}])
blocks = st.one_of(
    prompt_text.map(text),
    st.sampled_from(list(NOT_PLAIN.values())).map(lambda prompt: prompt[0] if prompt else text("")),
    st.builds(
        lambda value, key, extra: {**text(value), key: extra},
        prompt_text,
        st.sampled_from(["_meta", "annotations", "x"]),
        odd,
    ),
)
extras = st.fixed_dictionaries(
    {}, optional={"_meta": odd, "messageId": st.sampled_from(["m1", 5, None]), "x": odd}
)


@settings(max_examples=40, deadline=None)
@given(
    prompt=st.lists(blocks, min_size=1, max_size=3),
    extra=extras,
    outcome=st.sampled_from(["end_turn", "refusal", None, "wait", "wait"]),
    cancel_extra=extras,
    known=st.sampled_from([True, True, True, False]),
)
def test_any_prompt_gets_the_frames_and_values_of_the_typed_path(
    prompt: list[dict[str, Any]],
    extra: dict[str, Any],
    outcome: str | None,
    cancel_extra: dict[str, Any],
    known: bool,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    cwd = tmp_path_factory.getbasetemp()

    async def turn() -> tuple[list[bytes], list[tuple[Any, ...]]]:
        seen: list[tuple[Any, ...]] = []
        async with serving(make_app(outcome, seen).builder()) as peer:
            session_id = await open_session(peer, cwd, {})
            prompted = session_id if known else "unknown"
            asked = peer.request("session/prompt", {WIRE: prompted, "prompt": prompt, **extra})
            cancel = {WIRE: session_id, **cancel_extra} if outcome == "wait" else None
            frames = await frames_until_answer(peer, asked, cancel=cancel)
        # the values the prompt function read, but whether the prompt's models were built ahead
        return [frame.replace(session_id.encode(), b"SESSION") for frame in frames], [s[1:] for s in seen]

    raw = asyncio.run(turn())
    with typed_only():
        typed = asyncio.run(turn())
    assert raw == typed


def storing_app(path: Path, lazy: list[bool]) -> AgentApp:
    """An app keeping its sessions in SQLite at ``path``; ``lazy`` notes whether each prompt was raw."""
    app = AgentApp("raw", store=f"sqlite:///{path}")

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        lazy.append("prompt" not in vars(turn.exchange()))
        await turn.say(turn.text)
        return "end_turn"

    return app


@pytest.mark.parametrize("blocks", PROMPTS.values(), ids=PROMPTS.keys())
async def test_an_app_with_a_store_takes_a_plain_prompt_raw_and_stores_the_typed_paths_bytes(
    blocks: list[dict[str, Any]], tmp_path: Path
) -> None:
    """The user's blocks go into the store as their ``UserMessageChunk`` models write them."""
    stored: dict[str, list[bytes]] = {}
    for key in (WIRE, SNAKE):
        path = tmp_path / f"{key}.db"
        lazy: list[bool] = []
        app = storing_app(path, lazy)
        async with serving(app.builder()) as peer:
            session_id = await open_session(peer, tmp_path, {})
            asked = peer.request("session/prompt", {key: session_id, "prompt": blocks})
            frames = await frames_until_answer(peer, asked)
        assert frames[-1] == b'{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}'
        assert lazy == [key == WIRE]  # the raw path for the wire's spelling, the typed one else
        store = open_store(f"sqlite:///{path}")
        try:
            history = [body async for body in store.history(session_id)]
        finally:
            await store.aclose()
        stored[key] = [body.replace(session_id.encode(), b"SESSION") for body in history]
    assert stored[WIRE] == stored[SNAKE]
    assert len(stored[WIRE]) == len(blocks) + 1  # each block, then what the agent said
