r"""Forms an agent asks the user to fill (``elicitation/create`` in form mode), declared as dataclasses.

A form is a dataclass; each field's type says what the user is asked for, and ``Annotated`` with
:class:`Ask` gives its label and limits::

    @dataclass
    class Release:
        version: Annotated[str, Ask("Version", pattern=r"^\d+\.\d+\.\d+$")]
        notes: Annotated[bool, Ask("Write release notes?")] = True
        channel: Literal["stable", "beta"] = "stable"
        targets: list[Literal["pypi", "docs"]] = field(default_factory=list)
        retries: int | None = None

    answer = await turn.elicit("How should I release?", Release)
    if answer.value is not None:
        print(answer.value.version)   # a str, as declared

The field types and what they become in the schema: ``str`` (a string; ``Ask(format="email")``
and the others for an email, a date...), ``int`` (integer), ``float`` (number), ``bool``
(boolean), ``Literal["a", "b"]`` (a single choice; ``Ask(choices={"a": "Label"})`` gives the
choices labels), ``list[Literal[...]]`` (several choices). ``X | None`` and fields with a default
are optional; the rest are required. A default is sent as the field's default.

:func:`form_schema` builds the :class:`~acpio.schema.ElicitationSchema`, :func:`form_value` checks
what the client sent back and builds the dataclass (the spec asks agents to validate again).
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, Union, get_args, get_origin

from acpio import schema as acp
from acpio.app.update_templates import given

__all__ = ["Ask", "ElicitationAction", "Elicited", "FormError", "form_schema", "form_value"]

T = TypeVar("T")

#: How the user answered: ``accept``, ``decline`` or ``cancel`` (another value from a newer client is
#: kept as it came).
ElicitationAction = Literal["accept", "decline", "cancel"] | str


@dataclass(frozen=True)
class Ask:
    """How a form field is shown and what it takes (use it in ``Annotated[type, Ask(...)]``)."""

    #: The label (default: the field's name).
    title: str | None = None
    #: A longer explanation.
    description: str | None = None
    #: For text: ``email``, ``uri``, ``date``, ``date-time``.
    format: str | None = None
    #: For text: a regular expression the answer must match.
    pattern: str | None = None
    #: For text: the fewest characters; for several choices: the fewest picked.
    min_length: int | None = None
    #: For text: the most characters; for several choices: the most picked.
    max_length: int | None = None
    #: For numbers: the smallest allowed.
    minimum: float | None = None
    #: For numbers: the largest allowed.
    maximum: float | None = None
    #: For ``Literal`` choices: a label for each value.
    choices: Mapping[str, str] | None = None


class FormError(ValueError):
    """A form class that cannot be asked, or an answer that does not fit it (the message says which field)."""


@dataclass(frozen=True)
class Elicited(Generic[T]):
    """The user's answer to :meth:`~acpio.app.Turn.elicit` or :meth:`~acpio.app.Turn.elicit_url`."""

    #: ``accept``, ``decline`` or ``cancel``.
    action: ElicitationAction
    #: The filled form (``accept`` of a form only; ``None`` otherwise).
    value: T | None = None
    #: The id of a URL elicitation (to :meth:`~acpio.app.Turn.complete_elicitation` it).
    elicitation_id: str | None = None

    @property
    def accepted(self) -> bool:
        """Whether the user accepted (filled the form, or agreed to open the URL)."""
        return self.action == "accept"


@dataclass(frozen=True)
class _Field:
    name: str
    kind: Literal["string", "integer", "number", "boolean", "choice", "choices"]
    ask: Ask
    required: bool
    default: Any
    values: tuple[str, ...] = ()


def _fields(form: type[Any]) -> list[_Field]:
    if not (isinstance(form, type) and dataclasses.is_dataclass(form)):
        raise FormError(f"a form is a dataclass, not {form!r}")
    hints = typing.get_type_hints(form, include_extras=True)
    found: list[_Field] = []
    for item in dataclasses.fields(form):
        hint = hints[item.name]
        ask = Ask()
        if get_origin(hint) is typing.Annotated:
            hint, *extras = get_args(hint)
            ask = next((extra for extra in extras if isinstance(extra, Ask)), ask)
        optional = False
        if get_origin(hint) in (Union, types.UnionType):
            members = [arg for arg in get_args(hint) if arg is not type(None)]
            optional = len(members) < len(get_args(hint))
            if len(members) != 1:
                raise FormError(f"{form.__name__}.{item.name}: a field has one type (or that type | None)")
            hint = members[0]
        default: Any = None
        has_default = (
            item.default is not dataclasses.MISSING or item.default_factory is not dataclasses.MISSING
        )
        if item.default is not dataclasses.MISSING:
            default = item.default
        elif item.default_factory is not dataclasses.MISSING:
            default = item.default_factory()
        required = not (optional or has_default)
        found.append(_field(form, item.name, hint, ask, required, default))
    return found


def _field(form: type[Any], name: str, hint: Any, ask: Ask, required: bool, default: Any) -> _Field:
    if hint is bool:
        return _Field(name, "boolean", ask, required, default)
    if hint is int:
        return _Field(name, "integer", ask, required, default)
    if hint is float:
        return _Field(name, "number", ask, required, default)
    if hint is str:
        return _Field(name, "string", ask, required, default)
    if get_origin(hint) is Literal and all(isinstance(v, str) for v in get_args(hint)):
        return _Field(name, "choice", ask, required, default, tuple(get_args(hint)))
    if get_origin(hint) is list:
        (item,) = get_args(hint) or (None,)
        if get_origin(item) is Literal and all(isinstance(v, str) for v in get_args(item)):
            return _Field(name, "choices", ask, required, default or None, tuple(get_args(item)))
    raise FormError(
        f"{form.__name__}.{name}: {hint!r} cannot be asked; use str, int, float, bool, Literal[...] of "
        "strings or list[Literal[...]]"
    )


def form_schema(form: type[Any], *, title: str | None = None) -> acp.ElicitationSchema:
    """The schema of ``form`` (a dataclass; see the module docstring).

    Raises :class:`FormError` for a field that cannot be asked.
    """
    properties: dict[str, Any] = {}
    required: list[str] = []
    for item in _fields(form):
        ask = item.ask
        common = given(title=ask.title or item.name, description=ask.description)
        if item.kind == "string":
            prop: Any = acp.StringPropertySchema(
                **common,
                **given(
                    format=ask.format,
                    pattern=ask.pattern,
                    min_length=ask.min_length,
                    max_length=ask.max_length,
                    default=item.default,
                ),
            )
        elif item.kind in ("integer", "number"):
            model = acp.IntegerPropertySchema if item.kind == "integer" else acp.NumberPropertySchema
            limits = given(minimum=ask.minimum, maximum=ask.maximum, default=item.default)
            if item.kind == "integer":
                limits = {k: int(v) for k, v in limits.items()}
            prop = model(**common, **limits)
        elif item.kind == "boolean":
            prop = acp.BooleanPropertySchema(**common, **given(default=item.default))
        elif item.kind == "choice":
            if ask.choices:
                options = [acp.EnumOption(const=v, title=ask.choices.get(v, v)) for v in item.values]
                prop = acp.StringPropertySchema(**common, one_of=options, **given(default=item.default))
            else:
                prop = acp.StringPropertySchema(
                    **common, enum=list(item.values), **given(default=item.default)
                )
        else:
            items: Any = (
                acp.TitledMultiSelectItems(
                    any_of=[acp.EnumOption(const=v, title=ask.choices.get(v, v)) for v in item.values]
                )
                if ask.choices
                else acp.StringMultiSelectItems(enum=list(item.values))
            )
            prop = acp.MultiSelectPropertySchema(
                **common,
                items=items,
                **given(min_items=ask.min_length, max_items=ask.max_length, default=item.default),
            )
        properties[item.name] = prop
        if item.required:
            required.append(item.name)
    extra = given(title=title, required=required or None)
    return acp.ElicitationSchema(type="object", properties=properties, **extra)


def form_value(form: type[T], content: Mapping[str, Any] | None) -> T:
    """``form`` filled with ``content`` (an accepted answer), each value checked against its field.

    Fields the answer leaves out take their defaults (``None`` for an optional one). Raises
    :class:`FormError` naming the first field whose value does not fit.
    """
    given = dict(content or {})
    values: dict[str, Any] = {}
    for item in _fields(form):
        if item.name not in given or given[item.name] is None:
            if item.required:
                raise FormError(f"the answer has no value for the required field {item.name!r}")
            continue
        values[item.name] = _checked(item, given[item.name])
    return form(**values)


def _checked(item: _Field, value: Any) -> Any:
    ask, name = item.ask, item.name
    if item.kind == "boolean":
        if not isinstance(value, bool):
            raise FormError(f"{name}: true or false expected, not {value!r}")
        return value
    if item.kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise FormError(f"{name}: a number expected, not {value!r}")
        if item.kind == "integer":
            if not float(value).is_integer():
                raise FormError(f"{name}: a whole number expected, not {value!r}")
            value = int(value)
        if ask.minimum is not None and value < ask.minimum:
            raise FormError(f"{name}: {value!r} is below the minimum {ask.minimum:g}")
        if ask.maximum is not None and value > ask.maximum:
            raise FormError(f"{name}: {value!r} is above the maximum {ask.maximum:g}")
        return float(value) if item.kind == "number" else value
    if item.kind == "choices":
        if not isinstance(value, list) or not all(isinstance(v, str) and v in item.values for v in value):
            raise FormError(f"{name}: a list of {', '.join(item.values)} expected, not {value!r}")
        if ask.min_length is not None and len(value) < ask.min_length:
            raise FormError(f"{name}: at least {ask.min_length} choices expected")
        if ask.max_length is not None and len(value) > ask.max_length:
            raise FormError(f"{name}: at most {ask.max_length} choices expected")
        return list(value)
    if not isinstance(value, str):
        raise FormError(f"{name}: text expected, not {value!r}")
    if item.kind == "choice":
        if value not in item.values:
            raise FormError(f"{name}: one of {', '.join(item.values)} expected, not {value!r}")
        return value
    if ask.min_length is not None and len(value) < ask.min_length:
        raise FormError(f"{name}: at least {ask.min_length} characters expected")
    if ask.max_length is not None and len(value) > ask.max_length:
        raise FormError(f"{name}: at most {ask.max_length} characters expected")
    if ask.pattern is not None and re.search(ask.pattern, value) is None:
        raise FormError(f"{name}: {value!r} does not match {ask.pattern}")
    return value
