"""The handshake answers written from the raw params are the bytes the typed path writes.

Each app is served twice on a real in-process channel: once with the params as clients send them
(camelCase: the raw answer), once with the same params in snake_case, which the models accept and
the raw answer leaves to the typed handler (the models, as before). The frames must be the same
bytes (session ids aside); ``tests/app/test_app_startup.py`` shows the raw answers import no pydantic.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acpio import schema as acp
from acpio.app import AgentApp, AppSession, Turn
from acpio.testing import serving

from ._wire import typed_only

WIRE = {"version": "protocolVersion", "servers": "mcpServers", "session": "sessionId", "mode": "modeId"}
SNAKE = {"version": "protocol_version", "servers": "mcp_servers", "session": "session_id", "mode": "mode_id"}
BOOLEANS: dict[str, Any] = {"fs": {"readTextFile": True}, "session": {"configOptions": {"boolean": {}}}}


async def _prompt(turn: Turn) -> None:
    await turn.say("hi")


def bare() -> AgentApp:
    return AgentApp("bare")


def described() -> AgentApp:
    capabilities = acp.PromptCapabilities(image=True, embedded_context=True, meta={"k": [1, None, "\u2028"]})
    return AgentApp(
        'ünï "côde"\u2028',
        version="2.0.1-β",
        title="Tïtle\n\t<x>",
        prompt_capabilities=capabilities,
        mcp=True,
    )


def with_modes() -> AgentApp:
    app = AgentApp("modes")
    app.mode("ask", "Ask", description="Asks before it edits")
    app.mode("code", 'Code "fast"')
    app.mode("quiet", "Quiet", description="")
    return app


def with_options() -> AgentApp:
    app = with_modes()
    app.select_option(
        "model", "Model", {"small": "Small", "big": "Big ✓"}, default="big", description="d", category="model"
    )
    app.select_option("effort", "Effort", {"low": "Low"}, default="low", description="")
    app.boolean_option("web", "Web search", default=True, description="Searches the web")
    app.boolean_option("plain", "Plain", default=False)
    return app


def with_initialize_hook() -> AgentApp:
    app = with_modes()

    @app.on_initialize
    async def auth(request: acp.InitializeRequest, answer: acp.InitializeResponse) -> None:
        answer.auth_methods = [acp.AuthMethodAgent(id="login", name="Log in")]

    return app


def with_open_hook() -> AgentApp:
    app = with_options()

    @app.on_open
    async def offer(session: AppSession) -> None:
        session.offer_modes([acp.SessionMode(id="code", name="Code only")])
        session.offer_choices("model", {"tiny": "Tiny"})

    return app


APPS: dict[str, Callable[[], AgentApp]] = {
    "bare": bare,
    "described": described,
    "modes": with_modes,
    "modes and options": with_options,
    "an initialize hook (typed both times)": with_initialize_hook,
    "an open hook offering its own modes and choices (models both times)": with_open_hook,
}


async def handshake(
    app: AgentApp, cwd: Path, capabilities: dict[str, Any] | None, keys: dict[str, str]
) -> list[bytes]:
    """The answers to ``initialize``, ``session/new`` and (with modes) ``session/set_mode``, as bytes."""
    app.prompt(_prompt)
    initialize: dict[str, Any] = {keys["version"]: 1}
    if capabilities is not None:
        initialize["clientCapabilities"] = capabilities
    async with serving(app.builder()) as peer:
        peer.request("initialize", initialize)
        frames = [await peer.recv_raw()]
        peer.request("session/new", {"cwd": str(cwd), keys["servers"]: []})
        frames.append(await peer.recv_raw())
        session_id = orjson.loads(frames[-1] or b"{}")["result"]["sessionId"]
        if app.sessions[0].settings.mode is not None:
            peer.request("session/set_mode", {keys["session"]: session_id, keys["mode"]: "code"})
            frames.append(await peer.recv_raw())
    return [(frame or b"").replace(session_id.encode(), b"SESSION") for frame in frames]


@pytest.mark.parametrize("capabilities", [None, BOOLEANS], ids=["no capabilities", "boolean options"])
@pytest.mark.parametrize("make", APPS.values(), ids=APPS.keys())
async def test_the_handshake_answers_are_the_bytes_of_the_typed_path(
    make: Callable[[], AgentApp], capabilities: dict[str, Any] | None, tmp_path: Path
) -> None:
    raw = await handshake(make(), tmp_path, capabilities, WIRE)
    typed = await handshake(make(), tmp_path, capabilities, SNAKE)
    assert raw == typed
    assert all(b'"result"' in frame for frame in raw), raw


async def test_the_answers_say_what_the_app_declared(tmp_path: Path) -> None:
    initialize, new, set_mode = [
        orjson.loads(f)["result"] for f in await handshake(with_options(), tmp_path, BOOLEANS, WIRE)
    ]
    assert initialize == {
        "protocolVersion": 1,
        "agentCapabilities": {"promptCapabilities": {}},
        "agentInfo": {"name": "modes", "version": "0.1.0"},
    }
    assert new["modes"] == {
        "currentModeId": "ask",
        "availableModes": [
            {"id": "ask", "name": "Ask", "description": "Asks before it edits"},
            {"id": "code", "name": 'Code "fast"'},
            {"id": "quiet", "name": "Quiet", "description": ""},
        ],
    }
    assert [(o["id"], o["type"], o["currentValue"]) for o in new["configOptions"]] == [
        ("model", "select", "big"),
        ("effort", "select", "low"),
        ("web", "boolean", True),
        ("plain", "boolean", False),
    ]
    assert set_mode == {}
    hooked = [
        orjson.loads(f)["result"] for f in await handshake(with_initialize_hook(), tmp_path, None, WIRE)
    ]
    assert hooked[0]["authMethods"] == [{"id": "login", "name": "Log in"}]
    offered = [orjson.loads(f)["result"] for f in await handshake(with_open_hook(), tmp_path, None, WIRE)]
    assert offered[1]["modes"] == {
        "currentModeId": "code",
        "availableModes": [{"id": "code", "name": "Code only"}],
    }


BAD = [
    ("initialize", {}),
    ("initialize", {"protocolVersion": "1"}),
    ("initialize", {"protocolVersion": 70000}),
    ("initialize", {"protocolVersion": True}),
    ("initialize", [1]),
    ("session/new", {"cwd": 5, "mcpServers": []}),
    ("session/new", {"cwd": "/tmp"}),
    ("session/new", {"cwd": "/tmp", "mcpServers": [{"name": "x"}]}),
    ("session/new", {"cwd": "/tmp", "mcpServers": [], "additionalDirectories": [1]}),
    ("session/new", {"cwd": "relative/dir", "mcpServers": []}),
    ("session/set_mode", {"sessionId": "s", "modeId": 3}),
    ("session/set_mode", {"sessionId": "unknown", "modeId": "code"}),
]


@pytest.mark.parametrize(("method", "params"), BAD, ids=[f"{m} {p}" for m, p in BAD])
async def test_params_that_are_not_plainly_well_formed_get_the_typed_paths_error(
    method: str, params: Any, tmp_path: Path
) -> None:
    app = with_modes()
    app.prompt(_prompt)
    async with serving(app.builder()) as peer:
        if method != "initialize":
            peer.request("initialize", {"protocolVersion": 1})
            await peer.response_to(1)
        asked = peer.request(method, params)
        answer = await peer.response_to(asked)
    error = answer["error"]
    if "unknown" in str(params):
        assert error["code"] == -32002  # no such session, as the typed handler says
    elif "relative" in str(params):
        assert error["code"] == -32602
        assert error["data"] == {"cwd": "relative/dir", "reason": "cwd must be an absolute path"}
    else:
        assert error["code"] == -32602
        assert error["data"]["method"] == method  # the validation errors of the typed handler
        assert error["data"]["errors"]


async def test_user_code_reads_the_same_session_values_either_way(tmp_path: Path) -> None:
    seen: list[tuple[Any, ...]] = []

    def make() -> AgentApp:
        app = with_options()

        @app.on_open
        async def record(session: AppSession) -> None:
            seen.append(
                (
                    session.cwd,
                    session.mcp_servers,
                    session.additional_directories,
                    session.client.boolean_config_options,
                    session.client.read_text_file,
                    session.settings.mode,
                    dict(session.settings.options),
                    getattr(session.cx, "protocol_version", None),  # recorded from the answer
                )
            )

        return app

    for keys in (WIRE, SNAKE):
        app = make()
        app.prompt(_prompt)
        async with serving(app.builder()) as peer:
            peer.request("initialize", {keys["version"]: 1, "clientCapabilities": BOOLEANS})
            await peer.response_to(1)
            extra = {"additionalDirectories": [str(tmp_path / "lib")], "_meta": {"x": 1}}
            asked = peer.request("session/new", {"cwd": str(tmp_path), keys["servers"]: None, **extra})
            assert "result" in await peer.response_to(asked)
    assert len(seen) == 2
    assert seen[0] == seen[1]
    assert seen[0][:5] == (tmp_path, (), (tmp_path / "lib",), True, True)
    assert seen[0][-1] == 1


async def test_the_commands_go_out_after_the_answer_as_the_bytes_of_their_models(tmp_path: Path) -> None:
    app = with_modes()
    app.command("review", "Review the diff")
    app.command("/fix", 'Fix "it" ✓\u2028', hint="the file")
    app.prompt(_prompt)
    async with serving(app.builder()) as peer:
        peer.request("initialize", {"protocolVersion": 1})
        await peer.response_to(1)
        peer.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session_id = orjson.loads(await peer.recv_raw() or b"{}")["result"]["sessionId"]
        frame = await peer.recv_raw()
    commands = [
        acp.AvailableCommand(name="review", description="Review the diff", input=None),
        acp.AvailableCommand(
            name="fix", description='Fix "it" ✓\u2028', input=acp.UnstructuredCommandInput(hint="the file")
        ),
    ]
    update = acp.AvailableCommandsUpdate(available_commands=commands)
    params = acp.SessionNotification(session_id=session_id, update=update).to_wire_json()
    assert frame == b'{"jsonrpc":"2.0","method":"session/update","params":' + params + b"}"


# --- any params: the raw answers against the typed path's ----------------------------------------

versions = st.one_of(
    st.integers(min_value=-3, max_value=4),
    st.sampled_from([65535, 65536, 2**40, 1.0, 2.5, True, False, "1", None, [1], {"v": 1}]),
)
#: Values where the schema has an object, a bool, a string or a list: right, wrong, null.
odd = st.sampled_from([None, 5, "x", True, [], {}, {"_meta": {"k": 1}}, {"unknown": [1]}])
capabilities = st.one_of(
    odd,
    st.fixed_dictionaries(
        {},
        optional={
            "fs": st.one_of(odd, st.fixed_dictionaries({}, optional={"readTextFile": st.booleans() | odd})),
            "terminal": st.booleans() | odd,
            "session": st.one_of(odd, st.just({"configOptions": {"boolean": {}}})),
            "_meta": odd,
        },
    ),
)
servers = st.sampled_from(
    [
        {"name": "local", "command": "/bin/srv", "args": ["-v"], "env": [{"name": "A", "value": "1"}]},
        {"name": "local", "command": "srv", "args": [], "env": []},  # a relative command
        {
            "type": "http",
            "name": "web",
            "url": "https://example.com/mcp",
            "headers": [{"name": "H", "value": "v"}],
        },
        {"type": "sse", "name": "events", "url": "https://example.com/sse", "headers": []},
        {"type": "ftp", "name": "unknown"},
        {"name": "no command"},
        5,
    ]
)
directories = st.one_of(
    odd, st.lists(st.sampled_from(["/tmp/lib", "relative/lib", "", 5, None, "/tmp/ü \u2028"]), max_size=2)
)
extra = st.fixed_dictionaries({}, optional={"_meta": odd, "unknown": odd})


@st.composite
def handshakes(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """The params of ``initialize``, ``session/new`` and ``session/set_mode``, as a client may send them."""
    initialize = {**draw(extra), "protocolVersion": draw(versions)}
    for key, value in (("clientCapabilities", capabilities), ("clientInfo", odd)):
        if draw(st.booleans()):
            initialize[key] = draw(value)
    new: dict[str, Any] = {
        **draw(extra),
        "cwd": draw(st.sampled_from(["/tmp/work", "/", "rel/dir", "", 5, None])),
    }
    if draw(st.integers(0, 3)):
        new["mcpServers"] = draw(st.one_of(st.just([]), st.none(), st.lists(servers, max_size=2), odd))
    if draw(st.booleans()):
        new["additionalDirectories"] = draw(directories)
    if draw(st.integers(0, 5)) == 0:
        new = draw(st.sampled_from([[], None]))  # params that are no object  # type: ignore[arg-type]
    mode = {
        **draw(extra),
        "sessionId": draw(st.sampled_from(["SESSION", "unknown", 5])),
        "modeId": draw(st.sampled_from(["code", "ask", "nope", 3, None])),
    }
    return [("initialize", initialize), ("session/new", new), ("session/set_mode", mode)]


async def answers(
    steps: list[tuple[str, Any]], protocols: tuple[int, ...], store: str | None = None
) -> tuple[list[bytes], list[Any]]:
    """A fresh app's answers to ``steps`` (``SESSION``: the session it opened), and what its hook saw."""
    seen: list[Any] = []
    app = AgentApp("props", protocols=protocols, store=store)  # type: ignore[arg-type]
    app.mode("ask", "Ask")
    app.mode("code", "Code")
    app.boolean_option("web", "Web", default=True)
    app.prompt(_prompt)

    @app.on_open
    async def record(session: AppSession) -> None:
        client = session.client
        version = getattr(session.cx, "protocol_version", None)  # recorded from the answer
        features = (client.read_text_file, client.terminal, client.boolean_config_options, version)
        seen.append((session.cwd, session.mcp_servers, session.additional_directories, features))

    frames: list[bytes] = []
    session_id = "SESSION"
    async with serving(app.component()) as peer:  # type: ignore[arg-type]
        for method, params in steps:
            if isinstance(params, dict) and params.get("sessionId") == "SESSION":
                params = {**params, "sessionId": session_id}
            asked = peer.request(method, params)
            frame = orjson.dumps(await peer.response_to(asked))
            opened = orjson.loads(frame).get("result") or {}
            if method == "session/new" and isinstance(opened.get("sessionId"), str):
                session_id = opened["sessionId"]
            frames.append(frame.replace(session_id.encode(), b"SESSION"))
    return frames, seen


@settings(max_examples=40, deadline=None)
@given(
    steps=handshakes(),
    protocols=st.sampled_from([(1,), (1,), (1, 2)]),
    store=st.sampled_from([None, None, "memory:"]),
)
def test_any_handshake_gets_the_answers_of_the_typed_path(
    steps: list[tuple[str, Any]], protocols: tuple[int, ...], store: str | None
) -> None:
    raw = asyncio.run(answers(steps, protocols, store))
    with typed_only():
        typed = asyncio.run(answers(steps, protocols, store))
    assert raw == typed


def stored_app(store: str, kind: str) -> AgentApp:
    """An app keeping its sessions in ``store``: ``bare``, ``declared`` (options, MCP, prompt
    capabilities), or ``offered`` (declared, and its ``on_open`` hook offers modes and choices)."""
    if kind == "bare":
        return AgentApp("stored", store=store)
    capabilities = acp.PromptCapabilities(image=True, meta={"k": "\u2028"})
    app = AgentApp("stored", title="Stored", prompt_capabilities=capabilities, mcp=True, store=store)
    app.mode("ask", "Ask")
    app.mode("code", "Code")
    app.boolean_option("web", "Web search", default=True)
    app.select_option("model", "Model", {"small": "Small", "big": "Big"}, default="big")
    if kind == "offered":

        @app.on_open
        async def offer(session: AppSession) -> None:
            session.offer_modes([acp.SessionMode(id="code", name="Code only")])
            session.offer_choices("model", {"tiny": "Tiny"})

    return app


@pytest.mark.parametrize("kind", ["bare", "declared", "offered"])
@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_an_app_with_a_store_answers_with_the_bytes_of_the_typed_path(
    store: str, kind: str, tmp_path: Path
) -> None:
    """Its ``initialize`` is written without models too, with the store's capabilities and hint; its
    ``session/new`` too, unless a hook offered the session modes or choices of its own."""
    answers = {}
    for name, keys in (("raw", WIRE), ("typed", SNAKE)):
        url = "memory:" if store == "memory" else f"sqlite:///{tmp_path / name}.db"
        answers[name] = await handshake(stored_app(url, kind), tmp_path, BOOLEANS, keys)
    assert answers["raw"] == answers["typed"]
    capabilities = orjson.loads(answers["raw"][0])["result"]["agentCapabilities"]
    assert capabilities["loadSession"] is True
    assert set(capabilities["sessionCapabilities"]) == {"list", "delete", "resume", "close"}
    assert ("_meta" in capabilities) == (store == "memory")  # its sessions end with the process
    if kind == "offered":
        new = orjson.loads(answers["raw"][1])["result"]
        assert new["modes"] == {
            "currentModeId": "code",
            "availableModes": [{"id": "code", "name": "Code only"}],
        }
        model = next(o for o in new["configOptions"] if o["id"] == "model")
        assert model["options"] == [{"value": "tiny", "name": "Tiny"}]


#: Text an app may declare: any, the empty string, and what JSON writers escape.
declared = st.one_of(st.text(max_size=12), st.sampled_from(["", 'q "x" \\', "\u2028\ufeff\x00", "é 漢 😀"]))


@st.composite
def menus(draw: st.DrawFn) -> tuple[Callable[[], AgentApp], bool]:
    """How to make an app declaring modes, select and boolean options, and commands of any text.

    And whether it declares commands (sent after the ``session/new`` answer).
    """
    info = (draw(declared) or "app", draw(declared) or "1", draw(st.none() | declared))
    maybe = st.none() | declared
    modes = [
        (mode_id, draw(declared), draw(maybe))
        for mode_id in draw(st.lists(declared, unique=True, max_size=3))
    ]
    options: list[tuple[Any, ...]] = []
    for option_id in draw(st.lists(declared, unique=True, max_size=3)):
        if draw(st.booleans()):
            choices = draw(st.dictionaries(declared, declared, min_size=1, max_size=3))
            default = draw(st.sampled_from(sorted(choices)))
            options.append((option_id, draw(declared), choices, default, draw(maybe), draw(maybe)))
        else:
            options.append((option_id, draw(declared), draw(st.booleans()), draw(maybe)))
    words = st.text(
        st.characters(blacklist_categories=("Z", "Cc", "Cs"), blacklist_characters="/"), min_size=1
    )
    names = draw(st.lists(words, unique=True, max_size=2))
    commands = [(name, draw(declared), draw(maybe)) for name in names]

    def make() -> AgentApp:
        name, version, title = info
        app = AgentApp(name, version=version, title=title)
        for mode_id, mode_name, description in modes:
            app.mode(mode_id, mode_name, description=description)
        for option in options:
            if len(option) == 6:
                option_id, label, choices, default, description, category = option
                app.select_option(
                    option_id, label, choices, default=default, description=description, category=category
                )
            else:
                option_id, label, default, description = option
                app.boolean_option(option_id, label, default=default, description=description)
        for command, description, hint in commands:
            app.command(command, description, hint=hint)
        app.prompt(_prompt)
        return app

    return make, bool(commands)


async def setup_frames(app: AgentApp, capabilities: dict[str, Any], commands: bool) -> list[bytes]:
    """The answers to ``initialize``, ``session/new`` and ``session/set_mode``, and the commands sent."""
    async with serving(app.builder()) as peer:
        peer.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        frames = [await peer.recv_raw() or b""]
        peer.request("session/new", {"cwd": "/tmp", "mcpServers": []})
        frames.append(await peer.recv_raw() or b"")
        [session] = app.sessions
        if commands:
            frames.append(await peer.recv_raw() or b"")
        if session.settings.mode is not None:
            peer.request("session/set_mode", {"sessionId": session.id, "modeId": session.settings.mode})
            frames.append(await peer.recv_raw() or b"")
    return [frame.replace(session.id.encode(), b"SESSION") for frame in frames]


@settings(max_examples=40, deadline=None)
@given(menu=menus(), booleans=st.booleans())
def test_any_declared_menu_is_answered_with_the_bytes_of_the_typed_path(
    menu: tuple[Callable[[], AgentApp], bool], booleans: bool
) -> None:
    make, commands = menu
    capabilities = BOOLEANS if booleans else {}
    raw = asyncio.run(setup_frames(make(), capabilities, commands))
    with typed_only():
        typed = asyncio.run(setup_frames(make(), capabilities, commands))
    assert raw == typed
    assert all(b'"error"' not in frame for frame in raw), raw
