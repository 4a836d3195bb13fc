"""Validation helpers used by the generated models (not public API).

They reproduce what the Rust reference does on receive, which JSON Schema cannot express:

* ``DEFAULT_ON_ERROR``: a field marked ``x-deserialize-default-on-error`` falls back to its default
  when its value is invalid, instead of failing the whole message (patch fields default to
  ``MISSING``, so an invalid title leaves the title unchanged rather than clearing it);
* ``NULL_AS_EMPTY_LIST``/``NULL_AS_EMPTY_DICT``: a field marked ``x-deserialize-default-on-null``
  reads ``null`` as its empty value (``"mcpServers": null`` is no servers, not an error);
* ``SKIP_INVALID_ITEMS``: an array marked ``x-deserialize-skip-invalid-items`` drops the items that
  do not validate;
* :func:`open_enum`: a known enum value becomes the enum member, an unknown string is kept as it is
  (a newer peer's ``ToolKind`` does not reject the message, and a proxy passes it on unchanged);
* :func:`tag_discriminator`: resolves a union by its tag, sending unknown tags to the union's
  ``Unknown*`` catch-all variant;
* :func:`check_variants`: for objects that merge a fixed part with one of several variants.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, TypeVar

from pydantic import GetCoreSchemaHandler, ValidationError, ValidatorFunctionWrapHandler
from pydantic_core import CoreSchema, PydanticUseDefault, core_schema

E = TypeVar("E", bound=StrEnum)

UNKNOWN = "__unknown__"


@dataclass(frozen=True, slots=True)
class Validator:
    """``Annotated`` metadata running ``func`` before, after or around the field's own validation.

    The same as pydantic's ``BeforeValidator``/``AfterValidator``/``WrapValidator`` for a function
    without an ``info`` argument, minus the signature inspection those repeat for every field that
    uses them whenever a model's validator is built (about a sixth of the time it takes to build
    the validators of an agent's first ``initialize``, ``session/new`` and ``session/prompt``).
    """

    mode: Literal["before", "after", "wrap"]
    func: Callable[..., Any]

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        schema = handler(source)
        if self.mode == "before":
            return core_schema.no_info_before_validator_function(self.func, schema)
        if self.mode == "after":
            return core_schema.no_info_after_validator_function(self.func, schema)
        return core_schema.no_info_wrap_validator_function(self.func, schema)


def _default_on_error(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError:
        raise PydanticUseDefault() from None


def _skip_invalid_items(value: Any, handler: ValidatorFunctionWrapHandler) -> Any:
    try:
        return handler(value)
    except ValidationError as exc:
        if not isinstance(value, list):
            raise
        bad = {err["loc"][0] for err in exc.errors() if err["loc"] and isinstance(err["loc"][0], int)}
        if not bad:
            raise
        return handler([item for index, item in enumerate(value) if index not in bad])


def _null_as_empty_list(value: Any) -> Any:
    return [] if value is None else value


def _null_as_empty_dict(value: Any) -> Any:
    return {} if value is None else value


DEFAULT_ON_ERROR = Validator("wrap", _default_on_error)
SKIP_INVALID_ITEMS = Validator("wrap", _skip_invalid_items)
NULL_AS_EMPTY_LIST = Validator("before", _null_as_empty_list)
NULL_AS_EMPTY_DICT = Validator("before", _null_as_empty_dict)


def open_enum(enum: type[E]) -> Validator:
    """A before-validator: known values become ``enum`` members, other strings pass unchanged."""
    members = enum._value2member_map_

    def to_member(value: Any) -> Any:
        if isinstance(value, str) and not isinstance(value, enum):
            return members.get(value, value)
        return value

    return Validator("before", to_member)


def tag_discriminator(
    field: str, attribute: str, known: Iterable[str], *, untagged: str | None = None
) -> Callable[[Any], str]:
    """A pydantic ``Discriminator`` callable for a union tagged by ``field`` (``attribute`` in Python).

    A known tag selects its variant; a missing tag selects ``untagged`` when the union has an
    untagged member (stdio MCP servers, agent auth methods); anything else selects :data:`UNKNOWN`.
    """
    tags = frozenset(known)

    def discriminate(value: Any) -> str:
        tag = value.get(field) if isinstance(value, dict) else getattr(value, attribute, None)
        if tag is None and untagged is not None:
            return untagged
        if isinstance(tag, str) and tag in tags:
            return tag
        return UNKNOWN

    return discriminate


_KINDS: dict[str, type | tuple[type, ...]] = {"str": str, "bool": bool}


def _present(model: Any, entry: str) -> bool:
    name, _, kind = entry.partition(":")
    if name not in model.model_fields_set:
        return False
    return not kind or isinstance(getattr(model, name), _KINDS[kind])


Variant = tuple[str | None, Any, tuple[str, ...]]


def check_variants(model: Any, groups: tuple[tuple[Variant, ...], ...]) -> None:
    """Check that ``model`` matches one variant of each group, with that variant's required fields.

    Each group lists variants as ``(tag_attribute, tag_value, required)``; ``required`` names the
    attributes that must be present, each optionally suffixed ``:str`` or ``:bool`` when the variant
    needs that JSON type. A tagged variant is chosen when its tag attribute equals its value;
    otherwise the first untagged variant (``tag_attribute is None``) whose required attributes are
    all present. A group of tagged variants only, none of which matches, is an unknown variant:
    it is accepted as it is.
    """
    for group in groups:
        chosen = next(
            (req for attr, value, req in group if attr is not None and getattr(model, attr, None) == value),
            None,
        )
        if chosen is None:
            untagged = [req for attr, _, req in group if attr is None]
            if not untagged:
                continue
            chosen = next((req for req in untagged if all(_present(model, n) for n in req)), None)
            if chosen is None:
                alternatives = " or ".join("+".join(req) for req in untagged)
                raise ValueError(f"expected one of these field sets: {alternatives}")
        missing = [entry for entry in chosen if not _present(model, entry)]
        if missing:
            raise ValueError(f"missing or mistyped field(s) {', '.join(missing)} for this variant")


def presence_discriminator(*choices: tuple[str, str]) -> Callable[[Any], str]:
    """A ``Discriminator`` callable for an untagged union told apart by which key is present.

    ``choices`` are ``(key, tag)`` pairs tried in order; the key is both the wire name and the
    attribute name (``text`` versus ``blob`` for embedded resources).
    """

    def discriminate(value: Any) -> str:
        for key, tag in choices:
            present = key in value if isinstance(value, dict) else getattr(value, key, None) is not None
            if present:
                return tag
        return UNKNOWN

    return discriminate


def not_one_of(known: tuple[str, ...]) -> Validator:
    """An after-validator for a catch-all's tag: any string except the ``known`` tags."""
    refused = frozenset(known)

    def check(value: str) -> str:
        if value in refused:
            raise ValueError(f"{value!r} is a known variant: its own fields are required")
        return value

    return Validator("after", check)
