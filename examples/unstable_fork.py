"""Unstable ACP methods are opt-in: ``session/fork`` between a client and an agent in one process.

A builder turns the unstable methods on with ``unstable=True`` (``use_unstable_protocol=True`` on
the ``acpio.traits`` connections). Without it a client cannot send ``session/fork``
(``UnstableMethodNotEnabled``, nothing is written), and an agent answers it ``-32601 Method not
found`` as if it did not exist.

Run it: ``python examples/unstable_fork.py``
"""

from __future__ import annotations

import asyncio
import itertools
from pathlib import Path

from acpio import Agent, Builder, Client, MethodNotFound, SessionConnection, UnstableMethodNotEnabled
from acpio import schema as acp


def forking_agent(*, unstable: bool) -> Builder:
    """An agent that advertises ``session/fork``; it handles it only when built with ``unstable``.

    (The Agent builder's own ``initialize`` answer would advertise ``fork`` only where it has a
    handler; this one advertises it either way, to show what the agent answers without the flag.)
    """
    app = Agent.builder(name="forking-agent", version="1.0", unstable=unstable)
    session_numbers = itertools.count(1)

    @app.on_request
    async def initialize(req: acp.InitializeRequest) -> acp.InitializeResponse:
        fork = acp.SessionCapabilities(fork=acp.SessionForkCapabilities())
        return acp.InitializeResponse(
            protocol_version=1,
            agent_capabilities=acp.AgentCapabilities(session_capabilities=fork),
            agent_info=acp.Implementation(name="forking-agent", version="1.0"),
        )

    @app.on_request
    async def new_session(req: acp.NewSessionRequest) -> acp.NewSessionResponse:
        return acp.NewSessionResponse(session_id=f"s{next(session_numbers)}")

    if unstable:  # without the flag, registering this handler would raise UnstableMethodNotEnabled

        @app.on_request
        async def fork_session(req: acp.ForkSessionRequest) -> acp.ForkSessionResponse:
            return acp.ForkSessionResponse(session_id=f"{req.session_id}-fork")

    return app


async def fork(client: Builder[SessionConnection], agent: Builder) -> str:
    """Connect ``client`` to ``agent``, initialize, try ``session/fork``; say what happened."""

    async def main(cx: SessionConnection) -> str:
        await cx.send_request(acp.InitializeRequest(protocol_version=1))
        request = acp.ForkSessionRequest(session_id="s1", cwd=str(Path.cwd().absolute()))
        try:
            response: acp.ForkSessionResponse = await cx.send_request(request)
        except UnstableMethodNotEnabled as exc:
            return f"not sent: {exc.method} is unstable and this client did not turn unstable methods on"
        except MethodNotFound as exc:
            return f"the agent answered {exc.code} {exc.message}: {exc.data}"
        return f"forked: {response.session_id}"

    return await client.connect_with(agent, main)


async def main() -> None:
    print(await fork(Client.builder(unstable=True), forking_agent(unstable=True)))
    print(await fork(Client.builder(), forking_agent(unstable=True)))
    print(await fork(Client.builder(unstable=True), forking_agent(unstable=False)))


if __name__ == "__main__":
    asyncio.run(main())
