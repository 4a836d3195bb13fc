"""A compiled LangGraph graph served as an ACP agent: :func:`graph_app`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel
from langgraph.types import Command, StreamMode

from acpio import running
from acpio.app import AgentApp, AppSession, StopReasonName, Turn
from acpio.app.projections import Projections
from acpio.frameworks.langgraph.interrupts import answer_interrupt
from acpio.frameworks.langgraph.stream import GraphStream
from acpio.schema import ToolCall, ToolCallUpdate
from acpio.store import SessionStore
from acpio.transports.stdio import Stdio

__all__ = ["graph_app", "run_graph"]

_MODES: list[StreamMode] = ["messages", "updates", "custom"]


def graph_app(
    graph: Pregel[Any, Any, Any, Any],
    *,
    name: str = "langgraph",
    version: str = "0.1.0",
    store: SessionStore | str | None = None,
    projections: Projections | None = None,
    input_key: str = "messages",
    config: Mapping[str, Any] | None = None,
    protocols: Sequence[Literal[1, 2]] = (1,),
) -> AgentApp:
    """An :class:`~acpio.app.AgentApp` whose turns run ``graph`` (compiled with a checkpointer).

    Each prompt's text goes in as a human message under ``input_key``; the run is streamed (see
    :mod:`acpio.frameworks.langgraph.stream`: text, reasoning, tool calls shown by ``projections``,
    the plan), each ``interrupt()`` is asked of the user and the run resumed with the answer (see
    :mod:`acpio.frameworks.langgraph.interrupts`), and ``session/cancel`` cancels the run's task:
    the graph stops where it waits and the turn ends ``cancelled``. The session's id is the
    checkpointer's ``thread_id``, so the graph keeps each session's state; with a ``store`` (a
    :class:`~acpio.store.SessionStore` or its URL) sessions can be listed, loaded (their history
    replayed) and resumed, also by a new process whose graph has the same checkpointer.
    ``config`` is merged into each run's config (``recursion_limit``, more ``configurable`` keys).
    ``protocols`` are the ACP versions served, as :class:`~acpio.app.AgentApp`'s: ``(1, 2)`` serves
    v1 and v2 editors alike (on v2, an interrupt or permission makes the session
    ``requires_action`` until answered, and a cancel ends the turn ``idle`` ``cancelled``).

    Raises ``ValueError`` for a graph compiled without a checkpointer: it could neither keep a
    session's conversation nor resume after an interrupt.
    """
    if graph.checkpointer is None:
        raise ValueError(
            f"{graph.name!r} has no checkpointer: compile it with one (graph.compile(checkpointer="
            "InMemorySaver()), or a SqliteSaver to keep sessions across restarts)"
        )
    app = AgentApp(name, version=version, store=store, protocols=protocols)
    shown = projections if projections is not None else Projections()
    extra = dict(config or {})
    tool_ids: dict[str, set[str]] = {}  # by session: the tool call ids it used, in this process

    @app.on_close
    async def forget(session: AppSession) -> None:
        tool_ids.pop(session.id, None)

    @app.prompt
    async def prompt(turn: Turn) -> StopReasonName:
        run_config: RunnableConfig = {
            **extra,  # type: ignore[typeddict-item]
            "configurable": {**extra.get("configurable", {}), "thread_id": turn.session_id},
        }
        stream = GraphStream(turn, shown, tool_ids.setdefault(turn.session_id, _used_ids(turn)))
        run_input: Any = {input_key: [HumanMessage(content=turn.text)]}
        try:
            while True:
                async for namespace, mode, chunk in graph.astream(
                    run_input, run_config, stream_mode=_MODES, subgraphs=True
                ):
                    await stream.feed(namespace, mode, chunk)
                waiting = (await graph.aget_state(run_config, subgraphs=True)).interrupts
                if not waiting:
                    return "end_turn"
                answers = {i.id: await answer_interrupt(turn, stream, i) for i in waiting}
                run_input = Command(resume=answers)
        except asyncio.CancelledError:
            for state in stream.open_calls():  # the run stopped before their results: say so
                await turn.update(ToolCallUpdate(tool_call_id=state.acp_id, status="failed"))
            raise

    return app


def _used_ids(turn: Turn) -> set[str]:
    """The tool call ids of the session's earlier turns (a loaded session's too)."""
    return {
        update.tool_call_id
        for exchange in turn.history
        for update in exchange.updates
        if isinstance(update, ToolCall)
    }


def run_graph(
    graph: StateGraph[Any, Any, Any, Any],
    database: str | os.PathLike[str] | None = None,
    *,
    name: str = "langgraph",
    version: str = "0.1.0",
    projections: Projections | None = None,
    protocols: Sequence[Literal[1, 2]] = (1,),
) -> None:
    """Serve ``graph`` (a ``StateGraph`` not yet compiled) on this process's stdio, as editors start agents.

    With a ``database`` (an SQLite file: ``langgraph.db``), the graph is compiled with LangGraph's
    SQLite checkpointer on that file, and the sessions are kept beside it (``langgraph.sessions.db``):
    an editor can list, load and resume them after a restart. Two files, because two writers on one
    SQLite file lock each other out. Without a ``database``, both live in memory for the life of the
    process. ``protocols`` are the ACP versions served (``(1, 2)``: v1 and v2 editors). See
    :func:`graph_app` for how the graph is served.
    """
    if database is None:
        app = graph_app(
            graph.compile(checkpointer=InMemorySaver()),
            name=name,
            version=version,
            projections=projections,
            protocols=protocols,
        )
        app.run()
        return
    path = Path(database).absolute()
    sessions = path.with_name(f"{path.stem}.sessions{path.suffix}")

    async def serve() -> None:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        async with AsyncSqliteSaver.from_conn_string(str(path)) as saver:
            app = graph_app(
                graph.compile(checkpointer=saver),
                name=name,
                version=version,
                store=f"sqlite:///{sessions}",
                projections=projections,
                protocols=protocols,
            )
            await app.serve(Stdio())

    running.run(serve())
