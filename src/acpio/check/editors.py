"""The editor requirements (``EDITOR-*``): the agent as Zed, JetBrains IDEs and CodeCompanion.nvim start it.

For each profile of :mod:`acpio.profiles`, one connection initializes with exactly that editor's
``initialize`` (its capabilities and ``clientInfo``), opens a session and runs a turn, while a
:class:`~acpio.profiles.ProfileGuard` watches every message as the editor would: an update before
the ``session/new`` answer (Zed drops it, JetBrains hangs) and a request the editor did not
advertise are failures, named by editor.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from acpio.check.options import CheckOptions
from acpio.check.transcript import clip
from acpio.check.verdicts import Verdicts
from acpio.check.wire import AgentUnderTest, NoAnswer
from acpio.profiles.guard import ProfileGuard
from acpio.profiles.profile import EditorProfile

__all__ = ["absolute_command_note", "check_as_editor"]


async def check_as_editor(
    cx: AgentUnderTest, profile: EditorProfile, options: CheckOptions, v: Verdicts, root: Path
) -> None:
    """Run a session and a turn as ``profile``'s editor on ``cx``; record ``EDITOR-001`` and ``-002``."""
    try:
        await cx.call("initialize", profile.initialize, within=options.start_timeout)
        answer = await cx.call("session/new", {"cwd": str(root), "mcpServers": []})
        session_id = (
            (answer.get("result") or {}).get("sessionId") if isinstance(answer.get("result"), dict) else None
        )
        if isinstance(session_id, str):
            text = [{"type": "text", "text": options.prompt}]
            await cx.call("session/prompt", {"sessionId": session_id, "prompt": text})
            await cx.until(0.3)
    except NoAnswer as exc:
        v.skip("EDITOR-001", f"as {profile.name}: {exc}")
    finally:
        await cx.finish(options.timeout)
    guard = ProfileGuard(profile, warn=False)
    for frame in cx.frames:
        if frame.direction == "out":
            guard.outgoing(frame.message)
        else:
            guard.incoming(frame.message)
    early = guard.by_kind.get("early-session-update", [])
    refused = guard.by_kind.get("not-advertised", [])
    if profile.behaviour("early-session-update") is not None:
        v.check("EDITOR-001", not early, f"as {profile.name}: {clip(early[:1], 400)}")
    v.check("EDITOR-002", not refused, f"as {profile.name}: {clip(refused[:1], 400)}")


def absolute_command_note(argv: tuple[str, ...], profiles: tuple[EditorProfile, ...]) -> str | None:
    """A note for editors that need the agent's command as an absolute path, when it is not one."""
    needing = [p for p in profiles if p.behaviour("absolute-command") is not None]
    if not needing or not argv or Path(argv[0]).is_absolute():
        return None
    found = shutil.which(argv[0])
    where = f"use {found}" if found else f"{argv[0]!r} is not on PATH here"
    names = ", ".join(p.name for p in needing)
    behaviour = needing[0].behaviour("absolute-command")
    source = behaviour.sources[0] if behaviour is not None else ""
    return f"{names}: the command must be an absolute path ({source}): {where}"
