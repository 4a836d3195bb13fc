"""The exchange's steps on the session lifecycle: cancelling, closing, listing, resuming, deleting, loading.

Each step runs only where the agent advertises the method (``session/load`` where ``loadSession`` is
true...) and otherwise records why the requirement does not apply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.conformance._driver import NoAnswer
from tests.conformance._requirements import clip
from tests.conformance._transcript import updates

if TYPE_CHECKING:
    from tests.conformance._exchange import Exchange

#: Seconds a cancelled turn (whose prompt would last a minute) may take to answer.
CANCEL_TIMEOUT = 10.0
HISTORY_KINDS = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk"})


async def cancel(x: Exchange, session_id: str) -> None:
    if x.agent.busy_prompt is None:
        for requirement in ("ACP-CANCEL-001", "ACP-CANCEL-002", "ACP-CLOSE-002"):
            x.v.skip(requirement, "every turn of this agent ends at once: no cancel can land mid-turn")
        return
    x.step = "ACP-CANCEL-001"
    cancel = {"sessionId": session_id}
    answer = await interrupted(x, "ACP-CANCEL-001", session_id, lambda: x.cx.notify("session/cancel", cancel))
    if answer is not None:
        x.quiet_after.append(("ACP-CANCEL-002", session_id, x.cx.index(answer)))
    if not x.session_capability("close"):
        x.v.skip("ACP-CLOSE-002", "sessionCapabilities.close not advertised")
        return
    x.step = "ACP-CLOSE-002"
    closing = await x.new_session("new-closing")
    if closing is None:
        return
    requests: list[int | str] = []
    await interrupted(
        x,
        "ACP-CLOSE-002",
        closing,
        lambda: requests.append(x.cx.request("session/close", {"sessionId": closing})),
    )
    x.valid("ACP-CLOSE-001", "session/close", await x.cx.response_to(requests[0], "session/close"))


async def interrupted(
    x: Exchange, requirement: str, session_id: str, interrupt: Callable[[], object]
) -> dict[str, Any] | None:
    """Prompt the busy prompt, ``interrupt()`` at once: the turn must end ``cancelled``; its answer."""
    rid = x.cx.request(
        "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": x.agent.busy_prompt}]}
    )
    interrupt()
    how = x.cx.frames[-1].message["method"]
    try:
        answer = await x.cx.response_to(rid, "session/prompt", within=CANCEL_TIMEOUT)
    except NoAnswer as exc:  # the agent still answers other requests: go on with them
        x.v.check(requirement, False, f"{how} sent right after session/prompt: {exc}")
        return None
    x.stopped(requirement, f"a turn ended by {how}", answer, {"cancelled"})
    return answer


async def session_methods(x: Exchange) -> None:
    if x.session_capability("list"):
        x.step = "ACP-LIST-001"
        answer = await x.cx.call("session/list", {})
        if x.valid("ACP-LIST-001", "session/list", answer):
            x.v.check("ACP-LIST-001", isinstance(answer["result"].get("sessions"), list), clip(answer))
        elsewhere = x.root / "no-sessions-here"
        elsewhere.mkdir()
        x.step = "ACP-LIST-002"
        answer = await x.cx.call("session/list", {"cwd": str(elsewhere)})
        x.v.check("ACP-LIST-002", (answer.get("result") or {}).get("sessions") == [], clip(answer))
    else:
        x.v.skip("ACP-LIST-001", "sessionCapabilities.list not advertised")
        x.v.skip("ACP-LIST-002", "sessionCapabilities.list not advertised")
    await resume(x)
    if x.session_capability("close"):
        x.step = "ACP-CLOSE-001"
        idle = await x.new_session("new-idle")
        if idle is not None:
            x.valid("ACP-CLOSE-001", "session/close", await x.cx.call("session/close", {"sessionId": idle}))
    else:
        x.v.skip("ACP-CLOSE-001", "sessionCapabilities.close not advertised")
    if x.session_capability("delete"):
        x.step = "ACP-DELETE-001"
        doomed = await x.new_session("new-deleted")
        if doomed is not None:
            x.valid(
                "ACP-DELETE-001",
                "session/delete",
                await x.cx.call("session/delete", {"sessionId": doomed}),
            )
        x.step = "ACP-DELETE-002"
        answer = await x.cx.call("session/delete", {"sessionId": "sess_never_created"})
        x.v.check("ACP-DELETE-002", "result" in answer, f"session/delete of an unknown id: {clip(answer)}")
    else:
        x.v.skip("ACP-DELETE-001", "sessionCapabilities.delete not advertised")
        x.v.skip("ACP-DELETE-002", "sessionCapabilities.delete not advertised")
    if x.session_capability("additionalDirectories"):
        x.step = "ACP-ADDDIRS-001"
        extra = x.root / "extra"
        extra.mkdir()
        answer = await x.cx.call(
            "session/new",
            {"cwd": str(x.root), "mcpServers": [], "additionalDirectories": [str(extra)]},
        )
        x.valid("ACP-ADDDIRS-001", "session/new", answer)
    else:
        x.v.skip("ACP-ADDDIRS-001", "sessionCapabilities.additionalDirectories not advertised")


async def resume(x: Exchange) -> None:
    if not x.session_capability("resume"):
        x.v.skip("ACP-RESUME-001", "sessionCapabilities.resume not advertised")
        x.v.skip("ACP-RESUME-002", "sessionCapabilities.resume not advertised")
        return
    x.step = "ACP-RESUME-001"
    session_id = await x.new_session("new-resumed")
    if session_id is None:
        return
    await x.prompt(session_id, [{"type": "text", "text": "Remember this."}])
    rid = x.cx.request("session/resume", {"sessionId": session_id, "cwd": str(x.root)})
    start = len(x.cx.frames) - 1
    answer = await x.cx.response_to(rid, "session/resume")
    x.valid("ACP-RESUME-001", "session/resume", answer)
    replayed = [
        u
        for u in updates(x.cx.frames, session_id, start, x.cx.index(answer))
        if u.get("sessionUpdate") in HISTORY_KINDS
    ]
    x.v.check(
        "ACP-RESUME-002",
        not replayed,
        f"history sent before the session/resume answer: {clip(replayed)}",
    )


async def load(x: Exchange, session_id: str) -> None:
    if x.capabilities.get("loadSession") is not True:
        for requirement in ("ACP-LOAD-001", "ACP-LOAD-002", "ACP-LOAD-003"):
            x.v.skip(requirement, "loadSession not advertised")
        return
    x.step = "ACP-LOAD-001"
    params = {"sessionId": session_id, "cwd": str(x.root), "mcpServers": []}
    answer = await x.cx.call("session/load", params)
    if x.valid("ACP-LOAD-001", "session/load", answer):
        x.v.check("ACP-LOAD-003", isinstance(answer["result"], dict), clip(answer))
        x.quiet_after.append(("ACP-LOAD-002", session_id, x.cx.index(answer)))
