"""The agent's requests during a session: typed items answered in place, and read_to_string's answers.

Against ``acpio testy`` served in-process (its scripts ask permission, read and write files), and
against a raw wire peer for what testy cannot send (paths outside the root, terminals, bad params).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from acpio import Client
from acpio.agents.testy import testy_agent
from acpio.client import AllowPolicy, CallbackPolicy, ConfinedFiles, DenyPolicy, permission_policy
from acpio.errors import InvalidParams
from acpio.schema import (
    CancelledPermissionOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    InitializeRequest,
    ReadTextFileResponse,
    RequestPermissionRequest,
    RequestPermissionResponse,
    SelectedPermissionOutcome,
    WriteTextFileRequest,
    WriteTextFileResponse,
)
from acpio.session import (
    ActiveSession,
    AgentRequestMessage,
    ReadTextFileMessage,
    RequestPermissionMessage,
    SessionConnection,
    SessionMessage,
    TurnEnded,
    WriteTextFileMessage,
)

from ._support import TIMEOUT, WirePeer, wire_connection

FILES = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True, write_text_file=True))


async def with_testy(tmp_path: Path, prompt: str, read: Any, capabilities: ClientCapabilities = FILES) -> Any:
    """Open a testy session in ``tmp_path``, send ``prompt``, return ``await read(session)``."""

    async def main(cx: SessionConnection) -> Any:
        async with asyncio.timeout(TIMEOUT):
            await cx.send_request(InitializeRequest(protocol_version=1, client_capabilities=capabilities))
            async with cx.build_session(tmp_path).start_session() as session:
                session.send_prompt(prompt)
                return await read(session)

    return await Client.builder(name="client").connect_with(testy_agent(), main)


# --- typed items, answered in place (testy) ------------------------------------------------------


async def test_requests_arrive_typed_and_are_answered_in_place(tmp_path: Path) -> None:
    script = "read notes.txt\nwrite out.txt new text\npermission Go on?\necho done"
    seen: list[str] = []
    written: list[WriteTextFileRequest] = []

    async def read(session: ActiveSession) -> str:
        text: list[str] = []
        while not isinstance(item := await session.read_update(), TurnEnded):
            if isinstance(item, ReadTextFileMessage):
                seen.append(f"read {Path(item.request.path).name}")
                item.respond(ReadTextFileResponse(content="old text"))
            elif isinstance(item, WriteTextFileMessage):
                written.append(item.request)
                item.respond(WriteTextFileResponse())
            elif isinstance(item, RequestPermissionMessage):
                seen.append(f"permission {item.request.tool_call.title}")
                assert not item.answered
                item.respond(
                    RequestPermissionResponse(outcome=SelectedPermissionOutcome(option_id="allow-once"))
                )
                assert item.answered
            elif item.text is not None:
                text.append(item.text)
        return "".join(text)

    text = await with_testy(tmp_path, script, read)
    # testy's write reads the old text first
    assert seen == ["read notes.txt", "read out.txt", "permission Go on?"]
    assert [(Path(w.path).name, w.content) for w in written] == [("out.txt", "new text")]
    assert text == "permission: allow-once\ndone\n"


async def test_an_item_is_still_a_session_message_with_its_dispatch(tmp_path: Path) -> None:
    async def read(session: ActiveSession) -> list[Any]:
        items: list[Any] = []
        while not isinstance(item := await session.read_update(), TurnEnded):
            if item.is_request:
                items.append(item)
                assert isinstance(item, AgentRequestMessage)
                item.respond_with_error(ValueError("no"))
        return items

    [item] = await with_testy(tmp_path, "permission", read)
    assert isinstance(item, SessionMessage)
    assert item.method == "session/request_permission"
    assert item.dispatch.responder.done
    assert isinstance(item.request, RequestPermissionRequest)


# --- read_to_string with a policy (testy) --------------------------------------------------------


async def test_read_to_string_allows(tmp_path: Path) -> None:
    text = await with_testy(
        tmp_path, "permission\necho after", lambda s: s.read_to_string(permissions="allow")
    )
    assert text == "permission: allow-once\nafter\n"


async def test_read_to_string_denies(tmp_path: Path) -> None:
    text = await with_testy(
        tmp_path, "permission\necho after", lambda s: s.read_to_string(permissions="deny")
    )
    assert text == "permission: reject-once\nPermission denied: stopping.\n"


async def test_read_to_string_asks_a_callback_for_an_option_id(tmp_path: Path) -> None:
    asked: list[RequestPermissionRequest] = []

    async def ask(request: RequestPermissionRequest) -> str:
        asked.append(request)
        return "allow-always"

    text = await with_testy(
        tmp_path, "permission Deploy?\necho after", lambda s: s.read_to_string(permissions=ask)
    )
    assert text == "permission: allow-always\nafter\n"
    assert [request.tool_call.title for request in asked] == ["Deploy?"]


async def test_read_to_string_asks_a_callback_for_an_outcome(tmp_path: Path) -> None:
    async def ask(request: RequestPermissionRequest) -> CancelledPermissionOutcome:
        return CancelledPermissionOutcome()

    text = await with_testy(tmp_path, "permission\necho after", lambda s: s.read_to_string(permissions=ask))
    assert text == "permission: cancelled\nPermission denied: stopping.\n"


async def test_a_callback_choosing_an_option_not_offered_is_raised(tmp_path: Path) -> None:
    async def ask(request: RequestPermissionRequest) -> str:
        return "yes please"

    async def read(session: ActiveSession) -> None:
        with pytest.raises(ValueError, match=r"'yes please', which the agent did not offer.*allow-once"):
            await session.read_to_string(permissions=ask)

    await with_testy(tmp_path, "permission", read)


async def test_without_a_policy_permission_is_refused_as_before(tmp_path: Path) -> None:
    text = await with_testy(tmp_path, "permission\necho after", lambda s: s.read_to_string())
    # testy reports the client's error: -32601, with what would have answered it
    assert text.startswith(
        "permission: error (Method not found: session/request_permission: read_to_string() answers "
        "it when given permissions='allow', 'deny' or an async callback"
    )
    assert text.endswith("\nPermission denied: stopping.\n")


async def test_read_to_string_with_files_reads_and_writes_under_the_root(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("first\n")
    script = "write sub/out.txt hello\\nworld\necho done"
    text = await with_testy(tmp_path, script, lambda s: s.read_to_string(files=tmp_path))
    assert text == "done\n"
    assert (tmp_path / "sub" / "out.txt").read_text() == "hello\nworld"


async def test_read_to_string_without_files_writes_nothing(tmp_path: Path) -> None:
    text = await with_testy(tmp_path, "write out.txt hello\necho done", lambda s: s.read_to_string())
    assert text == "done\n"
    assert not (tmp_path / "out.txt").exists()


# --- on the wire ---------------------------------------------------------------------------------


_prompts: dict[WirePeer, Any] = {}


def prompt_of(peer: WirePeer) -> Any:
    """The id of the ``session/prompt`` request ``peer`` received in :func:`wire_session`."""
    return _prompts[peer]


@asynccontextmanager
async def wire_session(
    tmp_path: Path, capabilities: ClientCapabilities | None = FILES
) -> AsyncIterator[tuple[ActiveSession, WirePeer]]:
    """A client's session with a raw agent on the wire, a prompt sent (the peer answers it later)."""
    async with wire_connection(Client.builder(name="client")) as (cx, peer):
        assert isinstance(cx, SessionConnection)
        async with asyncio.timeout(TIMEOUT):
            sent = cx.send_request(InitializeRequest(protocol_version=1, client_capabilities=capabilities))
            peer.respond(await peer.expect("initialize"), {"protocolVersion": 1})
            await sent

            async def start() -> ActiveSession:
                return await cx.build_session(tmp_path).start_session()

            starting = asyncio.ensure_future(start())
            peer.respond(await peer.expect("session/new"), {"sessionId": "s1"})
            async with await starting as session:
                session.send_prompt("go")
                prompt = await peer.expect("session/prompt")
                _prompts[peer] = prompt["id"]
                yield session, peer
                if not session.stop_reason:
                    peer.respond(prompt, {"stopReason": "end_turn"})


async def answers(
    session: ActiveSession, peer: WirePeer, requests: list[tuple[str, Any]], **how: Any
) -> list[Any]:
    """Send ``requests`` from the agent while ``read_to_string(**how)`` reads; their answers, in order."""
    reading = asyncio.ensure_future(session.read_to_string(**how))
    found = []
    for method, params in requests:
        request_id = peer.request(method, {"sessionId": "s1", **params})
        found.append(await peer.response_to(request_id))
    reading.cancel()
    return found


async def test_a_path_outside_the_root_is_refused_naming_path_and_root(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("no")
    (root / "inside.txt").write_text("yes")
    async with wire_session(tmp_path) as (session, peer):
        outside, inside = await answers(
            session,
            peer,
            [
                ("fs/read_text_file", {"path": str(tmp_path / "secret.txt")}),
                ("fs/read_text_file", {"path": str(root / "inside.txt")}),
            ],
            files=root,
        )
    error = outside["error"]
    assert error["code"] == -32602
    assert str(tmp_path / "secret.txt") in error["message"]
    assert str(root) in error["message"]
    assert "read_to_string(files=...)" in error["message"]
    assert error["data"] == {"path": str(tmp_path / "secret.txt"), "root": str(root)}
    assert inside["result"] == {"content": "yes"}


async def test_files_take_a_confined_files_too(tmp_path: Path) -> None:
    async with wire_session(tmp_path) as (session, peer):
        [written] = await answers(
            session,
            peer,
            [("fs/write_text_file", {"path": str(tmp_path / "a.txt"), "content": "x"})],
            files=ConfinedFiles(tmp_path),
        )
    assert written["result"] == {}
    assert (tmp_path / "a.txt").read_text() == "x"


async def test_without_files_fs_is_refused_saying_how_to_enable_it(tmp_path: Path) -> None:
    async with wire_session(tmp_path) as (session, peer):
        [refused] = await answers(session, peer, [("fs/read_text_file", {"path": str(tmp_path / "a")})])
    assert refused["error"]["code"] == -32601
    assert refused["error"]["data"].startswith("fs/read_text_file: ")
    assert "files=ROOT" in refused["error"]["data"]
    assert "ReadTextFileMessage" in refused["error"]["data"]


async def test_files_not_advertised_are_refused_even_with_a_root(tmp_path: Path) -> None:
    only_read = ClientCapabilities(fs=FileSystemCapabilities(read_text_file=True))
    (tmp_path / "a.txt").write_text("a")
    async with wire_session(tmp_path, only_read) as (session, peer):
        read, write = await answers(
            session,
            peer,
            [
                ("fs/read_text_file", {"path": str(tmp_path / "a.txt")}),
                ("fs/write_text_file", {"path": str(tmp_path / "a.txt"), "content": "b"}),
            ],
            files=tmp_path,
        )
    assert read["result"] == {"content": "a"}
    assert write["error"]["code"] == -32601
    assert "did not advertise fs.writeTextFile" in write["error"]["data"]
    assert (tmp_path / "a.txt").read_text() == "a"


async def test_terminals_are_refused_saying_what_to_do(tmp_path: Path) -> None:
    async with wire_session(tmp_path) as (session, peer):
        [refused] = await answers(
            session, peer, [("terminal/create", {"command": "ls"})], permissions="allow", files=tmp_path
        )
    assert refused["error"]["code"] == -32601
    data = refused["error"]["data"]
    assert data.startswith("terminal/create: read_to_string() does not answer terminal/create")
    assert "CreateTerminalMessage with item.respond(...)" in data


async def test_a_malformed_permission_request_is_answered_invalid_params(tmp_path: Path) -> None:
    async with wire_session(tmp_path) as (session, peer):
        [refused] = await answers(
            session, peer, [("session/request_permission", {"options": "many"})], permissions="allow"
        )
    assert refused["error"]["code"] == -32602


async def test_permission_on_the_wire_picks_the_first_allow_or_reject_option(tmp_path: Path) -> None:
    options = [
        {"optionId": "no", "name": "No", "kind": "reject_once"},
        {"optionId": "always", "name": "Always", "kind": "allow_always"},
        {"optionId": "once", "name": "Once", "kind": "allow_once"},
    ]
    request = {"toolCall": {"toolCallId": "t1", "title": "x"}, "options": options}
    for policy, chosen in (("allow", "once"), ("deny", "no")):
        async with wire_session(tmp_path) as (session, peer):
            [answer] = await answers(
                session, peer, [("session/request_permission", request)], permissions=policy
            )
        assert answer["result"] == {"outcome": {"outcome": "selected", "optionId": chosen}}


async def test_cancelling_the_turn_wins_over_a_callback_still_deciding(tmp_path: Path) -> None:
    deciding = asyncio.Event()

    async def ask(request: RequestPermissionRequest) -> str:
        deciding.set()
        await asyncio.sleep(60)
        return "once"

    request = {
        "toolCall": {"toolCallId": "t1"},
        "options": [{"optionId": "once", "name": "Once", "kind": "allow_once"}],
    }
    async with wire_session(tmp_path) as (session, peer):
        reading = asyncio.ensure_future(session.read_to_string(permissions=ask))
        request_id = peer.request("session/request_permission", {"sessionId": "s1", **request})
        async with asyncio.timeout(TIMEOUT):
            await deciding.wait()
        session.cancel()
        answer = await peer.response_to(request_id)
        assert answer["result"] == {"outcome": {"outcome": "cancelled"}}
        assert not reading.done()  # the turn goes on until the agent's stop reason
        peer.respond(prompt_of(peer), {"stopReason": "cancelled"})
        async with asyncio.timeout(TIMEOUT):
            assert await reading == ""
        assert session.stop_reason == "cancelled"


PERMISSION = {
    "toolCall": {"toolCallId": "t1"},
    "options": [{"optionId": "once", "name": "Once", "kind": "allow_once"}],
}


async def test_a_callback_raising_a_request_error_answers_the_agent_with_it(tmp_path: Path) -> None:
    async def ask(request: RequestPermissionRequest) -> str:
        raise InvalidParams({"why": "no"}, message="Not this one")

    async with wire_session(tmp_path) as (session, peer):
        [answer] = await answers(session, peer, [("session/request_permission", PERMISSION)], permissions=ask)
    assert answer["error"] == {"code": -32602, "message": "Not this one", "data": {"why": "no"}}


async def test_a_callback_failing_answers_internal_error_and_raises(tmp_path: Path) -> None:
    async def ask(request: RequestPermissionRequest) -> str:
        raise KeyError("bug")

    async with wire_session(tmp_path) as (session, peer):
        reading = asyncio.ensure_future(session.read_to_string(permissions=ask))
        answer = await peer.response_to(
            peer.request("session/request_permission", {"sessionId": "s1", **PERMISSION})
        )
        with pytest.raises(KeyError, match="bug"):
            await reading
    assert answer["error"]["code"] == -32603
    assert "failed to decide the permission request" in answer["error"]["message"]


async def test_the_agent_cancelling_the_request_stops_the_callback(tmp_path: Path) -> None:
    deciding = asyncio.Event()
    stopped = asyncio.Event()

    async def ask(request: RequestPermissionRequest) -> str:
        deciding.set()
        try:
            await asyncio.sleep(60)
        finally:
            stopped.set()
        return "once"

    async with wire_session(tmp_path) as (session, peer):
        reading = asyncio.ensure_future(session.read_to_string(permissions=ask))
        request_id = peer.request("session/request_permission", {"sessionId": "s1", **PERMISSION})
        async with asyncio.timeout(TIMEOUT):
            await deciding.wait()
        peer.notify("$/cancel_request", {"requestId": request_id})
        answer = await peer.response_to(request_id)
        assert answer["error"]["code"] == -32800
        assert stopped.is_set()
        peer.respond(prompt_of(peer), {"stopReason": "end_turn"})
        async with asyncio.timeout(TIMEOUT):
            assert await reading == ""


def test_permission_policy_names_what_it_takes() -> None:
    assert isinstance(permission_policy("allow"), AllowPolicy)
    assert isinstance(permission_policy("deny"), DenyPolicy)
    policy = DenyPolicy()
    assert permission_policy(policy) is policy

    async def ask(request: RequestPermissionRequest) -> str:
        return "once"

    assert isinstance(permission_policy(ask), CallbackPolicy)
    with pytest.raises(ValueError, match=r"permissions='ask': use 'allow', 'deny', an async callback"):
        permission_policy("ask")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="an object with async decide"):
        permission_policy(42)  # type: ignore[arg-type]


async def test_a_callback_returning_neither_an_id_nor_an_outcome_is_refused() -> None:
    async def ask(request: RequestPermissionRequest) -> Any:
        return True

    request = RequestPermissionRequest.model_validate({"sessionId": "s1", **PERMISSION})
    with pytest.raises(ValueError, match=r"returned True: return the id of one of request\.options"):
        await CallbackPolicy(ask).decide(request)
