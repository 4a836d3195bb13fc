"""An OpenAI Agents SDK agent as an :class:`~acpio.app.AgentApp`, and served on stdio."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from agents import Agent, RunConfig
from agents.handoffs import Handoff

from acpio.app import AgentApp, StopReasonName, Turn
from acpio.app.projections import Projection, Projections
from acpio.frameworks.openai_agents.agent_run import AgentRun
from acpio.frameworks.openai_agents.items import ApplyPatch, history_input, prompt_input
from acpio.schema import PromptCapabilities
from acpio.store import SessionStore

__all__ = ["openai_agent_app", "serve_openai_agent"]

#: Model calls in one prompt before the turn stops with ``max_turn_requests`` (the SDK's default).
DEFAULT_MAX_TURNS = 10


def reachable_agents(agent: Agent[Any]) -> dict[str, Agent[Any]]:
    """``agent`` and every agent its handoffs lead to, by name, ``agent`` first."""
    found: dict[str, Agent[Any]] = {}
    waiting: list[Agent[Any]] = [agent]
    while waiting:
        current = waiting.pop(0)
        if current.name in found:
            continue
        found[current.name] = current
        for target in current.handoffs:
            if isinstance(target, Agent):
                waiting.append(target)
            elif isinstance(target, Handoff):
                # the SDK's handoff() keeps its agent in a weak reference; a hand-made Handoff may not
                ref = getattr(target, "_agent_ref", None)
                resolved = ref() if ref is not None else None
                if isinstance(resolved, Agent):
                    waiting.append(resolved)
    return found


def openai_agent_app(
    agent: Agent[Any],
    *,
    name: str | None = None,
    version: str = "0.1.0",
    store: SessionStore | str | None = None,
    projections: Projections | Mapping[str, Projection] | None = None,
    context: Any = None,
    run_config: RunConfig | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    context_window: int = 128_000,
    protocols: Sequence[Literal[1, 2]] = (1,),
) -> AgentApp:
    """An :class:`~acpio.app.AgentApp` that answers each prompt by running ``agent`` (streamed).

    * Text and reasoning stream as message and thought chunks; each function, hosted or local
      tool call is a tool call shown through ``projections`` (a :class:`~acpio.app.projections.Projections`,
      or declarations added to the defaults: ``{"save": Edit(path="file", text="body")}``).
    * A tool with ``needs_approval`` asks the user (``session/request_permission``); the run
      resumes from its ``RunState`` with the answer (a rejection is told to the model).
    * The agents reachable through handoffs are the session's modes: a handoff switches the mode,
      and the next prompt starts at the mode's agent.
    * ``store`` (a :class:`~acpio.store.SessionStore` or its URL, ``"sqlite:///sessions.db"``)
      keeps sessions for ``session/load`` and ``session/resume``: the model is given the
      conversation again from the session's history, in this process or a new one.
    * ``session/cancel`` cancels the run's task and the running tool; the turn ends ``cancelled``.
    * ``usage_update`` after each model call, of ``context_window`` tokens (the model's).

    ``context`` and ``run_config`` are passed to every ``Runner.run_streamed``; ``max_turns``
    bounds the model calls of one prompt (past it the turn ends ``max_turn_requests``).
    ``protocols`` are the ACP versions served, as :class:`~acpio.app.AgentApp`'s: ``(1, 2)``
    serves v1 and v2 editors alike (on v2 the modes are the ``mode`` config option, and a
    cancel ends the turn ``idle`` ``cancelled``).
    """
    registry = projections if isinstance(projections, Projections) else Projections(projections)
    if "apply_patch" not in registry:
        registry.declare("apply_patch", ApplyPatch())
    app = AgentApp(
        name or agent.name,
        version=version,
        store=store,
        prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
        protocols=protocols,
    )
    modes = reachable_agents(agent)
    if len(modes) == 1:
        modes = {}  # one agent: no mode to offer
    for each in modes.values():
        app.mode(each.name, each.name, description=each.handoff_description)

    @app.prompt
    async def run(turn: Turn) -> StopReasonName:
        start = modes.get(turn.mode or "", agent)
        run_input: list[Any] = [*history_input(turn.history), prompt_input(turn.prompt)]
        driver = AgentRun(
            turn,
            start,
            registry,
            modes=modes,
            context=context,
            run_config=run_config,
            max_turns=max_turns,
            context_window=context_window,
        )
        return await driver.answer(run_input)

    return app


def serve_openai_agent(
    agent: Agent[Any],
    *,
    name: str | None = None,
    version: str = "0.1.0",
    store: SessionStore | str | None = None,
    projections: Projections | Mapping[str, Projection] | None = None,
    context: Any = None,
    run_config: RunConfig | None = None,
    max_turns: int = DEFAULT_MAX_TURNS,
    context_window: int = 128_000,
    protocols: Sequence[Literal[1, 2]] = (1,),
) -> None:
    """Serve ``agent`` to the editor on this process's stdin and stdout.

    The options are :func:`openai_agent_app`'s.
    """
    app = openai_agent_app(
        agent,
        name=name,
        version=version,
        store=store,
        projections=projections,
        context=context,
        run_config=run_config,
        max_turns=max_turns,
        context_window=context_window,
        protocols=protocols,
    )
    app.run()
