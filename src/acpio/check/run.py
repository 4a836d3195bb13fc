"""Running the requirement registry against an agent command: :func:`check_agent`."""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

from acpio.check.editors import absolute_command_note, check_as_editor
from acpio.check.options import CheckOptions
from acpio.check.requirements import REQUIREMENTS, Requirement
from acpio.check.v1 import V1Script, check_version_answer
from acpio.check.v2 import V2Script
from acpio.check.verdicts import CheckReport, Verdicts
from acpio.check.wire import AgentUnderTest, ScriptedClient
from acpio.profiles.profile import EditorProfile, load_profile

__all__ = ["AgentNotFound", "check_agent"]


class AgentNotFound(Exception):
    """The agent's command cannot be run: not found, or not executable. The message names it."""


async def check_agent(argv: tuple[str, ...], options: CheckOptions | None = None) -> CheckReport:
    """Check the agent that ``argv`` starts against acpio's requirements; the report of every verdict.

    Each connection starts its own process of the agent, its sessions in their own temporary
    directory (the connections of v1, of the version probe, of v2 and of each editor run side by side). Raises
    :class:`AgentNotFound` when ``argv`` names no program that can be run.
    """
    options = options or CheckOptions()
    if not argv:
        raise AgentNotFound("no agent command: give it after --, as in `acpio check -- python my_agent.py`")
    if shutil.which(argv[0]) is None:
        raise AgentNotFound(f"cannot run {argv[0]!r}: no such program on PATH, or it is not executable")
    profiles = tuple(load_profile(name) for name in options.editors)
    v = Verdicts()
    scope: list[Requirement] = []
    jobs: list[Awaitable[None]] = []
    with tempfile.TemporaryDirectory(prefix="acpio-check-") as tmp:
        root = Path(tmp)
        if options.protocol in ("1", "both"):
            scope += [r for r in REQUIREMENTS if r.protocol == 1]
            jobs.append(
                _connection(argv, options, root / "v1", lambda cx, work: V1Script(cx, options, v, work).run())
            )
            jobs.append(
                _connection(
                    argv, options, root / "version", lambda cx, _: check_version_answer(cx, options, v)
                )
            )
            if profiles:
                scope += [r for r in REQUIREMENTS if r.protocol == 0]
            jobs += [_editor(argv, options, root, profile, v) for profile in profiles]
        if options.protocol in ("2", "both"):
            scope += [r for r in REQUIREMENTS if r.protocol == 2]
            jobs.append(
                _connection(argv, options, root / "v2", lambda cx, work: V2Script(cx, options, v, work).run())
            )
        turns = asyncio.Semaphore(max(1, options.parallel))

        async def in_turn(job: Awaitable[None]) -> None:
            async with turns:
                await job

        await asyncio.gather(*(in_turn(job) for job in jobs))
    notes = [note] if (note := absolute_command_note(argv, profiles)) else []
    return CheckReport(argv, v.verdicts(scope, "the check stopped before it (see the failure before)"), notes)


def _editor(
    argv: tuple[str, ...], options: CheckOptions, root: Path, profile: EditorProfile, v: Verdicts
) -> Awaitable[None]:
    capabilities = profile.client_capabilities
    return _connection(
        argv,
        options,
        root / f"editor-{profile.profile}",
        lambda cx, work: check_as_editor(cx, profile, options, v, work),
        capabilities=capabilities,
    )


async def _connection(
    argv: tuple[str, ...],
    options: CheckOptions,
    work: Path,
    script: Callable[[AgentUnderTest, Path], Awaitable[None]],
    *,
    capabilities: dict[str, object] | None = None,
) -> None:
    """Start a process of the agent and run ``script`` on it (its sessions in ``work``); it is gone after.

    The agent runs in this process's directory, as an editor runs it in the project's: a relative
    path in its command means what the user meant.
    """
    work.mkdir(parents=True)  # noqa: ASYNC240 (a directory of a temporary one: no wait worth a thread)
    work = Path(os.path.realpath(work))  # noqa: ASYNC240 (the cwd an agent sees, symbolic links resolved)
    client = ScriptedClient(capabilities or {}, work)
    stderr = work / "agent-stderr.log"
    cx = await AgentUnderTest.start(argv, client, stderr=stderr, answer_within=options.timeout)
    try:
        await script(cx, work)
    finally:
        await cx.kill()
