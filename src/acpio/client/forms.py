"""Answering the agent's forms (``elicitation/create`` in form mode): the fields, and a policy as data.

A form is a flat schema of fields (:func:`form_fields` reads it as :class:`FormField` values:
text, email, integer, number, yes/no, a choice, several choices). :func:`fill_form` fills one from
values given up front, checking each against its field (a required field missing, a wrong type, a
value a choice does not offer) and using the fields' defaults; ``acpio prompt --answer`` and
:class:`~acpio.client.AgentClient` both answer through it.

:class:`FormPolicy` is how :class:`~acpio.client.AgentClient` answers forms, made by
:func:`form_policy` from what ``AgentClient(forms=...)`` takes:

* a mapping of field name to value: used for any form asking those fields (fields it does not
  give keep their defaults; a required field without either makes the answer invalid);
* ``"decline"`` or ``"cancel"``: every form is answered so;
* an async callback given the typed :class:`~acpio.schema.CreateElicitationRequest`, returning
  one of the above for that form.

A mapping (given or returned) is checked against the form before it is sent: an invalid one raises
:class:`FormAnswerError`, naming each field and what it takes.
"""

from __future__ import annotations

import inspect
import math
import re
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

if TYPE_CHECKING:  # the models are built on first use: importing this module (acpio.client) stays cheap
    from acpio.schema import CreateElicitationRequest, CreateElicitationResponse, ElicitationSchema

__all__ = [
    "KNOWN_KINDS",
    "FormAnswer",
    "FormAnswerError",
    "FormCallback",
    "FormChoice",
    "FormField",
    "FormPolicy",
    "FormValue",
    "fill_form",
    "form_fields",
    "form_policy",
    "show_value",
]

#: A value of a form field: what ``content`` holds for it.
FormValue: TypeAlias = str | int | float | bool | list[str]
#: How a form is answered: field values (accept; text is read as the field reads typed text), or
#: ``"decline"`` (the user said no) or ``"cancel"`` (the user dismissed it).
FormAnswer: TypeAlias = Mapping[str, object] | Literal["decline", "cancel"]
#: Answers one form: given the typed request, returns its :data:`FormAnswer`.
FormCallback: TypeAlias = "Callable[[CreateElicitationRequest], Awaitable[FormAnswer]]"

#: The field kinds this package can answer (a field of another kind is left out of an answer).
KNOWN_KINDS: Final = frozenset({"string", "email", "integer", "number", "boolean", "choice", "choices"})

_EMAIL: Final = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_YES: Final = frozenset({"y", "yes", "true", "1", "on"})
_NO: Final = frozenset({"n", "no", "false", "0", "off"})
#: The largest integer every JSON peer reads exactly (2**53 - 1).
_LARGEST_EXACT: Final = 2**53 - 1


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
            text += f" [{show_value(self.default)}]"
        return text

    def show(self, value: FormValue) -> str:
        """``value`` as the person reads it: a choice by its label, yes/no, a list joined."""
        labels = dict(self.options)
        if isinstance(value, list):
            return ", ".join(labels.get(v, v) for v in value) or "(none)"
        if isinstance(value, str) and value in labels:
            return labels[value]
        return show_value(value)

    def parse(self, text: str, *, typed: bool = False) -> FormValue:
        """The value ``text`` stands for; raises ``ValueError`` saying what this field takes.

        ``text`` is a value given as data (code, ``--answer``): text fields take it as it is, a
        choice is picked by its value or its label. ``typed=True`` reads what a person typed at the
        menu: surrounding blanks dropped, and a choice also picked by its menu number.
        """
        if typed or self.kind not in ("string", "email"):
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
            return self.check(self._option(text, typed))
        if self.kind == "choices":
            picked = [self._option(part, typed) for part in text.split(",") if part.strip()]
            return self.check(picked)
        return self.check(text)

    def _option(self, text: str, typed: bool) -> str:
        # exact value first, menu number last: a choice whose values are numbers is picked by value
        text = text.strip()
        for value, _ in self.options:
            if text == value:
                return value
        for value, label in self.options:
            if text.casefold() in (value.casefold(), label.casefold()):
                return value
        if typed and text.isdigit() and 1 <= int(text) <= len(self.options):
            return self.options[int(text) - 1][0]
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
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"takes a finite number, not {value}")
            if kind == "integer" and isinstance(value, float) and not value.is_integer():
                raise ValueError("takes a whole number")
            if abs(value) > (_LARGEST_EXACT if kind == "integer" else sys.float_info.max):
                # JSON peers (JavaScript agents) read integers beyond 2**53 - 1 wrongly
                largest = _LARGEST_EXACT if kind == "integer" else f"{sys.float_info.max:g}"
                raise ValueError(f"takes a number between -{largest} and {largest}")
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
    from acpio.schema import (
        BooleanPropertySchema,
        IntegerPropertySchema,
        MultiSelectPropertySchema,
        NumberPropertySchema,
        StringMultiSelectItems,
        StringPropertySchema,
        TitledMultiSelectItems,
    )

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


def fill_form(
    fields: Sequence[FormField], given: Mapping[str, object], *, missing: Callable[[str], str]
) -> tuple[dict[str, FormValue], list[str]]:
    """The form's answer from ``given`` values and the fields' defaults, and what is wrong with it.

    A value given as text is read as typed (:meth:`FormField.parse`), any other is checked as it
    is (:meth:`FormField.check`). Each problem names its field; ``missing(name)`` says a required
    field has no value (and how to give one). Values for fields the form does not ask are left out.
    """
    values: dict[str, FormValue] = {}
    problems: list[str] = []
    for item in fields:
        if item.name in given:
            raw = given[item.name]
            try:
                values[item.name] = item.parse(raw) if isinstance(raw, str) else item.check(raw)
            except ValueError as error:
                problems.append(f"{item.name} {error}")
        elif item.default is not None and item.kind in KNOWN_KINDS:
            values[item.name] = item.default
        elif item.required:
            problems.append(missing(item.name))
    return values, problems


def show_value(value: FormValue) -> str:
    """``value`` as a person reads it: yes/no, a list joined, anything else as text."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(value) or "(none)"
    return str(value)


class FormAnswerError(ValueError):
    """An answer to a form (from ``AgentClient(forms=...)`` or its callback) that does not fit the form.

    ``problems`` names each field and what it takes; the agent is answered ``cancel`` instead.
    """

    def __init__(self, message: str, problems: Sequence[str]) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


class FormPolicy:
    """Answers form elicitations from a :data:`FormAnswer` given once, or from a :data:`FormCallback`."""

    def __init__(self, answer: FormAnswer | FormCallback) -> None:
        if (isinstance(answer, str) and answer not in ("decline", "cancel")) or not (
            isinstance(answer, str | Mapping) or callable(answer)
        ):
            raise ValueError(
                f"forms={answer!r} is not an answer: give 'decline', 'cancel', a mapping of field names "
                "to values, or an async callback that gets the request and returns one of those"
            )
        self._answer = answer

    def __repr__(self) -> str:
        return f"<FormPolicy {self._answer!r}>"

    async def answer(self, request: CreateElicitationRequest) -> CreateElicitationResponse:
        """The answer to the form ``request``; :class:`FormAnswerError` when the values do not fit it."""
        from acpio.schema import CreateElicitationResponse, ElicitationSchema

        answer = self._answer
        if callable(answer):
            returned = answer(request)
            if not inspect.isawaitable(returned):
                raise FormAnswerError(
                    f"The forms callback {answer!r} returned {returned!r} instead of an awaitable: make it "
                    "an async function (async def) returning a mapping of field names to values, 'decline' "
                    "or 'cancel'; the agent was answered cancel",
                    [],
                )
            answer = await returned
        if answer == "decline" or answer == "cancel":
            return CreateElicitationResponse(action=answer)
        if not isinstance(answer, Mapping):
            raise FormAnswerError(
                f"The forms callback answered the form {request.message!r} with {answer!r}: return a "
                "mapping of field names to values, 'decline' or 'cancel'",
                [],
            )
        fields = form_fields(request.requested_schema or ElicitationSchema())
        values, problems = fill_form(
            fields, answer, missing=lambda name: f"{name} is required and has no default: give it a value"
        )
        if problems:
            where = "the forms callback" if callable(self._answer) else "AgentClient(forms=...)"
            raise FormAnswerError(
                f"The answer from {where} does not fit the form {request.message!r}: {'; '.join(problems)}. "
                "Fix the values, or answer 'decline' or 'cancel'; the agent was answered cancel",
                problems,
            )
        return CreateElicitationResponse(action="accept", content=values)


#: What ``AgentClient(forms=...)`` takes: an answer for every form, a callback, a policy, or
#: ``None`` (forms are not advertised, and refused).
FormChoice: TypeAlias = FormAnswer | FormCallback | FormPolicy | None


def form_policy(choice: FormChoice) -> FormPolicy | None:
    """The policy ``choice`` stands for (``None``: forms are not answered)."""
    if choice is None or isinstance(choice, FormPolicy):
        return choice
    return FormPolicy(choice)
