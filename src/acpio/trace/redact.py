r"""What a cassette hides before it is written: secrets, and the paths of the machine that recorded it.

A :class:`Redaction` rewrites every string of a message (keys are left alone):

* **secrets** matching its patterns (API keys of the common providers, GitHub, Slack and AWS
  tokens, JSON Web Tokens, ``Bearer`` credentials) become ``<redacted:KIND>``;
* the value of a field whose name says it holds a secret (``apiKey``, ``token``, ``password``,
  ``authorization``...), and the ``value`` of an environment variable ``{"name": ..., "value": ...}``
  whose name says so (``OPENAI_API_KEY``), become ``<redacted>``;
* **paths**: the session's working directory becomes ``<cwd>`` and the home directory ``<home>``
  (longest first, whole path components only). A replay puts its own directories back in their
  place (:func:`restore_paths`), so a cassette recorded in ``/home/ann/project`` replays in a
  test's temporary directory.

>>> redaction = Redaction(paths={"<cwd>": "/home/ann/project", "<home>": "/home/ann"})
>>> redaction.apply({"path": "/home/ann/project/a.txt", "note": "key sk-abcdefghijklmnopqrstuv"})
{'path': '<cwd>/a.txt', 'note': 'key <redacted:api-key>'}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

__all__ = ["DEFAULT_SECRET_PATTERNS", "SECRET_FIELDS", "Redaction", "restore_paths"]

#: ``(regular expression, replacement)``: the secrets every cassette hides unless told otherwise.
DEFAULT_SECRET_PATTERNS: Final[tuple[tuple[str, str], ...]] = (
    (r"\bsk-(?:ant-|proj-|or-)?[A-Za-z0-9_-]{16,}", "<redacted:api-key>"),
    (r"\bAIza[0-9A-Za-z_-]{30,}", "<redacted:api-key>"),
    (r"\bgh[pousr]_[A-Za-z0-9]{20,}", "<redacted:token>"),
    (r"\bgithub_pat_[A-Za-z0-9_]{20,}", "<redacted:token>"),
    (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", "<redacted:token>"),
    (r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", "<redacted:aws-key>"),
    (r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", "<redacted:jwt>"),
    (r"(?i)\bbearer\s+[A-Za-z0-9._~+/-]{8,}=*", "Bearer <redacted:token>"),
)

#: Words that make a field (or an environment variable) a secret when its name contains one.
SECRET_FIELDS: Final[tuple[str, ...]] = (
    "apikey",
    "api_key",
    "token",
    "secret",
    "password",
    "passwd",
    "authorization",
    "credential",
    "cookie",
)

_PATH_END = r"(?=$|[/\\\s\"'`:;,)\]}>])"


def _is_secret_name(name: str) -> bool:
    lowered = name.lower().replace("-", "_")
    return any(word in lowered or word in lowered.replace("_", "") for word in SECRET_FIELDS)


@dataclass(frozen=True)
class Redaction:
    """How a cassette's messages are rewritten before they are written (see the module docstring).

    ``patterns`` are the secret patterns, ``(regex, replacement)`` (default
    :data:`DEFAULT_SECRET_PATTERNS`; add your own with :meth:`with_patterns`); ``paths`` maps a
    placeholder to the local path it stands for; ``secret_fields`` says whether fields named like
    secrets are blanked.
    """

    paths: Mapping[str, str] = field(default_factory=dict)
    patterns: Sequence[tuple[str, str]] = DEFAULT_SECRET_PATTERNS
    secret_fields: bool = True
    _compiled: tuple[tuple[re.Pattern[str], str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        compiled = []
        for pattern, replacement in self.patterns:
            try:
                compiled.append((re.compile(pattern), replacement))
            except re.error as exc:
                raise ValueError(f"redaction pattern {pattern!r} is not a regular expression: {exc}") from exc
        object.__setattr__(self, "_compiled", tuple(compiled))

    @classmethod
    def default(cls, cwd: str | Path | None = None) -> Redaction:
        """The default secrets, the home directory as ``<home>`` and ``cwd`` (if given) as ``<cwd>``."""
        paths = {"<home>": str(Path.home())}
        if cwd is not None:
            paths["<cwd>"] = str(cwd)
        return cls(paths=paths)

    def with_patterns(self, *patterns: tuple[str, str]) -> Redaction:
        """A copy with more secret patterns, ``(regex, replacement)`` each."""
        return Redaction(dict(self.paths), (*self.patterns, *patterns), self.secret_fields)

    def with_path(self, placeholder: str, path: str | Path) -> Redaction:
        """A copy with one more path (or another path for ``placeholder``)."""
        return Redaction({**self.paths, placeholder: str(path)}, self.patterns, self.secret_fields)

    def apply(self, value: Any) -> Any:
        """``value`` (decoded JSON) with its secrets and paths replaced; the input is not changed."""
        return self._walk(value, None)

    def text(self, text: str) -> str:
        """One string with its secrets and paths replaced."""
        for pattern, replacement in self._compiled:
            text = pattern.sub(replacement, text)
        for placeholder, path in sorted(self.paths.items(), key=lambda item: -len(item[1])):
            if len(path) > 1:
                text = re.sub(re.escape(path) + _PATH_END, placeholder.replace("\\", r"\\"), text)
        return text

    def _walk(self, value: Any, key: str | None) -> Any:
        if isinstance(value, str):
            if self.secret_fields and key is not None and _is_secret_name(key) and value:
                return "<redacted>"
            return self.text(value)
        if isinstance(value, list):
            return [self._walk(item, None) for item in value]
        if isinstance(value, dict):
            name = value.get("name")
            env_secret = self.secret_fields and isinstance(name, str) and _is_secret_name(name)
            out = {}
            for k, item in value.items():
                if env_secret and k == "value" and isinstance(item, str) and item:
                    out[k] = "<redacted>"
                else:
                    out[k] = self._walk(item, k)
            return out
        return value


def restore_paths(value: Any, paths: Mapping[str, str]) -> Any:
    """``value`` with each placeholder of ``paths`` replaced by its path (a replay's own directories)."""
    if isinstance(value, str):
        for placeholder, path in paths.items():
            value = value.replace(placeholder, path)
        return value
    if isinstance(value, list):
        return [restore_paths(item, paths) for item in value]
    if isinstance(value, dict):
        return {key: restore_paths(item, paths) for key, item in value.items()}
    return value
