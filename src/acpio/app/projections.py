"""How a tool's call is shown to the user: its kind, its title, the files it touches, its diff.

A framework's tool call is a name and JSON arguments; an editor shows a diff for an edit, a path
for a read, a command for an execution. A :class:`Projections` registry says once, per tool name,
how its arguments map to that::

    from acpio.app.projections import Edit, Execute, Projections, Read

    projections = Projections()                      # the defaults: read_file, edit_file, bash...
    projections.declare("save_note", Edit(path="filename", text="body"))
    projections.declare("cat", Read(path="file"))
    projections.declare("sh", Execute(command="script"))

    async with projections.tool_call(turn, "save_note", {"filename": "a.md", "body": "hi"}) as call:
        ...                                          # the editor shows the diff of a.md
        await projections.show_output(call, "save_note", result)

An argument name may be a tuple of names, the first present taken (``path=("path", "file_path")``).
An :class:`Edit` reads the file's current text from disk, only inside the session's directory, to
show the change as a diff (``old_text`` ``None`` for a file that does not exist yet). A tool with
no declaration is shown by its name with the kind ``other``, and its output as text.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from acpio.app.tool_calls import ActiveToolCall, ToolKindName

if TYPE_CHECKING:
    from acpio.app.turn import Turn

__all__ = [
    "ArgumentName",
    "Delete",
    "Edit",
    "Execute",
    "Fetch",
    "Move",
    "Projection",
    "Projections",
    "Read",
    "Search",
    "Titled",
    "ToolView",
    "default_projections",
]

#: The name of the argument that holds a value, or several names (the first present is taken).
ArgumentName: TypeAlias = str | tuple[str, ...]

#: The most of a file an :class:`Edit` reads to show its diff, in bytes (a larger file shows no diff).
MAX_DIFF_BYTES = 1_000_000


@dataclass(frozen=True)
class ToolView:
    """A tool call as the editor shows it: what :meth:`Projections.view` gives for a name and arguments."""

    #: The title the user sees ("Edit notes.md", "Run `pytest`").
    title: str
    #: The ACP kind (``read``, ``edit``, ``execute``...), which picks the editor's icon and layout.
    kind: ToolKindName
    #: The absolute paths the call touches (the editor can follow them).
    locations: tuple[Path, ...] = ()
    #: ``(path, old_text, new_text)`` for an edit (``old_text`` ``None`` for a new file).
    diff: tuple[Path, str | None, str] | None = None
    #: The command line of an execution.
    command: str | None = None


class Projection:
    """How one tool's arguments are shown: the base of :class:`Edit`, :class:`Read`, :class:`Execute`...

    A projection of one's own subclasses it and overrides :meth:`view` (and :meth:`output`).
    """

    def view(self, name: str, arguments: Mapping[str, Any], root: Path) -> ToolView:
        """The call of the tool ``name`` with ``arguments``, in a session whose directory is ``root``."""
        return ToolView(title=name, kind="other")

    def output(self, text: str) -> str | None:
        """What of the tool's output ``text`` the call shows as its content (``None``: nothing)."""
        return text or None


def _argument(arguments: Mapping[str, Any], name: ArgumentName | None) -> Any:
    for key in (name,) if isinstance(name, str) else name or ():
        if key in arguments:
            return arguments[key]
    return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return "; ".join(str(v) for v in value)
    return value if isinstance(value, str) else json.dumps(value)


def _inside(root: Path, raw: Any) -> Path | None:
    """``raw`` as an absolute path when it is a path inside ``root``, else ``None``."""
    if not isinstance(raw, str) or not raw:
        return None
    path = (root / raw).resolve()
    return path if path.is_relative_to(root.resolve()) else None


def _current_text(path: Path) -> str | None:
    """The file's text, ``None`` when it does not exist (or is no text we can show)."""
    try:
        if path.stat().st_size > MAX_DIFF_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


@dataclass(frozen=True)
class Titled(Projection):
    """A tool shown with a ``title`` and a ``kind`` only (``think`` for a planning tool, say).

    ``title`` is formatted with the arguments (``"Plan {goal}"``); a missing one leaves the
    tool's name as the title.
    """

    title: str
    kind: ToolKindName = "other"

    def view(self, name: str, arguments: Mapping[str, Any], root: Path) -> ToolView:
        """The call titled by :attr:`title`, of :attr:`kind`."""
        try:
            title = self.title.format_map(arguments)
        except (KeyError, IndexError, ValueError):
            title = name
        return ToolView(title=title, kind=self.kind)


@dataclass(frozen=True)
class Edit(Projection):
    """A tool that changes a file: shown as a diff of the file at the argument ``path``.

    The new text is either the whole file (``text``, for a write) or the file's text with the
    argument ``old`` replaced by ``new`` (a search-and-replace edit; every occurrence when the
    argument ``replace_all`` is true, else the first).
    """

    path: ArgumentName = ("path", "file_path", "filename")
    text: ArgumentName | None = ("content", "text", "contents")
    old: ArgumentName | None = ("old_string", "old_text", "old_str")
    new: ArgumentName | None = ("new_string", "new_text", "new_str")
    replace_all: ArgumentName | None = "replace_all"

    def view(self, name: str, arguments: Mapping[str, Any], root: Path) -> ToolView:
        """``Edit PATH``, kind ``edit``, with the diff when the new text can be told."""
        raw = _argument(arguments, self.path)
        path = _inside(root, raw)
        title = f"Edit {raw}" if raw else name
        if path is None:
            return ToolView(title=title, kind="edit")
        old_text = _current_text(path)
        new_text = self._new_text(arguments, old_text)
        diff = (path, old_text, new_text) if new_text is not None else None
        return ToolView(title=title, kind="edit", locations=(path,), diff=diff)

    def _new_text(self, arguments: Mapping[str, Any], current: str | None) -> str | None:
        whole = _argument(arguments, self.text)
        if isinstance(whole, str):
            return whole
        old, new = _argument(arguments, self.old), _argument(arguments, self.new)
        if not isinstance(old, str) or not isinstance(new, str) or current is None or old not in current:
            return None
        return current.replace(old, new, -1 if _argument(arguments, self.replace_all) is True else 1)

    def output(self, text: str) -> str | None:
        """Nothing: the diff shows the change."""
        return None


@dataclass(frozen=True)
class Read(Projection):
    """A tool that reads the file (or lists the directory) at the argument ``path``."""

    path: ArgumentName = ("path", "file_path", "filename", "dir_path")

    def view(self, name: str, arguments: Mapping[str, Any], root: Path) -> ToolView:
        """``Read PATH``, kind ``read``, at that location."""
        raw = _argument(arguments, self.path)
        path = _inside(root, raw)
        return ToolView(title=f"Read {raw}" if raw else name, kind="read", locations=(path,) if path else ())

    def output(self, text: str) -> str | None:
        """Nothing: the file is the user's already."""
        return None


@dataclass(frozen=True)
class Delete(Projection):
    """A tool that deletes the file at the argument ``path``."""

    path: ArgumentName = ("path", "file_path", "filename")

    def view(self, name: str, arguments: Mapping[str, Any], root: Path) -> ToolView:
        """``Delete PATH``, kind ``delete``."""
        raw = _argument(arguments, self.path)
        path = _inside(root, raw)
        return ToolView(
            title=f"Delete {raw}" if raw else name, kind="delete", locations=(path,) if path else ()
        )


@dataclass(frozen=True)
class Move(Projection):
    """A tool that moves (renames) the file at ``source`` to ``destination``."""

    source: ArgumentName = ("source", "source_path", "src")
    destination: ArgumentName = ("destination", "destination_path", "dst", "target")

    def view(self, name: str, arguments: Mapping[str, Any], root: Path) -> ToolView:
        """``Move SOURCE to DESTINATION``, kind ``move``, at both."""
        source, destination = _argument(arguments, self.source), _argument(arguments, self.destination)
        paths = tuple(p for p in (_inside(root, source), _inside(root, destination)) if p is not None)
        title = f"Move {source} to {destination}" if source and destination else name
        return ToolView(title=title, kind="move", locations=paths)


@dataclass(frozen=True)
class Execute(Projection):
    """A tool that runs the command line in the argument ``command`` (a list is shown joined by ``; ``).

    Its output is shown as a console block.
    """

    command: ArgumentName = ("command", "commands", "cmd", "script")

    def view(self, name: str, arguments: Mapping[str, Any], root: Path) -> ToolView:
        """``Run `COMMAND```, kind ``execute``."""
        command = _text(_argument(arguments, self.command))
        title = f"Run `{command}`" if command else name
        return ToolView(title=title, kind="execute", command=command)

    def output(self, text: str) -> str | None:
        """The output in a fenced console block."""
        return f"```console\n{text.rstrip()}\n```" if text else None


@dataclass(frozen=True)
class Fetch(Projection):
    """A tool that fetches the URL in the argument ``url``."""

    url: ArgumentName = ("url", "uri", "urls")

    def view(self, name: str, arguments: Mapping[str, Any], root: Path) -> ToolView:
        """``Fetch URL``, kind ``fetch``."""
        url = _text(_argument(arguments, self.url))
        return ToolView(title=f"Fetch {url}" if url else name, kind="fetch")


@dataclass(frozen=True)
class Search(Projection):
    """A tool that searches for the argument ``query`` (files, code, the web), under ``path`` if given."""

    query: ArgumentName = ("query", "pattern", "queries", "q", "search_query")
    path: ArgumentName | None = ("path", "dir_path", "directory")

    def view(self, name: str, arguments: Mapping[str, Any], root: Path) -> ToolView:
        """``Search QUERY``, kind ``search``."""
        query = _text(_argument(arguments, self.query))
        path = _inside(root, _argument(arguments, self.path))
        return ToolView(
            title=f"Search {query}" if query else name, kind="search", locations=(path,) if path else ()
        )


_DEFAULTS: dict[str, Projection] = {
    # files: the common names, LangChain's file management tools, DeepAgents' and acpio agent's
    **dict.fromkeys(("read_file", "read", "view", "cat", "ls", "list_directory", "list_dir"), Read()),
    **dict.fromkeys(
        ("write_file", "create_file", "edit_file", "edit", "write", "str_replace", "str_replace_editor"),
        Edit(),
    ),
    **dict.fromkeys(("delete_file", "file_delete", "remove_file"), Delete()),
    **dict.fromkeys(("move_file", "rename_file"), Move()),
    # commands: the Agents SDK's hosted shells, LangChain's ShellTool (``terminal``), DeepAgents' ``execute``
    **dict.fromkeys(
        ("bash", "shell", "local_shell", "terminal", "execute", "run_command", "run_shell_command"), Execute()
    ),
    "code_interpreter": Execute(command=("code", "command")),
    # the web and the code base: hosted search, Tavily, DuckDuckGo, requests
    **dict.fromkeys(("fetch", "web_fetch", "fetch_url", "requests_get", "http_get"), Fetch()),
    **dict.fromkeys(
        (
            "web_search",
            "web_search_preview",
            "file_search",
            "tool_search",
            "search",
            "grep",
            "glob",
            "tavily_search",
            "tavily_search_results_json",
            "duckduckgo_search",
        ),
        Search(),
    ),
    # planning: DeepAgents' and acpio agent's todo lists
    "write_todos": Titled("Update the plan", "think"),
    "update_plan": Titled("Update the plan", "think"),
    "image_generation": Titled("Generate an image"),
    "computer_use_preview": Titled("Use the computer"),
}


class Projections:
    """A registry of tool names and their :class:`Projection`: how each tool's call is shown.

    ``Projections()`` starts with the defaults (:func:`default_projections` lists them: common
    file, shell, fetch and search tool names, the OpenAI Agents SDK's hosted tools, LangChain's
    and DeepAgents' tools); ``Projections(defaults=False)`` with none. :meth:`declare` adds or
    replaces one.
    """

    def __init__(self, declared: Mapping[str, Projection] | None = None, *, defaults: bool = True) -> None:
        self._by_name: dict[str, Projection] = dict(_DEFAULTS) if defaults else {}
        self._by_name.update(declared or {})

    def __repr__(self) -> str:
        return f"<Projections of {len(self._by_name)} tools>"

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def declare(self, name: str, projection: Projection) -> None:
        """Show the calls of the tool ``name`` with ``projection`` (replacing a default)."""
        if not isinstance(projection, Projection):
            raise TypeError(
                f"declare({name!r}, ...) takes a Projection (Edit(), Read(), Execute(), Titled(...)...), "
                f"not {type(projection).__name__}"
            )
        self._by_name[name] = projection

    def get(self, name: str) -> Projection:
        """The projection of ``name``: its declaration, else the plain one (its name, kind ``other``)."""
        return self._by_name.get(name, _PLAIN)

    def view(self, name: str, arguments: Mapping[str, Any] | str | None, root: Path) -> ToolView:
        """How a call of ``name`` with ``arguments`` (a mapping, or its JSON text) is shown under ``root``."""
        return self.get(name).view(name, _as_mapping(arguments), root)

    def tool_call(
        self,
        turn: Turn,
        name: str,
        arguments: Mapping[str, Any] | str | None,
        *,
        meta: Mapping[str, Any] | None = None,
    ) -> AbstractAsyncContextManager[ActiveToolCall]:
        """:meth:`Turn.tool_call <acpio.app.Turn.tool_call>` for a call of ``name``, shown by its projection.

        ``async with projections.tool_call(turn, name, arguments) as call:`` reports the call with
        its title, kind, locations and raw input, then its diff if it has one; leaving the block
        ends it as :meth:`Turn.tool_call <acpio.app.Turn.tool_call>` does.
        """
        return self._open(turn, name, _as_mapping(arguments), meta)

    @asynccontextmanager
    async def _open(
        self, turn: Turn, name: str, arguments: Mapping[str, Any], meta: Mapping[str, Any] | None
    ) -> AsyncIterator[ActiveToolCall]:
        view = self.view(name, arguments, turn.cwd)
        async with turn.tool_call(
            view.title, kind=view.kind, locations=view.locations, raw_input=dict(arguments), meta=meta
        ) as call:
            if view.diff is not None:
                await call.update(diff=view.diff)
            yield call

    async def show_output(
        self, call: ActiveToolCall, name: str, output: str, *, failed: bool = False
    ) -> None:
        """End ``call`` (of the tool ``name``) with its ``output``: ``completed``, or ``failed``.

        The content shown is what the tool's projection keeps of the output (a console block for
        an execution, nothing for an edit or a read), or all of it when the call failed;
        ``rawOutput`` is the whole output.
        """
        shown = output if failed else self.get(name).output(output)
        await call.update(status="failed" if failed else "completed", text=shown, raw_output=output)


_PLAIN = Projection()


def _as_mapping(arguments: Mapping[str, Any] | str | None) -> Mapping[str, Any]:
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return {"input": arguments}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return arguments


def default_projections() -> dict[str, Projection]:
    """The tool names :class:`Projections` knows without a declaration, and how each is shown."""
    return dict(_DEFAULTS)
