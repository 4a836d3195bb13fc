"""A griffe extension for ``make docs``: acpio's reST docstring markup, as mkdocstrings' Markdown.

acpio's docstrings use Sphinx roles (``:class:`~acpio.app.Turn```, ``:meth:`to_wire```) and ``::``
before a literal block. mkdocstrings renders docstrings as Markdown, where a role would show as
``:class:`` followed by code. This extension rewrites, when the package is loaded:

* each role into an autorefs cross-reference to ``Turn``'s full path, resolved as Python would
  read the name in that docstring: on the object, then its class, module and packages, then from
  the top (``acpio.``). The reference is *optional* (autorefs' own flag, which mkdocstrings puts on
  the references of signatures): it links when the target has a section in the reference, and is
  plain code otherwise (a private helper, an attribute without a docstring, one of the 230 schema
  models the reference does not list one by one), rather than failing ``--strict``. A short name
  that resolves to nothing in acpio (pydantic's, the standard library's) becomes plain code and is
  logged (``mkdocs build --verbose`` shows the list); a full ``acpio.`` path that names nothing,
  even once imported (the schema's models exist only then), is stale (the name moved or went
  away): a warning, which fails ``--strict``;
* ``Example::`` into ``Example:`` (the indented block after it is already a Markdown code block).

Configured in ``mkdocs.yml`` (``handlers.python.options.extensions``).
"""

from __future__ import annotations

import importlib
import logging
import re
from typing import Any

from griffe import Alias, Extension, Module, Object

_log = logging.getLogger("mkdocs.plugins.griffe_sphinx_roles")

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|attr|data|exc|mod|obj|const|type):`(?P<body>[^`]+)`")
_LITERAL = re.compile(r"(?<=\S)::$", re.M)  # "For example::" -> "For example:"


class SphinxRoles(Extension):
    """Rewrite the Sphinx roles of every docstring of the package into autorefs links."""

    def __init__(self) -> None:
        super().__init__()
        self.unresolved: list[str] = []
        #: Full ``acpio.`` paths that name nothing, even at run time: (target, where).
        self.stale: list[tuple[str, str]] = []

    def on_package(self, *, pkg: Module, **kwargs: Any) -> None:
        for obj in _walk(pkg):
            if obj.docstring is not None:
                obj.docstring.value = self._rewrite(obj, obj.docstring.value)
        for target, where in sorted(set(self.stale)):
            _log.warning(
                "The docstring of %s names %s, which does not exist: fix the reference", where, target
            )
        if self.unresolved:
            _log.info(
                "%d docstring references left as code (not documented here): %s",
                len(self.unresolved),
                ", ".join(sorted(set(self.unresolved))),
            )

    def _rewrite(self, obj: Object, text: str) -> str:
        def link(match: re.Match[str]) -> str:
            body = match.group("body").strip()
            if "<" in body and body.endswith(">"):  # :class:`title <target>`
                title, target = body[:-1].split("<", 1)
                title = title.strip()
            else:
                target = body.lstrip("~")
                title = target.rsplit(".", 1)[-1] if body.startswith("~") else target
            target = target.strip().removesuffix("()")
            found = _resolve(obj, target)
            if found is None:
                self.unresolved.append(f"{target} (in {obj.path})")
                if target.startswith(f"{_top(obj).name}.") and not _exists_at_run_time(target):
                    self.stale.append((target, obj.path))
                return f"`{title}`"
            return f'<autoref identifier="{found}" optional>`{title}`</autoref>'

        return _LITERAL.sub(":", _ROLE.sub(link, text))


def _walk(obj: Object) -> list[Object]:
    found = [obj]
    for member in obj.members.values():
        if isinstance(member, Alias):
            continue  # documented where it is defined
        found.extend(_walk(member))
    return found


def _top(obj: Object) -> Object:
    """The top-level package ``obj`` belongs to (``acpio``)."""
    while obj.parent is not None:
        obj = obj.parent
    return obj


def _resolve(obj: Object, target: str) -> str | None:
    """The path ``target`` names, read from inside ``obj``; ``None`` if it names nothing of acpio."""
    scopes: list[Object] = []
    scope: Object | None = obj
    while scope is not None:
        scopes.append(scope)
        scope = scope.parent
    top = scopes[-1]
    relative = target.removeprefix(f"{top.name}.")
    candidates: list[tuple[Object, str]] = [(s, target) for s in scopes]
    candidates.append((top, relative))
    for base, path in candidates:
        try:
            found = base[path]
        except (KeyError, ValueError, AttributeError):
            continue
        try:
            path = found.canonical_path if isinstance(found, Alias) and found.resolved else found.path
        except Exception:  # an alias to something outside acpio
            return None
        return path if path.startswith(f"{top.name}.") or path == top.name else None
    return None


def _exists_at_run_time(path: str) -> bool:
    """Whether ``path`` names something once imported (the schema's models exist only at run time)."""
    parts = path.split(".")
    for split in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False
