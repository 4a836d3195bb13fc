"""A proxy program that dies in the middle of a turn, for the conductor's crash tests.

It forwards everything; when the first ``session/update`` of a turn comes back from the agent, it
forwards it, says why on stderr and exits with status 3 a moment later.
"""

from __future__ import annotations

import asyncio
import os
import sys

from acpio import Agent, Proxy
from acpio.jsonrpc import Connection, Dispatch, Unhandled
from acpio.transports import Stdio

app = Proxy.builder(name="crash-proxy")


@app.on_dispatch(peer=Agent)
async def crash_on_update(message: Dispatch, cx: Connection) -> Unhandled:
    if message.method == "session/update":
        print("crash_proxy: giving up in the middle of the turn, on purpose", file=sys.stderr, flush=True)
        asyncio.get_running_loop().call_later(0.2, os._exit, 3)
    return Unhandled(message)


if __name__ == "__main__":
    asyncio.run(app.serve(Stdio()))
