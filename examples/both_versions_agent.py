"""One prompt function for ACP v1 and v2 editors: it counts the prompt's words, asks, then says the count.

The app serves both versions on its stdio (``protocols=(1, 2)``): each editor gets the version it
asks for at ``initialize``, and the same function writes v1's updates to one (``tool_call``,
``plan``, a prompt answered ``end_turn``) and v2's to the other (``tool_call_update`` upserts,
``plan_update``, ``state_update`` running then idle). Run it with
`acpio prompt --allow python examples/both_versions_agent.py "count these words"`.
"""

from acpio import AgentApp, StopReasonName, Turn

app = AgentApp("counter", version="1.0", protocols=(1, 2))


@app.prompt
async def prompt(turn: Turn) -> StopReasonName:
    n = len(turn.text.split())
    await turn.plan(["Count the words", "Tell the count"])
    async with turn.tool_call("Count the words", kind="think") as call:
        await call.update(text=f"{n} words")
        if not await turn.ask_permission(call, allow="Tell me", deny="Keep it"):
            await turn.say("I counted, and I keep it to myself.")
            return "end_turn"
    await turn.say(f"Your prompt has {n} words.")
    return "end_turn"


if __name__ == "__main__":
    app.run()
