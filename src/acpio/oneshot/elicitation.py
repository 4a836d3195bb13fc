"""Answering ``elicitation/create`` in ``acpio prompt``: a form in the terminal, or answers given up front.

An agent asks the user for structured input in one of two modes:

* **form**: a flat schema of fields (text, email, integer, number, yes/no, a choice, several
  choices). On a terminal (:class:`Elicitor` with ``ask``), each field is asked in turn on stderr,
  its default shown in brackets; the answers are shown again before they are sent (send, edit,
  decline or cancel). Without a terminal, the answers come from ``--answer NAME=VALUE`` and
  ``--answers FILE`` (a JSON object): given values and the fields' defaults are sent; a required
  field without a value, or a value the field does not take, cancels the elicitation with a note
  saying which.
* **url**: the user is sent to a web page (a login, a payment). The full URL and its host are
  shown, and nothing is opened without consent: on a terminal the person chooses to open it in
  the browser, open it themselves, decline or cancel; without one, ``--urls print`` accepts and
  prints it, ``--urls open`` accepts and opens it in the browser. ``elicitation/complete`` for an
  accepted URL is noted; unknown or repeated ids are ignored, as the spec asks.

``--decline-elicitations`` declines every elicitation without asking. The client capability is
advertised only for the modes that can be answered (:meth:`Elicitor.capabilities`); a request in
any other mode is refused with ``-32602``, as the spec says.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias
from urllib.parse import urlsplit

from acpio.client.forms import KNOWN_KINDS, FormField, FormValue, fill_form, form_fields, show_value
from acpio.errors import InvalidParams
from acpio.oneshot.sanitize import sanitize
from acpio.schema import (
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
)

__all__ = [
    "ElicitationSettings",
    "Elicitor",
    "UrlAction",
    "parse_answers",
]

#: What to do with a URL elicitation without asking: accept and print it, or accept and open it.
UrlAction: TypeAlias = Literal["print", "open"]
#: Reads one typed line (``None`` at the end of input).
ReadLine: TypeAlias = Callable[[], Awaitable[str | None]]


@dataclass(frozen=True)
class ElicitationSettings:
    """How ``acpio prompt`` answers elicitations (its flags)."""

    #: Field values given up front (``--answer NAME=VALUE`` as text, ``--answers FILE`` as JSON).
    values: Mapping[str, Any] = field(default_factory=dict)
    #: Decline every elicitation without asking (``--decline-elicitations``).
    decline: bool = False
    #: Accept URL elicitations without asking, printing or opening the URL (``--urls``).
    urls: UrlAction | None = None
    #: Ask on the terminal (a person is there to answer).
    ask: bool = False

    @property
    def form(self) -> bool:
        """Whether form elicitations can be answered: asked, answered from values, or declined."""
        return self.decline or self.ask or bool(self.values)

    @property
    def url(self) -> bool:
        """Whether URL elicitations can be answered: asked, accepted with ``urls``, or declined."""
        return self.decline or self.ask or self.urls is not None

    def capabilities(self) -> ElicitationCapabilities | None:
        """``clientCapabilities.elicitation``: the modes that can be answered (``None``: neither)."""
        if not (self.form or self.url):
            return None
        modes: dict[str, Any] = {}
        if self.form:
            modes["form"] = ElicitationFormCapabilities()
        if self.url:
            modes["url"] = ElicitationUrlCapabilities()
        return ElicitationCapabilities(**modes)


def parse_answers(pairs: Sequence[str]) -> dict[str, str]:
    """``NAME=VALUE`` texts (``--answer``) as a mapping; raises ``ValueError`` for one without ``=``."""
    values: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{pair!r} is not NAME=VALUE")
        values[name.strip()] = value
    return values


class _Abandoned(Exception):
    """The person declined or cancelled while filling the form."""

    def __init__(self, action: Literal["decline", "cancel"]) -> None:
        super().__init__(action)
        self.action = action


class Elicitor:
    """Answers ``elicitation/create`` as :class:`ElicitationSettings` say; notes what it did with ``note``.

    ``read_line`` reads what the person types (for ``ask``); questions go to ``write`` (stderr).
    ``open_url`` opens a URL in the browser (default: the standard library's ``webbrowser.open``).
    """

    def __init__(
        self,
        settings: ElicitationSettings,
        *,
        note: Callable[[str], None],
        write: Callable[[str], None],
        read_line: ReadLine | None = None,
        open_url: Callable[[str], bool] | None = None,
    ) -> None:
        self._settings = settings
        self._note = note
        self._write = write
        self._read_line = read_line if settings.ask else None
        self._open_url = open_url if open_url is not None else _open_in_browser
        #: URL elicitations accepted and not completed yet.
        self._pending: set[str] = set()

    @property
    def form(self) -> bool:
        """Whether form elicitations can be answered (see :attr:`ElicitationSettings.form`)."""
        return self._settings.form

    @property
    def url(self) -> bool:
        """Whether URL elicitations can be answered (see :attr:`ElicitationSettings.url`)."""
        return self._settings.url

    async def answer(self, request: CreateElicitationRequest) -> CreateElicitationResponse:
        """The answer to ``request``; ``InvalidParams`` for a mode this run did not advertise."""
        mode = request.mode
        if (
            (mode == "form" and not self.form)
            or (mode == "url" and not self.url)
            or mode not in ("form", "url")
        ):
            raise InvalidParams(
                {"mode": mode},
                message=f"acpio prompt did not advertise {mode} elicitations in its capabilities",
            )
        message = sanitize(request.message, single_line=True)
        if self._settings.decline:
            self._note(f"elicitation declined (--decline-elicitations): {message}")
            return CreateElicitationResponse(action="decline")
        if mode == "url":
            return await self._url(request, message)
        assert request.requested_schema is not None
        return await self._form(form_fields(request.requested_schema), message)

    def complete(self, elicitation_id: str) -> None:
        """``elicitation/complete``: note it when it completes a URL elicitation accepted here."""
        if elicitation_id in self._pending:
            self._pending.discard(elicitation_id)
            self._note(f"the agent says the page was completed (elicitation {elicitation_id})")

    # --- URL mode ---------------------------------------------------------------------------------

    async def _url(self, request: CreateElicitationRequest, message: str) -> CreateElicitationResponse:
        url = sanitize(request.url or "", single_line=True)
        host = urlsplit(url).hostname or "(no host)"
        warning = (
            "" if host.isascii() and "xn--" not in host else " (warning: the host name is not plain ASCII)"
        )
        action = self._settings.urls
        if self._read_line is not None and action is None:
            self._write(
                f"The agent asks you to open a web page: {message}\n  {url}\n  host: {host}{warning}\n"
            )
            while True:
                self._write("Open it? o) in the browser  m) I will open it myself  d) decline  c) cancel: ")
                typed = await self._read_line()
                choice = (typed or "c").strip().casefold()[:1]
                if choice in ("o", "m", "d", "c"):
                    break
                self._write(f"{typed!r} is not one of o, m, d, c.\n")
            if choice in ("d", "c"):
                return CreateElicitationResponse(action="decline" if choice == "d" else "cancel")
            action = "open" if choice == "o" else "print"
        if action == "open" and not self._open_url(url):
            self._note(f"could not open a browser; open this page yourself: {url}")
        elif action == "print" or action is None:
            self._note(f"open this page to go on ({message}): {url} (host: {host}{warning})")
        if request.elicitation_id:
            self._pending.add(request.elicitation_id)
        return CreateElicitationResponse(action="accept")

    # --- form mode --------------------------------------------------------------------------------

    async def _form(self, fields: list[FormField], message: str) -> CreateElicitationResponse:
        if self._read_line is None:
            return self._from_values(fields, message)
        self._write(f"The agent asks: {message}\n")
        self._write("  (an empty answer keeps the default; :d declines, :c cancels)\n")
        try:
            values = await self._ask_all(fields)
            while True:
                self._write("You answered:\n")
                for item in fields:
                    if item.name in values:
                        title = sanitize(item.title, single_line=True)
                        shown = sanitize(item.show(values[item.name]), single_line=True)
                        self._write(f"  {title}: {shown}\n")
                self._write("Send these answers? y) send  e) edit  d) decline  c) cancel: ")
                typed = await self._read_line_or_cancel()
                choice = typed.strip().casefold()[:1]
                if choice == "y":
                    return CreateElicitationResponse(action="accept", content=values)
                if choice == "e":
                    values = await self._ask_all(fields, values)
                elif choice in ("d", "c"):
                    raise _Abandoned("decline" if choice == "d" else "cancel")
        except _Abandoned as abandoned:
            return CreateElicitationResponse(action=abandoned.action)

    async def _read_line_or_cancel(self) -> str:
        assert self._read_line is not None
        typed = await self._read_line()
        if typed is None:
            raise _Abandoned("cancel")
        if typed.strip() in (":d", ":decline"):
            raise _Abandoned("decline")
        if typed.strip() in (":c", ":cancel"):
            raise _Abandoned("cancel")
        return typed

    async def _ask_all(
        self, fields: list[FormField], earlier: Mapping[str, FormValue] | None = None
    ) -> dict[str, FormValue]:
        values: dict[str, FormValue] = {}
        for item in fields:
            if item.kind not in KNOWN_KINDS:
                continue
            default = earlier.get(item.name, item.default) if earlier is not None else item.default
            asked = item if default is item.default else _with_default(item, default)
            value = await self._ask(asked)
            if value is not None:
                values[item.name] = value
        return values

    async def _ask(self, item: FormField) -> FormValue | None:
        if item.description:
            self._write(f"  {sanitize(item.description, single_line=True)}\n")
        if item.options:
            for number, (value, label) in enumerate(item.options, 1):
                shown = label if label == value else f"{label} ({value})"
                self._write(f"    {number}) {sanitize(shown, single_line=True)}\n")
        while True:
            hint = " (numbers or names, separated by commas)" if item.kind == "choices" else ""
            self._write(f"  {sanitize(item.describe(), single_line=True)}{hint}: ")
            typed = await self._read_line_or_cancel()
            if not typed.strip():
                if item.default is not None:
                    return item.default
                if not item.required:
                    return None
                self._write("  This field is required.\n")
                continue
            try:
                return item.parse(typed, typed=True)
            except ValueError as error:
                self._write(f"  {error}.\n")

    def _from_values(self, fields: list[FormField], message: str) -> CreateElicitationResponse:
        given = self._settings.values
        values, problems = fill_form(
            fields, given, missing=lambda name: f"{name} is required (give it with --answer {name}=VALUE)"
        )
        unknown = sorted(set(given) - {item.name for item in fields})
        if problems:
            self._note(f"elicitation cancelled ({message}): {'; '.join(problems)}")
            return CreateElicitationResponse(action="cancel")
        shown = ", ".join(f"{name}={show_value(value)}" for name, value in values.items())
        extra = f" (not asked for: {', '.join(unknown)})" if unknown else ""
        self._note(f"elicitation answered ({message}): {shown or 'nothing'}{extra}")
        return CreateElicitationResponse(action="accept", content=values)


def _open_in_browser(url: str) -> bool:
    import webbrowser

    return webbrowser.open(url)


def _with_default(item: FormField, default: FormValue | None) -> FormField:
    from dataclasses import replace

    return replace(item, default=default)
