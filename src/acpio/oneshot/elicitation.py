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

import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeAlias
from urllib.parse import urlsplit

from acpio.errors import InvalidParams
from acpio.oneshot.sanitize import sanitize
from acpio.schema import (
    BooleanPropertySchema,
    CreateElicitationRequest,
    CreateElicitationResponse,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationSchema,
    ElicitationUrlCapabilities,
    IntegerPropertySchema,
    MultiSelectPropertySchema,
    NumberPropertySchema,
    StringMultiSelectItems,
    StringPropertySchema,
    TitledMultiSelectItems,
)

__all__ = [
    "ElicitationSettings",
    "Elicitor",
    "FormField",
    "FormValue",
    "UrlAction",
    "form_fields",
    "parse_answers",
]

#: A value of a form field: what ``content`` holds for it.
FormValue: TypeAlias = str | int | float | bool | list[str]
#: What to do with a URL elicitation without asking: accept and print it, or accept and open it.
UrlAction: TypeAlias = Literal["print", "open"]
#: Reads one typed line (``None`` at the end of input).
ReadLine: TypeAlias = Callable[[], Awaitable[str | None]]

_EMAIL: Final = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_YES: Final = frozenset({"y", "yes", "true", "1", "on"})
_NO: Final = frozenset({"n", "no", "false", "0", "off"})


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


@dataclass(frozen=True)
class FormField:
    """One field of a form, in the terms the person is asked in."""

    name: str
    #: ``string``, ``email``, ``integer``, ``number``, ``boolean``, ``choice`` or ``choices``, or the
    #: schema's type for one this client does not know (never asked; left out of the answer).
    kind: str
    title: str
    description: str | None
    required: bool
    default: FormValue | None
    #: For ``choice`` and ``choices``: (value, label) pairs.
    options: tuple[tuple[str, str], ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None

    def describe(self) -> str:
        """The field as asked: ``Age (integer, 0 to 150, required) [30]``."""
        notes: list[str] = [self.kind]
        if self.minimum is not None or self.maximum is not None:
            low = "" if self.minimum is None else f"{self.minimum:g}"
            high = "" if self.maximum is None else f"{self.maximum:g}"
            notes.append(f"{low} to {high}".strip())
        if self.max_length is not None and self.kind == "choices":
            notes.append(f"at most {self.max_length}")
        if self.required:
            notes.append("required")
        text = f"{self.title} ({', '.join(notes)})"
        if self.default is not None:
            text += f" [{_show(self.default)}]"
        return text

    def show(self, value: FormValue) -> str:
        """``value`` as the person reads it: a choice by its label, yes/no, a list joined."""
        labels = dict(self.options)
        if isinstance(value, list):
            return ", ".join(labels.get(v, v) for v in value) or "(none)"
        if isinstance(value, str) and value in labels:
            return labels[value]
        return _show(value)

    def parse(self, text: str) -> FormValue:
        """The value typed ``text`` stands for; raises ``ValueError`` saying what this field takes."""
        text = text.strip()
        if self.kind == "boolean":
            if text.casefold() in _YES:
                return True
            if text.casefold() in _NO:
                return False
            raise ValueError("answer yes or no")
        if self.kind in ("integer", "number"):
            try:
                number: float = int(text) if self.kind == "integer" else float(text)
            except ValueError:
                what = "a whole number" if self.kind == "integer" else "a number"
                raise ValueError(f"{text!r} is not {what}") from None
            return self.check(number)
        if self.kind == "choice":
            return self.check(self._option(text))
        if self.kind == "choices":
            picked = [self._option(part) for part in text.split(",") if part.strip()]
            return self.check(picked)
        return self.check(text)

    def _option(self, text: str) -> str:
        text = text.strip()
        if text.isdigit() and 1 <= int(text) <= len(self.options):
            return self.options[int(text) - 1][0]
        for value, label in self.options:
            if text.casefold() in (value.casefold(), label.casefold()):
                return value
        raise ValueError(f"{text!r} is not one of {', '.join(value for value, _ in self.options)}")

    def check(self, value: Any) -> FormValue:
        """``value`` (already typed, as from a JSON file) if this field takes it; else ``ValueError``."""
        kind = self.kind
        if kind == "boolean":
            if not isinstance(value, bool):
                raise ValueError("takes true or false")
            return value
        if kind in ("integer", "number"):
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"takes a {'whole ' if kind == 'integer' else ''}number")
            if kind == "integer" and not float(value).is_integer():
                raise ValueError("takes a whole number")
            number = int(value) if kind == "integer" else float(value)
            if self.minimum is not None and number < self.minimum:
                raise ValueError(f"must be at least {self.minimum:g}")
            if self.maximum is not None and number > self.maximum:
                raise ValueError(f"must be at most {self.maximum:g}")
            return number
        if kind == "choices":
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise ValueError("takes a list of choices")
            values = [str(v) for v in value]
            self._check_choices(values)
            return values
        if not isinstance(value, str):
            raise ValueError("takes text")
        if kind == "choice":
            self._check_choices([value])
            return value
        if self.min_length is not None and len(value) < self.min_length:
            raise ValueError(f"needs at least {self.min_length} characters")
        if self.max_length is not None and len(value) > self.max_length:
            raise ValueError(f"takes at most {self.max_length} characters")
        if kind == "email" and not _EMAIL.fullmatch(value):
            raise ValueError(f"{value!r} is not an email address")
        if self.pattern is not None and re.search(self.pattern, value) is None:
            raise ValueError(f"must match the pattern {self.pattern}")
        return value

    def _check_choices(self, values: Sequence[str]) -> None:
        known = {value for value, _ in self.options}
        for value in values:
            if value not in known:
                raise ValueError(f"{value!r} is not one of {', '.join(sorted(known))}")
        if self.kind == "choices":
            if self.min_length is not None and len(values) < self.min_length:
                raise ValueError(f"pick at least {self.min_length}")
            if self.max_length is not None and len(values) > self.max_length:
                raise ValueError(f"pick at most {self.max_length}")


def form_fields(schema: ElicitationSchema) -> list[FormField]:
    """The fields of a form schema, in its order."""
    required = set(schema.required or ())
    fields: list[FormField] = []
    for name, prop in (schema.properties or {}).items():
        title = getattr(prop, "title", None) or name
        description = getattr(prop, "description", None)
        common: dict[str, Any] = {
            "name": name,
            "title": title,
            "description": description if isinstance(description, str) else None,
            "required": name in required,
        }
        if isinstance(prop, StringPropertySchema):
            options: tuple[tuple[str, str], ...] = ()
            if prop.one_of:
                options = tuple((o.const, o.title) for o in prop.one_of)
            elif prop.enum:
                options = tuple((value, value) for value in prop.enum)
            if options:
                fields.append(FormField(kind="choice", default=prop.default, options=options, **common))
                continue
            kind = "email" if str(prop.format or "") == "email" else "string"
            fields.append(
                FormField(
                    kind=kind,
                    default=prop.default,
                    min_length=prop.min_length,
                    max_length=prop.max_length,
                    pattern=prop.pattern,
                    **common,
                )
            )
        elif isinstance(prop, IntegerPropertySchema | NumberPropertySchema):
            fields.append(
                FormField(
                    kind=prop.type, default=prop.default, minimum=prop.minimum, maximum=prop.maximum, **common
                )
            )
        elif isinstance(prop, BooleanPropertySchema):
            fields.append(FormField(kind="boolean", default=prop.default, **common))
        elif isinstance(prop, MultiSelectPropertySchema):
            items = prop.items
            if isinstance(items, StringMultiSelectItems):
                options = tuple((value, value) for value in items.enum)
            elif isinstance(items, TitledMultiSelectItems):
                options = tuple((o.const, o.title) for o in items.any_of)
            else:
                options = ()
            fields.append(
                FormField(
                    kind="choices",
                    default=list(prop.default) if prop.default is not None else None,
                    options=options,
                    min_length=prop.min_items,
                    max_length=prop.max_items,
                    **common,
                )
            )
        else:
            fields.append(FormField(kind=str(getattr(prop, "type", "unknown")), default=None, **common))
    return fields


def parse_answers(pairs: Sequence[str]) -> dict[str, str]:
    """``NAME=VALUE`` texts (``--answer``) as a mapping; raises ``ValueError`` for one without ``=``."""
    values: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{pair!r} is not NAME=VALUE")
        values[name.strip()] = value
    return values


_KNOWN_KINDS: Final = frozenset({"string", "email", "integer", "number", "boolean", "choice", "choices"})


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
            if item.kind not in _KNOWN_KINDS:
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
                return item.parse(typed)
            except ValueError as error:
                self._write(f"  {error}.\n")

    def _from_values(self, fields: list[FormField], message: str) -> CreateElicitationResponse:
        given = self._settings.values
        values: dict[str, FormValue] = {}
        problems: list[str] = []
        for item in fields:
            if item.name in given:
                raw = given[item.name]
                try:
                    values[item.name] = item.parse(raw) if isinstance(raw, str) else item.check(raw)
                except ValueError as error:
                    problems.append(f"{item.name} {error}")
            elif item.default is not None and item.kind in _KNOWN_KINDS:
                values[item.name] = item.default
            elif item.required:
                problems.append(f"{item.name} is required (give it with --answer {item.name}=VALUE)")
        unknown = sorted(set(given) - {item.name for item in fields})
        if problems:
            self._note(f"elicitation cancelled ({message}): {'; '.join(problems)}")
            return CreateElicitationResponse(action="cancel")
        shown = ", ".join(f"{name}={_show(value)}" for name, value in values.items())
        extra = f" (not asked for: {', '.join(unknown)})" if unknown else ""
        self._note(f"elicitation answered ({message}): {shown or 'nothing'}{extra}")
        return CreateElicitationResponse(action="accept", content=values)


def _open_in_browser(url: str) -> bool:
    import webbrowser

    return webbrowser.open(url)


def _with_default(item: FormField, default: FormValue | None) -> FormField:
    from dataclasses import replace

    return replace(item, default=default)


def _show(value: FormValue) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(value) or "(none)"
    return str(value)
