"""A client on the wire for the reference agent's tests: raw JSON, answering the agent's requests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acpio.agents.coder.agent import CoderOptions, coder_app
from acpio.store import SessionStore
from acpio.testing import WirePeer, serving

TIMEOUT = 15


def options(tmp_path: Path, store: SessionStore | str = "memory:", **changes: Any) -> CoderOptions:
    """Options that touch nothing of the user's: settings, credentials and store under ``tmp_path``."""
    values: dict[str, Any] = {
        "store": store,
        "user_settings": tmp_path / "user-settings.toml",
        "credentials": tmp_path / "credentials.json",
        "offline": True,
        "environ": {},
    }
    values.update(changes)
    return CoderOptions(**values)


@dataclass
class Turn:
    """What a prompt turn showed on the wire."""

    answer: dict[str, Any]
    updates: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(
            u["content"]["text"] for u in self.updates if u["sessionUpdate"] == "agent_message_chunk"
        )

    @property
    def thoughts(self) -> str:
        return "".join(
            u["content"]["text"] for u in self.updates if u["sessionUpdate"] == "agent_thought_chunk"
        )

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [u for u in self.updates if u["sessionUpdate"] == kind]

    @property
    def stop_reason(self) -> str | None:
        return self.answer.get("result", {}).get("stopReason")


class Editor:
    """An editor: initializes, opens sessions, prompts, and answers permission and file requests."""

    def __init__(self, peer: WirePeer, *, permission: str = "allow") -> None:
        self.peer = peer
        self.permission = permission
        self.requests: list[dict[str, Any]] = []

    async def initialize(self, capabilities: dict[str, Any] | None = None) -> dict[str, Any]:
        params = {"protocolVersion": 1, "clientCapabilities": capabilities or {}}
        answer = await self.peer.response_to(self.peer.request("initialize", params))
        return dict(answer["result"])

    async def call(
        self, method: str, params: dict[str, Any], seen: list[Any] | None = None
    ) -> dict[str, Any]:
        return dict(await self.peer.response_to(self.peer.request(method, params), seen))

    async def new(self, cwd: Path, mcp: Sequence[dict[str, Any]] = (), **more: Any) -> dict[str, Any]:
        return await self.call("session/new", {"cwd": str(cwd), "mcpServers": list(mcp), **more})

    async def session(self, cwd: Path, mcp: Sequence[dict[str, Any]] = ()) -> str:
        created = await self.new(cwd, mcp)
        assert "result" in created, created
        return str(created["result"]["sessionId"])

    async def prompt(self, session: str, prompt: str | list[dict[str, Any]]) -> Turn:
        blocks = [{"type": "text", "text": prompt}] if isinstance(prompt, str) else prompt
        request_id = self.peer.request("session/prompt", {"sessionId": session, "prompt": blocks})
        turn = Turn({})
        while True:
            frame = await self.peer.recv()
            if "method" not in frame and frame.get("id") == request_id:
                turn.answer = frame
                return turn
            if frame.get("method") == "session/update":
                turn.updates.append(frame["params"]["update"])
            elif "id" in frame and "method" in frame:
                turn.requests.append(frame)
                self.answer(frame)

    def answer(self, request: dict[str, Any]) -> None:
        method, params = request["method"], request["params"]
        if method == "session/request_permission":
            wanted = "allow_once" if self.permission == "allow" else "reject_once"
            option = next(o for o in params["options"] if o["kind"] == wanted)
            outcome = {"outcome": "selected", "optionId": option["optionId"]}
            self.peer.respond(request, {"outcome": outcome})
        elif method == "fs/read_text_file":
            try:
                self.peer.respond(request, {"content": Path(params["path"]).read_text()})
            except OSError as exc:
                error = {"code": -32002, "message": f"cannot read {params['path']}: {exc.strerror}"}
                self.peer.send({"jsonrpc": "2.0", "id": request["id"], "error": error})
        elif method == "fs/write_text_file":
            Path(params["path"]).write_text(params["content"])
            self.peer.respond(request, {})
        else:
            self.peer.send(
                {"jsonrpc": "2.0", "id": request["id"], "error": {"code": -32601, "message": method}}
            )


FS = {"fs": {"readTextFile": True, "writeTextFile": True}}


@asynccontextmanager
async def editor(
    opts: CoderOptions, capabilities: dict[str, Any] | None = None, **kw: Any
) -> AsyncIterator[Editor]:
    """An initialized :class:`Editor` connected to a fresh agent in-process."""
    async with serving(coder_app(opts).builder(), timeout=TIMEOUT) as peer:
        client = Editor(peer, **kw)
        await client.initialize(capabilities if capabilities is not None else FS)
        yield client
