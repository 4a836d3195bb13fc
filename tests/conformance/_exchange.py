"""One connection to an agent command that exercises every requirement of ``_requirements.py``.

:func:`check_agent` starts the command, runs a scripted exchange (initialize; a bad request and
unknown methods; sessions, prompts of each kind, cancellation, modes and options; then list,
resume, close, delete and load where advertised), closes stdin and judges the whole transcript.
The result, :class:`Verdicts`, says per requirement id what failed, with what was sent and what
came back, or why the requirement does not apply to this agent.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import acpio
from tests.conformance import _session_steps as session_steps
from tests.conformance._driver import EXIT_TIMEOUT, AgentUnderTest, NoAnswer, ScriptedClient, start_agent
from tests.conformance._requirements import Verdicts, clip
from tests.conformance._schema import AgentSchema
from tests.conformance._transcript import Transcript

STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"})
PROBE = "_acpio/conformance_probe"
#: This checkout's ``src``: the agents run the acpio under test, not an installed one.
SOURCE = Path(acpio.__file__).resolve().parents[1]
#: A 1x1 PNG and a short WAV, for the prompts with an image or audio.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(
    b"RIFF$\x00\x00\x00WAVEfmt \x10\x00\x00\x00\x01\x00\x01\x00"
    b"@\x1f\x00\x00\x80>\x00\x00\x02\x00\x10\x00data\x00\x00\x00\x00"
).decode()


@dataclass(frozen=True)
class AgentCommand:
    """An agent as a user runs it: its command line, and what makes it busy or use tools."""

    name: str
    argv: tuple[str, ...]
    #: A prompt whose turn lasts until it is cancelled (``None``: every turn ends at once).
    busy_prompt: str | None = None
    #: A prompt after which the agent uses files and a terminal if the client offers them.
    work_prompt: str | None = None


@dataclass(frozen=True)
class ClientProfile:
    """The client side of a connection: the version it asks for and the capabilities it advertises."""

    name: str
    protocol_version: int
    capabilities: Mapping[str, Any]


PROFILES = (
    ClientProfile("no-capabilities", 1, {}),  # the test kit's own client
    ClientProfile("files", 1, {"fs": {"readTextFile": True, "writeTextFile": True}}),
    ClientProfile(
        "everything-future-version",
        65535,
        {
            "fs": {"readTextFile": True, "writeTextFile": True},
            "terminal": True,
            "auth": {"terminal": True},
            "elicitation": {"form": {}},
            "session": {"configOptions": {"boolean": {}}},
        },
    ),
)


class Exchange:
    """The scripted connection: the steps in order, then the judgement of the transcript."""

    def __init__(
        self, agent: AgentCommand, profile: ClientProfile, cx: AgentUnderTest, schema: AgentSchema, root: Path
    ) -> None:
        self.agent = agent
        self.profile = profile
        self.cx = cx
        self.schema = schema
        self.root = root
        self.v = Verdicts()
        self.capabilities: dict[str, Any] = {}
        #: (requirement, session id, frame index of an answer): no update of the session may follow it.
        self.quiet_after: list[tuple[str, str, int]] = []
        #: (session id, frame index of the prompt, frame index of its answer) of each turn.
        self.turns: list[tuple[str, int, int]] = []
        self.step = "ACP-INIT-001"

    # --- helpers ------------------------------------------------------------------------------------

    def valid(self, requirement: str, method: str, answer: Mapping[str, Any]) -> bool:
        """Whether ``answer`` is a valid result for ``method`` (else a failure of ``requirement``)."""
        problems = self.schema.problems(answer, method) if "result" in answer else ["not a result"]
        self.v.check(requirement, not problems, f"{method} answered {clip(answer)}: {problems}")
        return not problems

    def stopped(self, requirement: str, what: str, answer: Mapping[str, Any], wanted: set[str]) -> None:
        reason = (answer.get("result") or {}).get("stopReason") if "result" in answer else None
        self.v.check(
            requirement,
            reason in wanted,
            f"{what}: wanted stopReason in {sorted(wanted)}, got {clip(answer)}",
        )

    def session_capability(self, name: str) -> bool:
        return (self.capabilities.get("sessionCapabilities") or {}).get(name) is not None

    async def new_session(self, request_id: str, **more: Any) -> str | None:
        answer = await self.cx.call(
            "session/new", {"cwd": str(self.root), "mcpServers": [], **more}, request_id
        )
        self.v.check(
            "ACP-JSONRPC-001",
            answer.get("id") == request_id,
            f"session/new id {request_id!r}: {clip(answer)}",
        )
        error = answer.get("error") or {}
        if error.get("code") == -32000:
            self.v.check(
                "ACP-AUTH-005", bool(self.auth_methods), f"no authMethods, yet session/new: {clip(answer)}"
            )
            return None
        self.v.check("ACP-AUTH-005", True, "")
        session_id = (answer.get("result") or {}).get("sessionId")
        ok = (
            self.valid("ACP-SESSION-001", "session/new", answer)
            and isinstance(session_id, str)
            and session_id
        )
        self.v.check("ACP-SESSION-001", bool(ok), f"session/new answered {clip(answer)}")
        self._check_setup(answer.get("result") or {})
        return session_id if ok else None

    def _check_setup(self, result: Mapping[str, Any]) -> None:
        modes = result.get("modes")
        if modes:
            ids = [m.get("id") for m in modes.get("availableModes", [])]
            self.v.check("ACP-MODES-001", modes.get("currentModeId") in ids, f"modes {clip(modes)}")
        else:
            self.v.skip("ACP-MODES-001", "session/new answers no modes")
        options = result.get("configOptions")
        if not options:
            self.v.skip("ACP-CONFIG-001", "session/new answers no config options")
        boolean_ok = bool(
            (((self.profile.capabilities.get("session") or {}).get("configOptions")) or {}).get("boolean")
            is not None
        )
        for option in options or ():
            if option.get("type") == "boolean":
                self.v.check("ACP-CONFIG-001", isinstance(option.get("currentValue"), bool), clip(option))
                self.v.check(
                    "ACP-CONFIG-003", boolean_ok, f"boolean option to a client without them: {clip(option)}"
                )
            else:
                values = select_values(option)
                self.v.check(
                    "ACP-CONFIG-001",
                    option.get("currentValue") in values,
                    f"value not a choice: {clip(option)}",
                )
        self.v.check("ACP-CONFIG-003", True, "")

    async def prompt(self, session_id: str, blocks: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
        rid = self.cx.request("session/prompt", {"sessionId": session_id, "prompt": blocks, **more})
        start = len(self.cx.frames) - 1
        answer = await self.cx.response_to(rid, "session/prompt")
        self.turns.append((session_id, start, self.cx.index(answer)))
        return answer

    # --- the steps ----------------------------------------------------------------------------------

    async def run(self) -> Verdicts:
        """Run the steps, then close the connection and judge the whole transcript."""
        try:
            await self._steps()
        except NoAnswer as exc:
            self.v.check(self.step, False, f"stopped: {exc}")
        await self.cx.finish(EXIT_TIMEOUT)
        self.v.check(
            "ACP-SHUTDOWN-001", self.cx.exit_code is not None, "still running after stdin closed: killed"
        )
        Transcript(self.cx.frames, self.schema, self.cx.client, self.v).judge(self.turns, self.quiet_after)
        return self.v

    async def _steps(self) -> None:
        if not await self._initialize():
            return
        self.step = "ACPIO-PARAMS-001"
        await self._bad_requests()
        self.step = "ACP-SESSION-001"
        first = await self.new_session("new-1")
        if first is None:
            return
        self.cx.notify("session/cancel", {"sessionId": first})  # nothing to cancel: no answer may follow
        await self._prompts(first)
        await self._modes_and_options(first)
        self.step = "ACP-SESSION-002"
        second = await self.new_session("new-2")
        if second is None:
            return
        self.v.check("ACP-SESSION-002", first != second, f"two session/new both answered {first!r}")
        await session_steps.cancel(self, second)
        await session_steps.session_methods(self)
        await session_steps.load(self, first)
        self.step = "ACP-JSONRPC-005"
        answer = await self.cx.call(
            PROBE, {}
        )  # the last answer: what the agent still sends is read on closing
        self.v.check("ACP-JSONRPC-005", "error" in answer or "result" in answer, clip(answer))

    async def _initialize(self) -> bool:
        version = self.profile.protocol_version
        params = {
            "protocolVersion": version,
            "clientCapabilities": dict(self.profile.capabilities),
            "clientInfo": {"name": "acpio-conformance", "version": "1.0"},
        }
        answer = await self.cx.call("initialize", params, 424242)
        self.v.check("ACP-JSONRPC-001", answer.get("id") == 424242, f"initialize id 424242: {clip(answer)}")
        result = answer.get("result")
        if not self.valid("ACP-INIT-001", "initialize", answer) or not isinstance(result, dict):
            return False
        agreed = result.get("protocolVersion")
        self.v.check("ACP-INIT-001", type(agreed) is int, f"protocolVersion {agreed!r}")
        if version == 1:
            self.v.check("ACP-INIT-002", agreed == 1, f"asked for 1, got {agreed!r}")
            self.v.skip("ACP-INIT-003", "this client asks for version 1")
        else:
            self.v.skip("ACP-INIT-002", "this client asks for a future version")
            self.v.check(
                "ACP-INIT-003",
                agreed != version and isinstance(agreed, int) and agreed >= 1,
                f"asked for {version}, got {agreed!r}",
            )
        info = result.get("agentInfo") or {}
        self.v.check(
            "ACP-INIT-004", bool(info.get("name")) and bool(info.get("version")), f"agentInfo {clip(info)}"
        )
        self.auth_methods: list[dict[str, Any]] = result.get("authMethods") or []
        ids = [m.get("id") for m in self.auth_methods]
        self.v.check("ACP-AUTH-001", len(ids) == len(set(ids)), f"authMethods ids {ids}")
        terminal_auth = bool((self.profile.capabilities.get("auth") or {}).get("terminal"))
        terminals = [m for m in self.auth_methods if m.get("type") == "terminal"]
        self.v.check(
            "ACP-AUTH-002",
            terminal_auth or not terminals,
            f"terminal auth without auth.terminal: {terminals}",
        )
        self.capabilities = result.get("agentCapabilities") or {}
        return True

    async def _bad_requests(self) -> None:
        # its envelope is judged with every other answer's (ACP-JSONRPC-002)
        answer = await self.cx.call("session/new", {"mcpServers": []}, "no-cwd")
        code = (answer.get("error") or {}).get("code")
        self.v.check("ACPIO-PARAMS-001", code == -32602, f"session/new without cwd: {clip(answer)}")
        for method in (PROBE, "session/no_such_method"):
            answer = await self.cx.call(method, {})
            code = (answer.get("error") or {}).get("code")
            self.v.check("ACP-JSONRPC-004", code == -32601, f"{method}: {clip(answer)}")
            self.v.check("ACP-EXT-001", "error" in answer or "result" in answer, f"{method}: {clip(answer)}")

    async def _prompts(self, session_id: str) -> None:
        self.step = "ACP-PROMPT-001"
        answer = await self.prompt(session_id, [{"type": "text", "text": "Hello! What can you do?"}])
        self.stopped("ACP-PROMPT-001", "a text prompt", answer, set(STOP_REASONS))
        if self.agent.work_prompt is not None:
            answer = await self.prompt(session_id, [{"type": "text", "text": self.agent.work_prompt}])
            self.stopped(
                "ACP-PROMPT-001", f"the prompt {self.agent.work_prompt!r}", answer, set(STOP_REASONS)
            )
        self.step = "ACP-PROMPT-003"
        notes = self.root / "notes.txt"
        notes.write_text("some notes\n")
        link = {"type": "resource_link", "uri": notes.as_uri(), "name": "notes.txt"}
        answer = await self.prompt(session_id, [{"type": "text", "text": "Read this file."}, link])
        self.stopped("ACP-PROMPT-003", "a prompt with a resource_link", answer, set(STOP_REASONS))
        self.step = "ACP-META-001"
        meta = {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
        answer = await self.prompt(session_id, [{"type": "text", "text": "Hello again."}], _meta=meta)
        self.stopped("ACP-META-001", "a prompt with _meta", answer, set(STOP_REASONS))
        offered = self.capabilities.get("promptCapabilities") or {}
        extra = {
            "ACP-PROMPTCAP-001": ("image", {"type": "image", "data": PNG, "mimeType": "image/png"}),
            "ACP-PROMPTCAP-002": ("audio", {"type": "audio", "data": WAV, "mimeType": "audio/wav"}),
            "ACP-PROMPTCAP-003": (
                "embeddedContext",
                {
                    "type": "resource",
                    "resource": {"uri": notes.as_uri(), "mimeType": "text/plain", "text": "notes"},
                },
            ),
        }
        for requirement, (capability, block) in extra.items():
            if not offered.get(capability):
                self.v.skip(requirement, f"promptCapabilities.{capability} not advertised")
                continue
            self.step = requirement
            answer = await self.prompt(session_id, [{"type": "text", "text": "Look at this."}, block])
            self.stopped(requirement, f"a prompt with {block['type']}", answer, set(STOP_REASONS))

    async def _modes_and_options(self, session_id: str) -> None:
        setup = self._setup_of("new-1")
        modes = (setup.get("modes") or {}).get("availableModes") or []
        current = (setup.get("modes") or {}).get("currentModeId")
        others = [m["id"] for m in modes if m.get("id") != current]
        self.step = "ACP-MODES-002"
        if others:
            answer = await self.cx.call("session/set_mode", {"sessionId": session_id, "modeId": others[0]})
            self.valid("ACP-MODES-002", "session/set_mode", answer)
        else:
            self.v.skip("ACP-MODES-002", "fewer than two modes")
        self.step = "ACP-CONFIG-002"
        options = setup.get("configOptions") or []
        for option in options:
            values = [v for v in select_values(option) if v != option.get("currentValue")]
            if option.get("type") == "select" and values:
                params = {"sessionId": session_id, "configId": option["id"], "value": values[0]}
                answer = await self.cx.call("session/set_config_option", params)
                if self.valid("ACP-CONFIG-002", "session/set_config_option", answer):
                    after = {o["id"]: o.get("currentValue") for o in answer["result"]["configOptions"]}
                    missing = [o["id"] for o in options if o["id"] not in after]
                    ok = not missing and after.get(option["id"]) == values[0]
                    self.v.check("ACP-CONFIG-002", ok, f"set {option['id']}={values[0]!r}: {clip(answer)}")
                return
        self.v.skip("ACP-CONFIG-002", "no select option with two choices")

    def _setup_of(self, request_id: str) -> dict[str, Any]:
        for frame in self.cx.frames:
            message = frame.message
            if frame.direction == "in" and isinstance(message, dict) and message.get("id") == request_id:
                return dict(message.get("result") or {})
        return {}


def select_values(option: Mapping[str, Any]) -> list[Any]:
    """The values a select config option offers (flat or grouped)."""
    values = []
    for entry in option.get("options") or []:
        if "value" in entry:
            values.append(entry["value"])
        values += [o.get("value") for o in entry.get("options") or []]  # grouped choices
    return values


def agent_env(home: Path, source: Path) -> dict[str, str]:
    """The agent's environment: this checkout's acpio first, the user's files and keys out of reach."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    env["HOME"] = str(home)
    for variable, sub in (
        ("XDG_CONFIG_HOME", "config"),
        ("XDG_DATA_HOME", "data"),
        ("XDG_STATE_HOME", "state"),
    ):
        env[variable] = str(home / sub)
    return env


async def check_agent(
    agent: AgentCommand, profile: ClientProfile, schema: AgentSchema, root: Path
) -> Verdicts:
    """Run the exchange against a fresh process of ``agent``, in ``root`` (its cwd and the session's)."""
    work = root / "work"
    work.mkdir()
    client = ScriptedClient(profile.capabilities, work)
    env = agent_env(root / "home", SOURCE)
    cx = await start_agent(agent.argv, client, cwd=work, env=env)
    try:
        return await Exchange(agent, profile, cx, schema, work).run()
    finally:
        await cx.kill()
