"""``ClientMethods``: the agent's requests answered by method, on the wire; ``decided`` under cancellation."""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path

import pytest

from acpio import testing
from acpio.client.files import ConfinedFiles
from acpio.errors import InternalError, InvalidParams, MethodNotFound
from acpio.jsonrpc import Builder, Connection, Dispatch, RequestDispatch, UntypedRole
from acpio.oneshot.client_methods import ClientMethods, decided
from acpio.oneshot.terminals import Terminals
from acpio.schema import CancelledPermissionOutcome, SelectedPermissionOutcome, WriteTextFileResponse
from acpio.schema.base import AcpModel

LOG = logging.getLogger("tests.client_methods")


def client(methods: ClientMethods) -> Builder[Connection]:
    app = UntypedRole.builder(name="client")

    @app.on_dispatch
    async def answer(message: Dispatch, cx: Connection) -> None:
        assert isinstance(message, RequestDispatch)
        await methods.answer(message, cx)

    return app


def table(refused: list[tuple[str, int]]) -> ClientMethods:
    return ClientMethods(
        unknown=lambda method: MethodNotFound(f"{method}: not answered here"),
        failure=lambda method, exc: InternalError(message=f"failed to answer {method}: {exc}"),
        log=LOG,
        refused=lambda dispatch, error: refused.append((dispatch.method, error.code)),
    )


async def test_results_errors_and_unknown_methods_on_the_wire(caplog: pytest.LogCaptureFixture) -> None:
    refused: list[tuple[str, int]] = []
    methods = table(refused)

    async def fine(dispatch: RequestDispatch) -> AcpModel:
        return WriteTextFileResponse()

    async def refusing(dispatch: RequestDispatch) -> AcpModel:
        raise InvalidParams({"path": "/etc"}, message="outside the root")

    async def broken(dispatch: RequestDispatch) -> AcpModel:
        raise KeyError("oops")

    methods.inline.update({"x/fine": fine, "x/refusing": refusing, "x/broken": broken})
    async with testing.serving(client(methods)) as agent:
        assert await agent.response_to(agent.request("x/fine", {})) == {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {},
        }
        refusal = await agent.response_to(agent.request("x/refusing", {}))
        assert refusal["error"] == {"code": -32602, "message": "outside the root", "data": {"path": "/etc"}}
        failure = await agent.response_to(agent.request("x/broken", {}))
        assert failure["error"] == {"code": -32603, "message": "failed to answer x/broken: 'oops'"}
        unknown = await agent.response_to(agent.request("x/other", {}))
        assert unknown["error"]["data"] == "x/other: not answered here"
    assert refused == [("x/refusing", -32602), ("x/broken", -32603), ("x/other", -32601)]
    assert "Answering x/broken failed" in caplog.text  # logged with its traceback
    assert "KeyError" in caplog.text


async def test_a_spawned_request_holds_up_none_of_the_inline_ones() -> None:
    methods = table([])
    release = asyncio.Event()

    async def slow(dispatch: RequestDispatch) -> AcpModel:
        await release.wait()
        return WriteTextFileResponse()

    async def quick(dispatch: RequestDispatch) -> AcpModel:
        release.set()
        return WriteTextFileResponse()

    methods.spawned["x/slow"] = slow
    methods.inline["x/quick"] = quick
    async with testing.serving(client(methods)) as agent:
        waiting = agent.request("x/slow", {})
        answered = agent.request("x/quick", {})
        first, second = await agent.recv(), await agent.recv()
    assert [first["id"], second["id"]] == [answered, waiting]


async def test_terminal_methods_run_a_real_command(tmp_path: Path) -> None:
    methods = table([])
    started: list[str] = []
    terminals = Terminals(ConfinedFiles(tmp_path), kill_grace=1.0)
    methods.serve_terminals(terminals, created=lambda request, response: started.append(request.command))
    command = {"sessionId": "s", "command": sys.executable, "args": ["-c", "print('hi')"]}
    try:
        async with testing.serving(client(methods)) as agent:
            created = await agent.response_to(agent.request("terminal/create", command))
            terminal = {"sessionId": "s", "terminalId": created["result"]["terminalId"]}
            exited = await agent.response_to(agent.request("terminal/wait_for_exit", terminal))
            assert exited["result"]["exitCode"] == 0
            output = await agent.response_to(agent.request("terminal/output", terminal))
            assert output["result"]["output"] == "hi\n"
            released = await agent.response_to(agent.request("terminal/release", terminal))
            assert released["result"] == {}
    finally:
        await terminals.aclose()
    assert started == [sys.executable]


async def test_decided_is_cancelled_before_and_while_deciding() -> None:
    cancelled, asking = asyncio.Event(), asyncio.Event()
    asked: list[str] = []

    async def policy(answer: str, *, wait: bool = False) -> SelectedPermissionOutcome:
        asked.append(answer)
        asking.set()
        if wait:
            await asyncio.Event().wait()  # a person who never answers
        return SelectedPermissionOutcome(option_id=answer)

    assert await decided(cancelled, policy("allow")) == SelectedPermissionOutcome(option_id="allow")
    asking.clear()
    deciding = asyncio.ensure_future(decided(cancelled, policy("slow", wait=True)))
    await asking.wait()
    cancelled.set()
    assert await asyncio.wait_for(deciding, 5) == CancelledPermissionOutcome()
    assert await decided(cancelled, policy("late")) == CancelledPermissionOutcome()
    assert asked == ["allow", "slow"]  # once cancelled, the policy is not asked at all
