r"""The offline model: deterministic, no key, no network, for demos, CI and a first try.

It does not understand language; it follows the lines of the last user message, each one of the
:data:`DIRECTIVES` (``read PATH``, ``write PATH: TEXT``, ``run COMMAND``, ``say TEXT``...; anything
else is echoed), which the agent's ``/help`` lists.

The model makes one call per directive, in order, across the requests of a turn (the number of
its answers since the user's message says where it is), then ends the turn with a short report of
the tool results. A request without tools (the agent's ``/compact``) is answered with a summary.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Final

from acpio.agents.coder.model import (
    AssistantMessage,
    AudioPart,
    Finish,
    FinishReason,
    ImagePart,
    Message,
    ModelEvent,
    ModelInfo,
    ModelProvider,
    ModelRequest,
    ProviderSpec,
    TextDelta,
    ThinkingDelta,
    ToolCallEvent,
    ToolResultMessage,
    UsageEvent,
    UserMessage,
)

__all__ = ["DIRECTIVES", "OfflineProvider"]

#: What the offline model does with each line of the user's message: the directive, and what it does.
DIRECTIVES: Final = (
    ("read PATH", "call `read_file`"),
    ("write PATH: TEXT", "call `write_file` (`\\n` in TEXT is a new line)"),
    ("edit PATH: OLD => NEW", "call `edit_file` (replace OLD by NEW; `\\n` as above)"),
    ("run COMMAND", "call `run_command`"),
    ("plan A; B; C", "call `update_plan` (the first step in progress)"),
    ("call TOOL {JSON}", "call any tool (an MCP server's) with these arguments"),
    ("think TEXT", "reason (a thinking delta)"),
    ("say TEXT", "answer TEXT"),
    ("wait SECONDS", "stream nothing for a while (to cancel a model mid-stream)"),
    ("loop", "call `read_file` on `.` for ever (`max_turn_requests`)"),
    ("refuse / long", "stop with `refusal` / `max_tokens`"),
)

_CATALOGUE = (
    ModelInfo(
        "offline",
        "coder",
        "Offline coder (no network, scripted)",
        image=True,
        audio=True,
        reasoning=True,
        context_window=32_000,
        description="A deterministic offline model that follows directives: no key, no network",
    ),
    ModelInfo(
        "offline",
        "text",
        "Offline text-only (no network, scripted)",
        context_window=8_000,
        description="The offline model without images, audio or reasoning",
    ),
)


@dataclass(frozen=True, slots=True)
class _Step:
    """What one model call does: text and thinking first, then at most one tool call or a stop."""

    thinking: str = ""
    text: str = ""
    tool: tuple[str, dict[str, object]] | None = None
    wait: float = 0.0
    stop: FinishReason | None = None
    loop: bool = False


def _unescape(text: str) -> str:
    return text.replace("\\n", "\n")


def _parse(line: str) -> _Step:
    word, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    match word.lower():
        case "read" if rest:
            return _Step(tool=("read_file", {"path": rest}))
        case "write" if ":" in rest:
            path, _, text = rest.partition(":")
            return _Step(tool=("write_file", {"path": path.strip(), "content": _unescape(text.strip())}))
        case "edit" if ":" in rest and "=>" in rest:
            path, _, change = rest.partition(":")
            old, _, new = change.partition("=>")
            args: dict[str, object] = {
                "path": path.strip(),
                "old_text": _unescape(old.strip()),
                "new_text": _unescape(new.strip()),
            }
            return _Step(tool=("edit_file", args))
        case "run" if rest:
            return _Step(tool=("run_command", {"command": rest}))
        case "plan" if rest:
            items = [s.strip() for s in rest.split(";") if s.strip()]
            entries = [
                {"content": s, "status": "in_progress" if i == 0 else "pending"} for i, s in enumerate(items)
            ]
            return _Step(tool=("update_plan", {"entries": entries}))
        case "call" if rest:
            name, _, arguments = rest.partition(" ")
            try:
                parsed = json.loads(arguments or "{}")
            except ValueError:
                parsed = {"input": arguments}
            return _Step(tool=(name, parsed if isinstance(parsed, dict) else {"input": parsed}))
        case "think" if rest:
            return _Step(thinking=rest)
        case "say" if rest:
            return _Step(text=rest)
        case "wait" if re.fullmatch(r"\d+(\.\d+)?", rest):
            return _Step(wait=float(rest))
        case "loop":
            return _Step(tool=("read_file", {"path": "."}), loop=True)
        case "refuse":
            return _Step(text="I will not do that.", stop="refusal")
        case "long":
            return _Step(text="This answer is longer than the tokens I may", stop="max_tokens")
        case _:
            return _Step(text=line.strip())


def _offered(step: _Step, tools: set[str]) -> _Step:
    """A step whose tool is not offered says so instead (the mode or the client does not allow it)."""
    if step.tool is None or step.tool[0] in tools:
        return step
    return _Step(thinking=step.thinking, text=f"(the tool {step.tool[0]} is not available here)")


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _describe_media(message: UserMessage) -> str:
    seen = [
        f"{'an image' if isinstance(p, ImagePart) else 'audio'} ({p.mime_type}, {len(p.data) * 3 // 4} bytes)"
        for p in message.parts
        if isinstance(p, ImagePart | AudioPart)
    ]
    return f"I received {', '.join(seen)}. " if seen else ""


def _report(results: Sequence[ToolResultMessage]) -> str:
    lines = []
    for result in results:
        first = result.text.strip().splitlines()[0] if result.text.strip() else "(no output)"
        lines.append(f"- {result.name}: {'failed: ' if result.is_error else ''}{first[:200]}")
    return "Done. Tool results:\n" + "\n".join(lines) if lines else "Done."


class OfflineProvider(ModelProvider):
    """Two scripted models: ``offline/coder`` (images, audio, reasoning) and ``offline/text`` (text only)."""

    spec = ProviderSpec("offline", "Offline (no network)", key_env=None, key_required=False)

    async def models(self) -> list[ModelInfo]:
        """The two offline models, and any the settings declare for ``offline`` (for tests)."""
        return [*self.config.models, *_CATALOGUE]

    def help_text(self) -> str:
        """The directives the offline models follow, one per line of a message, as a markdown list."""
        listed = "\n".join(f"- `{directive}`: {does}" for directive, does in DIRECTIVES)
        intro = "The offline models follow a directive on each line of your message (others are echoed):"
        return f"{intro}\n{listed}"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        """Follow the next directive of the last user message (see the module's docstring)."""
        messages = list(request.messages)
        start = max((i for i, m in enumerate(messages) if isinstance(m, UserMessage)), default=-1)
        user = messages[start] if start >= 0 else None
        after = messages[start + 1 :]
        calls_made = sum(isinstance(m, AssistantMessage) for m in after)
        results = [m for m in after if isinstance(m, ToolResultMessage)]
        text = user.text if isinstance(user, UserMessage) else ""
        output: list[str] = []
        reason: FinishReason = "end_turn"

        if not request.tools:
            summary = f"Summary of {len(messages)} messages (offline model): " + " | ".join(
                m.text.strip().replace("\n", " ")[:120] for m in messages if isinstance(m, UserMessage)
            )
            output.append(summary)
            for event in _chunks(summary):
                yield event
        else:
            known = {t.name for t in request.tools}
            steps = [_offered(_parse(line), known) for line in text.splitlines() if line.strip()]
            if any(s.loop for s in steps):
                steps = [_Step(tool=("read_file", {"path": "."}))] * (calls_made + 1)
            tool_steps = [i for i, s in enumerate(steps) if s.tool is not None or s.stop is not None]
            # this call runs the steps after the previous call's tool, through the next tool or stop
            begin = tool_steps[calls_made - 1] + 1 if 0 < calls_made <= len(tool_steps) else 0
            end = tool_steps[calls_made] + 1 if calls_made < len(tool_steps) else len(steps)
            mine = steps[begin:end] if calls_made <= len(tool_steps) else []
            if request.reasoning_effort is not None and calls_made == 0:
                thought = f"Effort {request.reasoning_effort}: following {len(steps)} directive(s)."
                yield ThinkingDelta(thought)
            if calls_made == 0 and isinstance(user, UserMessage):
                media = _describe_media(user)
                if media:
                    output.append(media)
                    yield TextDelta(media)
            for step in mine:
                if step.wait:
                    await asyncio.sleep(step.wait)
                if step.thinking:
                    yield ThinkingDelta(step.thinking)
                if step.text:
                    said = step.text + ("\n" if step.tool is None else "")
                    output.append(said)
                    for event in _chunks(said):
                        yield event
                if step.stop is not None:
                    reason = step.stop
                if step.tool is not None:
                    name, arguments = step.tool
                    yield ToolCallEvent(f"call_{calls_made + 1}", name, json.dumps(arguments))
                    reason = "tool_use"
            if reason == "end_turn":
                final = _report(results) if results else ("" if output else "(offline model) Nothing to do.")
                if final:
                    output.append(final)
                    for event in _chunks(final):
                        yield event
        yield UsageEvent(
            input_tokens=sum(_tokens(_message_text(m)) for m in messages),
            output_tokens=_tokens("".join(output)),
        )
        yield Finish(reason)


def _chunks(text: str) -> list[ModelEvent]:
    return [TextDelta(piece) for piece in re.findall(r"\S+\s*|\s+", text)]


def _message_text(message: Message) -> str:
    if isinstance(message, AssistantMessage):
        return message.text + "".join(c.arguments for c in message.tool_calls)
    return message.text
