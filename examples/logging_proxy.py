"""A proxy that logs every message passing through it and changes nothing.

One line per message on stderr (or appended to the file named by the first argument):
``client -> agent  request session/prompt  {"sessionId": ...}``. Answers to requests are logged
as they come back. Run it under a conductor:
``acpio conductor agent "python examples/logging_proxy.py" "python my_agent.py"``
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TextIO

from acpio import Agent, Connection, Dispatch, Proxy, RequestDispatch, ResponseDispatch, Stdio, Unhandled

app = Proxy.builder(name="logging")
log: TextIO = open(sys.argv[1], "a", buffering=1) if len(sys.argv) > 1 else sys.stderr  # noqa: SIM115


@app.on_dispatch
async def log_message(message: Dispatch, cx: Connection) -> Unhandled:
    # A response answers a request this proxy forwarded: it comes from the side the request went to.
    sides = "agent -> client" if message.is_from(Agent) else "client -> agent"
    if isinstance(message, ResponseDispatch):
        kind, body = ("error", message.error.to_wire()) if message.error else ("result", message.result)
    else:
        kind, body = ("request" if isinstance(message, RequestDispatch) else "notification"), message.params
    print(f"{sides}  {kind} {message.method}  {json.dumps(body)[:500]}", file=log)
    return Unhandled(message)  # the default handler forwards it


if __name__ == "__main__":
    asyncio.run(app.serve(Stdio()))
