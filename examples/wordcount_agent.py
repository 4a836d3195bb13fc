"""The agent of the high-level API: it counts the prompt's words and, if allowed, writes the count.

It offers to write only to an editor that can (one that advertises ``fs.writeTextFile``), and an
editor that refuses the write fails that tool call, not the turn.
Run it with `acpio prompt --allow python examples/wordcount_agent.py "count these words"`.
"""

from acpio import AgentApp, StopReasonName, Turn

app = AgentApp("wordcount", version="1.0")


@app.prompt
async def prompt(turn: Turn) -> StopReasonName:
    n = len(turn.text.split())
    await turn.say(f"Your prompt has {n} words.")
    if turn.client.write_text_file:
        async with turn.tool_call("Write count.txt", kind="edit", on_error="report") as call:
            if await turn.ask_permission(call, allow="Write", deny="Skip"):
                await turn.write_file("count.txt", f"{n}\n")
    return "end_turn"


if __name__ == "__main__":
    app.run()
