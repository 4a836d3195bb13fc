"""A component that dies or cannot start: the client gets a clear error, never a hang."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from acpio import Agent, Proxy, RequestError
from acpio import schema as acp
from acpio.conductor import Chain, ConductorError, Named
from acpio.jsonrpc import Connection, Dispatch, RequestDispatch, Unhandled

from ._support import CRASH_PROXY, TIMEOUT, prompt_text, run_client
from .scripted_agent import ScriptedAgent


async def prompt_until_error(cx: Any, text: str) -> tuple[list[str], RequestError]:
    """Prompt and read the turn; return the chunks read and the error the turn ended with."""
    await cx.send_request(acp.InitializeRequest(protocol_version=1))
    chunks: list[str] = []

    async def read_turn(session: Any) -> None:
        async for message in session:
            chunks.append(message.text)

    async with cx.build_session("/").start_session() as session:
        session.send_prompt(text)
        with pytest.raises(RequestError) as caught:
            await asyncio.wait_for(read_turn(session), TIMEOUT)
        return chunks, caught.value


async def test_a_proxy_process_that_exits_mid_turn_fails_the_pending_prompt_clearly() -> None:
    chain = Chain.agent(
        "conductor", [Named("crash-proxy", CRASH_PROXY), Proxy.builder(), ScriptedAgent().builder()]
    )

    async def main(cx: Any) -> None:
        await prompt_until_error(cx, "sleep 60")

    with pytest.raises(ConductorError) as stopped:
        await run_client(chain, main)
    failure = stopped.value
    assert failure.lane == "Proxy(0)"
    assert failure.component == "crash-proxy"
    assert failure.exit_code == 3
    assert failure.stderr_tail is not None
    assert "giving up in the middle of the turn" in failure.stderr_tail
    assert "The proxy 'crash-proxy' (Proxy(0)) exited with exit code 3" in str(failure)


async def test_the_client_sees_which_component_died_and_why() -> None:
    chain = Chain.agent("conductor", [Named("crash-proxy", CRASH_PROXY), ScriptedAgent().builder()])
    outcome: list[tuple[list[str], RequestError]] = []

    async def main(cx: Any) -> None:
        outcome.append(await prompt_until_error(cx, "sleep 60"))

    with pytest.raises(ConductorError):
        await run_client(chain, main)
    [(chunks, error)] = outcome
    assert chunks == ["zzz"]  # the turn had started
    assert error.code == -32603
    assert error.message.startswith("The proxy 'crash-proxy' (Proxy(0)) exited with exit code 3")
    assert error.data["lane"] == "Proxy(0)"
    assert error.data["component"] == "crash-proxy"
    assert error.data["exitCode"] == 3
    assert "giving up in the middle of the turn" in error.data["stderr"]


def dies_on_prompt(role: type[Any]) -> Any:
    """An in-process component that drops its connection when a prompt reaches it."""
    app = role.builder(name="flaky")

    @app.on_dispatch
    async def drop(message: Dispatch, cx: Connection) -> Unhandled | None:
        if isinstance(message, RequestDispatch) and message.method == "session/prompt":
            cx.close()
            return None
        if role is Agent and isinstance(message, RequestDispatch):
            agent = {"initialize": {"protocolVersion": 1}, "session/new": {"sessionId": "s-1"}}
            message.responder.respond(agent[message.method])
            return None
        return Unhandled(message)

    return app


@pytest.mark.parametrize(("role", "lane"), [(Agent, "Agent"), (Proxy, "Proxy(1)")])
async def test_an_in_process_component_that_closes_mid_turn_fails_the_prompt(
    role: type[Any], lane: str
) -> None:
    components = [Proxy.builder(), dies_on_prompt(role)]
    if role is Proxy:
        components.append(ScriptedAgent().builder())
    outcome: list[RequestError] = []

    async def main(cx: Any) -> None:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        async with cx.build_session("/").start_session() as session:
            session.send_prompt("greet")
            with pytest.raises(RequestError) as caught:
                await asyncio.wait_for(session.read_to_string(), TIMEOUT)
            outcome.append(caught.value)

    with pytest.raises(ConductorError, match=re.escape(f"'flaky' ({lane}) closed its connection")):
        await run_client(Chain.agent("conductor", components), main)
    [error] = outcome
    assert error.data == {"lane": lane, "component": "flaky"}


async def test_a_component_that_cannot_start_fails_initialize_and_the_conductor() -> None:
    chain = Chain.agent("conductor", [Proxy.builder(), "acpio-no-such-program --acp"])
    errors: list[RequestError] = []

    async def main(cx: Any) -> None:
        with pytest.raises(RequestError) as caught:
            await prompt_text(cx, "greet")
        errors.append(caught.value)

    with pytest.raises(
        ConductorError, match="Cannot start the agent 'acpio-no-such-program --acp' \\(Agent\\)"
    ):
        await run_client(chain, main)
    [error] = errors
    assert "command not found" in error.message
    assert error.data == {"lane": "Agent", "component": "acpio-no-such-program --acp"}
