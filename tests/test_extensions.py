"""Extension messages declared in one line, used over a real connection like schema messages."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from acpio.errors import InvalidParams
from acpio.extensions import ExtensionNotification, ExtensionRequest, ExtensionResponse
from acpio.jsonrpc import Connection, UntypedRole
from acpio.schema import AcpJson
from acpio.transports import Channel


class BufferList(ExtensionResponse):
    buffer_names: list[str]


class ListBuffers(ExtensionRequest, method="_zed.dev/workspace/buffers", response=BufferList):
    language_id: str | None = None


class FileOpened(ExtensionNotification, method="_zed.dev/file_opened"):
    path: str


class Anything(ExtensionRequest, method="_example.com/anything"):
    pass


def test_declaration_binds_method_and_response() -> None:
    assert ListBuffers.METHOD == "_zed.dev/workspace/buffers"
    assert ListBuffers.RESPONSE is BufferList
    assert BufferList.METHOD == "_zed.dev/workspace/buffers"
    assert FileOpened.METHOD == "_zed.dev/file_opened"
    assert Anything.RESPONSE is AcpJson


def test_fields_are_camel_case_on_the_wire_and_unknown_fields_kept() -> None:
    assert ListBuffers(language_id="rust").to_wire() == {"languageId": "rust"}
    parsed = ListBuffers.model_validate({"languageId": "go", "extra": {"x": 1}})
    assert parsed.language_id == "go"
    assert parsed.to_wire() == {"languageId": "go", "extra": {"x": 1}}


@pytest.mark.parametrize("method", ["session/custom", "", "_"])
def test_non_extension_method_names_are_refused(method: str) -> None:
    with pytest.raises(ValueError, match="start with an underscore"):

        class Bad(ExtensionNotification, method=method):
            pass


async def test_typed_extension_request_and_notification_over_a_connection() -> None:
    agent = UntypedRole.builder(name="agent")
    opened: list[str] = []
    got_note = asyncio.Event()

    @agent.on_request
    async def list_buffers(request: ListBuffers, responder: Any, cx: Connection) -> BufferList:
        return BufferList(buffer_names=[f"main.{request.language_id}"])

    @agent.on_notification
    async def file_opened(note: FileOpened, cx: Connection) -> None:
        opened.append(note.path)
        got_note.set()

    ours, theirs = Channel.duplex()
    serving = asyncio.create_task(agent.serve(theirs))

    async def main(cx: Connection) -> BufferList:
        cx.send_notification(FileOpened(path="/src/main.rs"))
        result: BufferList = await cx.send_request(ListBuffers(language_id="rs"))
        with pytest.raises(InvalidParams):
            await cx.send_request("_zed.dev/workspace/buffers", {"languageId": 5})
        await got_note.wait()
        return result

    async with asyncio.timeout(5):
        result = await UntypedRole.builder(name="client").connect_with(ours, main)
        await serving
    assert isinstance(result, BufferList)
    assert result.buffer_names == ["main.rs"]
    assert opened == ["/src/main.rs"]


async def test_any_json_result_is_kept_as_it_came() -> None:
    agent = UntypedRole.builder(name="agent")

    @agent.on_request
    async def anything(request: Anything, responder: Any, cx: Connection) -> Any:
        return [1, "two", {"three": None}]

    ours, theirs = Channel.duplex()
    serving = asyncio.create_task(agent.serve(theirs))

    async def main(cx: Connection) -> Any:
        return await cx.send_request(Anything())

    async with asyncio.timeout(5):
        result = await UntypedRole.builder(name="client").connect_with(ours, main)
        await serving
    assert isinstance(result, AcpJson)
    assert orjson.dumps(result.to_wire()) == b'[1,"two",{"three":null}]'
