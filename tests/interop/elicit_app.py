"""An acpio agent written with the agent API that asks with ``turn.elicit`` and ``turn.elicit_url``.

Each prompt asks for a :class:`Profile` (a form of every field kind), then asks the user to open a
page and completes that elicitation once accepted; it says the typed answers back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from acpio.app import AgentApp, Ask, StopReasonName, Turn

app = AgentApp("elicit-app", version="1.0")


@dataclass
class Profile:
    name: Annotated[str, Ask("Name", min_length=1)]
    age: Annotated[int, Ask("Age", minimum=18, maximum=99)]
    email: Annotated[str, Ask("Email", format="email")]
    ratio: Annotated[float, Ask("Ratio", minimum=0.5)]
    subscribe: bool
    colour: Literal["red", "green"]
    size: Annotated[Literal["s", "l"], Ask(choices={"s": "Small", "l": "Large"})]
    tags: list[Literal["x", "y"]] = field(default_factory=list)


@app.prompt
async def prompt(turn: Turn) -> StopReasonName:
    answer = await turn.elicit("Who are you?", Profile)
    if answer.value is not None:
        profile = answer.value
        await turn.say(f"form: {answer.action} {profile.name} {profile.age + 1} {profile.ratio * 2} ")
        await turn.say(f"{profile.subscribe} {profile.colour} {profile.size} {','.join(profile.tags)}\n")
    else:
        await turn.say(f"form: {answer.action}\n")
    link = await turn.elicit_url("Authorize acpio", "https://example.com/acpio", elicitation_id="acpio-url-1")
    if link.accepted and link.elicitation_id is not None:
        await turn.complete_elicitation(link.elicitation_id)
    await turn.say(f"url: {link.action}\n")
    return "end_turn"


if __name__ == "__main__":
    app.run()
