"""The slash commands of the reference agent: ``/help``, ``/model``, ``/mode`` and ``/compact``."""

from __future__ import annotations

from acpio.agents.coder.model import Message, ModelInfo, ModelRequest, TextPart, UserMessage
from acpio.agents.coder.replies import call_model
from acpio.agents.coder.state import SessionState, model_choices
from acpio.app import StopReasonName, Turn
from acpio.errors import InvalidParams

__all__ = ["COMPACT_PROMPT", "compact", "help_text", "run_command"]

#: What the model is asked for ``/compact``.
COMPACT_PROMPT = (
    "Summarise our conversation so far for yourself: the task, what was done, files touched, decisions "
    "and what is left. Be complete but brief: this summary replaces the conversation."
)


async def run_command(turn: Turn, state: SessionState, name: str, argument: str) -> None:
    """Answer ``/help``, ``/model [id]`` or ``/mode [id]`` (``/compact`` is :func:`compact`)."""
    if name == "help":
        await turn.say(help_text(state, str(turn.options.get("model")), turn.mode))
    elif name == "model" and not argument:
        await turn.say(f"Model: {turn.options.get('model')}. Available: {', '.join(model_choices(state))}\n")
    elif name == "model":
        try:
            await turn.set_option("model", argument)
        except InvalidParams:
            await turn.say(f"No model {argument!r}; available: {', '.join(model_choices(state))}\n")
            return
        await turn.say(f"Model: {argument}\n")
    elif name == "mode" and not argument:
        await turn.say(f"Mode: {turn.mode}. Available: {', '.join(state.modes)}\n")
    else:
        if argument not in state.modes:
            await turn.say(f"No mode {argument!r}; available: {', '.join(state.modes)}\n")
            return
        await turn.set_mode(argument)
        if "mode" in turn.options:  # the v1 mirror of the mode (on v2 the mode is that option)
            await turn.set_option("mode", argument)
        mode_model = state.modes[argument].model
        if mode_model and mode_model in model_choices(state):
            await turn.set_option("model", mode_model)
        await turn.say(f"Mode: {state.modes[argument].name}\n")


async def compact(
    turn: Turn, model: ModelInfo, state: SessionState, messages: list[Message]
) -> StopReasonName:
    """``/compact``: have ``model`` summarise ``messages``; the summary is what the next turns start from."""
    if len(messages) <= 1:
        await turn.say("Nothing to compact yet.")
        return "end_turn"
    ask = UserMessage((TextPart(COMPACT_PROMPT),))
    reply, _ = await call_model(turn, state, model, ModelRequest(model.id, [*messages, ask]))
    if turn.client.has("session.compaction"):  # the reply, said, is what the next turns start from
        await turn.compact(reply.text)
    return "end_turn"


def help_text(state: SessionState, model: str, mode: str | None) -> str:
    """``/help``: the commands, the models and modes, and what the current model's provider tells its users.

    Each part is a paragraph or a list of its own: a heading right under a list item would be read
    (as markdown) as the end of that item.
    """
    models = "\n".join(f"- {m.qualified_id}: {m.label}" for m in state.catalogue.models)
    modes = "\n".join(f"- {m.id}: {m.name}" for m in state.settings.modes)
    parts = [
        "I am acpio's reference coding agent. I read and edit the project's files, run commands in your "
        "terminal and use the session's MCP servers.",
        "Commands: /help, /model [id], /mode [id], /compact.",
        f"Model: {model}; mode: {mode}.",
        f"Models:\n{models}",
        f"Modes:\n{modes}",
    ]
    used = {found.provider for part in model.split(",") if (found := state.catalogue.find(part.strip()))}
    for name in sorted(used):
        provider = state.catalogue.providers.get(name)
        if provider is not None and provider.help_text():
            parts.append(provider.help_text())
    return "\n\n".join(parts) + "\n"
