"""Many prompts over a pool, results as they complete: what ``acpio batch`` runs.

:func:`read_prompts` reads prompts from JSON lines (``{"prompt": "...", "id": "a", "cwd":
"/path"}``), checking every line first; :func:`run_prompts` runs them concurrently on an
:class:`~acpio.pool.AgentPool` and yields each result as its turn ends.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass

from acpio.errors import AcpError
from acpio.pool.pool import AgentPool
from acpio.pool.result import SupervisedTurn

__all__ = ["BatchPrompt", "PromptFileError", "read_prompts", "run_prompts"]


class PromptFileError(ValueError):
    """A line of a prompts file is not a prompt; the message names every such line and what is wrong."""


@dataclass(frozen=True, slots=True)
class BatchPrompt:
    """One prompt of a batch: its text, its id (the line number unless given), its session's directory."""

    prompt: str
    id: str
    cwd: str | None = None


def read_prompts(lines: Iterable[str]) -> list[BatchPrompt]:
    """The prompts of JSON lines: an object per line, ``prompt`` (text) required, ``id`` and ``cwd`` optional.

    Blank lines are skipped; an ``id`` may be a string or a number, and ids must be unique.
    Raises :class:`PromptFileError` naming every bad line.
    """
    prompts: list[BatchPrompt] = []
    problems: list[str] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            prompt = _prompt(json.loads(line), number)
        except json.JSONDecodeError as exc:
            problems.append(f"line {number}: not JSON: {exc.msg} at column {exc.colno}")
            continue
        except (ValueError, TypeError) as exc:
            problems.append(f"line {number}: {exc}")
            continue
        if prompt.id in seen:
            problems.append(
                f"line {number}: the id {prompt.id!r} is taken by an earlier line (ids are unique)"
            )
            continue
        seen.add(prompt.id)
        prompts.append(prompt)
    if problems:
        raise PromptFileError(
            "the prompts file has mistakes (each line is a JSON object such as "
            '{"prompt": "text", "id": "a", "cwd": "/path"}):\n  ' + "\n  ".join(problems)
        )
    return prompts


def _prompt(value: object, number: int) -> BatchPrompt:
    if not isinstance(value, dict):
        raise ValueError(f"expected a JSON object, not {type(value).__name__}")
    unknown = sorted(set(value) - {"prompt", "id", "cwd"})
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(map(repr, unknown))}: a line has prompt, id and cwd")
    text = value.get("prompt")
    if not isinstance(text, str) or not text:
        raise ValueError('"prompt" must be non-empty text')
    given = value.get("id", number)
    if isinstance(given, bool) or not isinstance(given, str | int):
        raise ValueError('"id" must be text or a whole number')
    cwd = value.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise ValueError('"cwd" must be the path of a directory')
    return BatchPrompt(text, str(given), cwd)


async def run_prompts(pool: AgentPool, prompts: Sequence[BatchPrompt]) -> AsyncIterator[SupervisedTurn]:
    """Run every prompt (each in a session of its own) on ``pool``; yield the results as they complete.

    Each result carries its prompt's id (``prompt_id``). The pool bounds how many run at once. A
    prompt whose session could not be set up gives a failed result (``error``; ``slot`` is ``-1``).
    Stopping the iteration early cancels the turns still running (the watchdog escalates each).
    """
    results: asyncio.Queue[SupervisedTurn] = asyncio.Queue()

    async def run(item: BatchPrompt) -> None:
        started = time.monotonic()
        try:
            result = await pool.prompt(item.prompt, cwd=item.cwd, prompt_id=item.id)
        except AcpError as exc:  # the session could not be set up (a cwd the agent refused...)
            result = SupervisedTurn.not_run(item.id, f"{exc}", time.monotonic() - started)
        results.put_nowait(result)

    tasks = [asyncio.get_running_loop().create_task(run(item)) for item in prompts]
    try:
        for _ in prompts:
            yield await _next(results, tasks)
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


async def _next(results: asyncio.Queue[SupervisedTurn], tasks: list[asyncio.Task[None]]) -> SupervisedTurn:
    """The next result; an unexpected error of a prompt's task is raised."""
    getting = asyncio.ensure_future(results.get())
    try:
        while True:
            failed = [t for t in tasks if t.done() and not t.cancelled() and t.exception() is not None]
            if failed:
                raise failed[0].exception()  # type: ignore[misc]
            running = [t for t in tasks if not t.done()]
            await asyncio.wait([getting, *running], return_when=asyncio.FIRST_COMPLETED)
            if getting.done():
                return getting.result()
    finally:
        getting.cancel()
