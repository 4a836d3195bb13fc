"""The high-level agent API: an :class:`AgentApp`, a prompt function, a :class:`Turn`.

A small agent in full::

    from acpio.app import AgentApp, StopReasonName, Turn

    app = AgentApp("wordcount", version="1.0")

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        await turn.say(f"Your prompt has {len(turn.text.split())} words.")
        return "end_turn"

    if __name__ == "__main__":
        app.run()
"""

from acpio.app.agent_app import (
    AgentApp,
    AppSession,
    ChangeFunction,
    CloseFunction,
    InitializeFunction,
    OpenFunction,
    PromptFunction,
    StopReasonName,
)
from acpio.app.forms import Ask, Elicited, FormError
from acpio.app.history import Exchange
from acpio.app.menu import CommandCall, OptionValue
from acpio.app.turn import (
    ActiveToolCall,
    CommandResult,
    OnToolError,
    ReportingToolCall,
    ToolKindName,
    ToolStatusName,
    Turn,
)

__all__ = [
    "ActiveToolCall",
    "AgentApp",
    "AppSession",
    "Ask",
    "ChangeFunction",
    "CloseFunction",
    "CommandCall",
    "CommandResult",
    "Elicited",
    "Exchange",
    "FormError",
    "InitializeFunction",
    "OnToolError",
    "OpenFunction",
    "OptionValue",
    "ReportingToolCall",
    "PromptFunction",
    "StopReasonName",
    "ToolKindName",
    "ToolStatusName",
    "Turn",
]
