"""A run's Delivery passes notifications as bytes only while its chain is up, unbroken and not closing."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from acpio.conductor import ConductorError
from acpio.conductor.batches import BatchScope, Gathering
from acpio.conductor.delivery import Delivery
from acpio.conductor.inflight import InFlight
from acpio.conductor.links import ComponentLinks
from acpio.conductor.relay import read_notification
from acpio.conductor.run_state import RunState
from acpio.jsonrpc import UntypedRole
from acpio.testing import WirePeer
from acpio.transports import Channel

FRAME = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","n":1.50E+3}}'
#: Sent on the client's transport after a notification was left to the connection: nothing came before it.
MARKER = b'{"jsonrpc":"2.0","method":"_test/marker"}'


def _broken(state: RunState) -> None:
    state.fail(ConductorError("The agent 'a' (Agent) closed its connection"))


def _closing(state: RunState) -> None:
    state.closing = True


def _broken_links(failure: ConductorError) -> None:
    raise AssertionError(f"no component ends in these tests: {failure}")


@asynccontextmanager
async def _delivery() -> AsyncIterator[tuple[Delivery, RunState, Gathering, WirePeer]]:
    """An agent-mode run's delivery with its upstream connection made; the client as a raw peer."""
    state = RunState()
    scope = BatchScope()
    links = ComponentLinks("conductor", None, _broken_links, scope=scope)
    delivery = Delivery(True, links, None, InFlight(), state)
    ours, theirs = Channel.duplex()
    out = Gathering(ours, scope)
    delivery.up = await UntypedRole.builder(name="upstream").open_connection(out)
    delivery.up_out = out
    delivery.lanes = ["Agent"]
    client = WirePeer(theirs)
    try:
        yield delivery, state, out, client
    finally:
        await out.aclose()


async def test_a_notification_passes_as_bytes_only_once_the_chain_is_up() -> None:
    note = read_notification(FRAME)
    assert note is not None
    async with _delivery() as (delivery, state, out, client):
        assert delivery.pass_on(0, note) is None  # before the chain is up: the connection takes it
        state.instantiated = True
        assert delivery.pass_on(0, note) is out
        out.send(MARKER)
        assert await client.recv_raw() == FRAME  # as it came: the sender's spelling of its params
        assert await client.recv_raw() == MARKER


@pytest.mark.parametrize("stop", [_broken, _closing], ids=["broken", "closing"])
async def test_a_broken_or_closing_run_stops_passing_notifications_as_bytes(
    stop: Callable[[RunState], None],
) -> None:
    note = read_notification(FRAME)
    assert note is not None
    async with _delivery() as (delivery, state, out, client):
        state.instantiated = True
        stop(state)
        assert delivery.pass_on(0, note) is None
        out.send(MARKER)
        assert await client.recv_raw() == MARKER  # nothing went out before it


async def test_a_run_keeps_its_first_failure() -> None:
    state = RunState()
    first = ConductorError("The proxy 'p' (Proxy(0)) exited with exit code 1")
    state.fail(first)
    state.fail(ConductorError("The agent 'a' (Agent) closed its connection"))
    assert state.failure is first
