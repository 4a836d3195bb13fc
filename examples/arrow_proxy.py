"""A proxy that quotes the agent's text: every line the agent writes reaches the client as ``> line``.

Like the Rust SDK's arrow proxy it rewrites only the agent's text chunks and forwards everything
else untouched; it marks the start of each line rather than each chunk, so a reply streamed word
by word still reads as one quoted paragraph. Chained, the quotes add up: ``> > Hello``.

It speaks both ACP versions: the v1 handlers take v1 chains, the v2 ones (on ``acpio.schema.v2``
models) v2 chains; on a chain of one version the handlers of the other stand aside.

Run it under a conductor: ``acpio conductor agent "python examples/arrow_proxy.py" "acpio testy"``
(or ``"acpio testy --protocol 2"``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from acpio import Agent, Client, Connection, Forward, Proxy, Stdio
from acpio import schema as acp
from acpio.schema import v2

app = Proxy.builder(name="arrow")
at_line_start: dict[str, bool] = {}  # per session: does the agent's next text start a line?


def quote(text: str, at_start: bool) -> tuple[str, bool]:
    """``text`` with ``> `` at each line start, and whether the text after it starts a line."""
    lines: list[str] = []
    for line in text.splitlines(keepends=True):
        lines.append("> " + line if at_start else line)
        at_start = line.endswith("\n")
    return "".join(lines), at_start


@app.on_request(peer=Client)
async def new_turn(prompt: acp.PromptRequest, responder: Any, cx: Connection) -> Forward:
    at_line_start[prompt.session_id] = True
    return Forward(prompt)  # on to the agent, unchanged


@app.on_notification(peer=Agent)
async def arrow(notification: acp.SessionNotification, cx: Connection) -> Forward:
    update, session = notification.update, notification.session_id
    if isinstance(update, acp.AgentMessageChunk) and isinstance(update.content, acp.TextContent):
        text, at_line_start[session] = quote(update.content.text, at_line_start.get(session, True))
        update.content.text = text
    return Forward(notification)  # on to the client, changed or not


@app.on_request(peer=Client)
async def new_turn_v2(prompt: v2.PromptRequest, responder: Any, cx: Connection) -> Forward:
    at_line_start[prompt.session_id] = True
    return Forward(prompt)


@app.on_notification(peer=Agent)
async def arrow_v2(notification: v2.UpdateSessionNotification, cx: Connection) -> Forward:
    update, session = notification.update, notification.session_id
    if isinstance(update, v2.AgentMessageChunk) and isinstance(update.content, v2.TextContent):
        text, at_line_start[session] = quote(update.content.text, at_line_start.get(session, True))
        update.content.text = text
    return Forward(notification)


if __name__ == "__main__":
    asyncio.run(app.serve(Stdio()))
