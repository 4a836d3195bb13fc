"""Base classes of the generated ACP models, and the typed-message convention the engine relies on.

Every model is an :class:`AcpModel`: fields are snake_case attributes with camelCase wire aliases,
either name is accepted on construction, unknown fields are kept and written back, and
:meth:`AcpModel.to_wire` gives the JSON value to send (unset fields omitted).

A *typed message* is a class with ``METHOD`` (the wire method name); a typed request also has
``RESPONSE`` (the model its result parses into). The generated params models are typed messages
(``PromptRequest.METHOD == "session/prompt"``, ``PromptRequest.RESPONSE is PromptResponse``), and
extension messages declared by users follow the same convention.
"""

# No ``from __future__ import annotations`` here: pydantic evaluates the annotations of these bases
# again for every generated subclass, which is far cheaper for real objects than for strings.

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, RootModel

__all__ = ["AcpJson", "AcpModel", "AcpNotification", "AcpRequest", "AcpResponse", "wire_name"]

_F = TypeVar("_F", bound=Callable[..., Any])


def construction_hook(init: _F) -> _F:
    """Mark an ``__init__`` override as run only when a model is built in Python, never when parsed.

    pydantic calls a model's own ``__init__`` on every parse unless the function carries its
    base-init marker; parsing sets every field from the input, so the hooks here have nothing to
    do there, and skipping them keeps the receive path fast. (Were the marker ever ignored, the
    hook would simply run on parse too: slower, still correct.)
    """
    init.__pydantic_base_init__ = True  # type: ignore[attr-defined]
    return init


def wire_name(attr: str) -> str:
    """The wire name of a model attribute: ``session_id`` -> ``sessionId``, ``meta`` -> ``_meta``.

    Every :class:`AcpModel` takes its aliases from this function rather than from ``Field(alias=...)``,
    so that type checkers, which know nothing of alias generators, see the snake_case names as the
    constructor's parameters (``PromptRequest(session_id=..., prompt=...)``) while the wire stays
    camelCase. The schema generator checks that it gives back every wire name of the schema.
    """
    if attr == "meta":
        return "_meta"
    head, *rest = attr.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


class AcpModel(BaseModel):
    """Base of every ACP model: snake_case attributes, camelCase on the wire, unknown fields kept.

    A subclass's fields get their wire names from :func:`wire_name` (``Field(alias=...)`` still
    overrides it); both spellings are accepted when parsing.
    """

    model_config = ConfigDict(
        alias_generator=wire_name,
        extra="allow",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        use_enum_values=False,
        protected_namespaces=(),
        # Build each model's validator on first use: importing 270 models stays cheap.
        defer_build=True,
    )

    #: Wire tags of a union variant (``type``, ``sessionUpdate``...), which :func:`tagging_init`
    #: marks as set so that ``TextContent(text="hi").to_wire()`` writes its ``type``.
    _acp_tags: ClassVar[tuple[str, ...]] = ()

    #: The ACP version the model belongs to: 1 for :mod:`acpio.schema`, 2 for :mod:`acpio.schema.v2`,
    #: ``None`` for models of your own (an extension's messages, which every version carries). A typed
    #: handler of a message of one version passes on the messages of a connection that negotiated
    #: another (see :class:`~acpio.jsonrpc.RequestHandler`).
    PROTOCOL_VERSION: ClassVar[int | None] = None

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.PROTOCOL_VERSION = _module_version(cls.__module__)

    def to_wire(self) -> dict[str, Any]:
        """The JSON object to send: wire names, unset fields omitted, unknown fields kept."""
        return self.model_dump(mode="json", by_alias=True, exclude_unset=True)

    def to_wire_json(self) -> bytes:
        """:meth:`to_wire` as compact JSON text, serialized in one step (the engine's fast path).

        Without pydantic's serialization warnings (a field assigned a value of another type after
        construction): checking for them costs about a sixth of the time, and the bytes are the same.
        """
        kind = type(self)
        writer = _WRITERS.get(kind)
        if writer is None:
            writer = _writer_of(kind)
        to_json, may_be_empty = writer
        # Nothing set (most answers of setters): pydantic writes {}, at the price of a whole walk.
        if may_be_empty and not self.__pydantic_fields_set__ and not self.__pydantic_extra__:
            return b"{}"
        return to_json(self, by_alias=True, exclude_unset=True, warnings=False)


def _writer_of(kind: type[AcpModel]) -> tuple[Callable[..., bytes], bool]:
    """``kind``'s serializer's ``to_json``, and whether an instance with nothing set writes ``{}``.

    Kept once the class is complete (its serializer final). An instance with no field set and no
    extra writes ``{}`` unless the class writes something of its own: a computed field, a model
    serializer. A class with a required field is never empty (the field is set), so its instances
    are not asked.
    """
    to_json: Callable[..., bytes] = kind.__pydantic_serializer__.to_json
    decorators = kind.__pydantic_decorators__
    may_be_empty = (
        not decorators.computed_fields
        and not decorators.model_serializers
        and not any(field.is_required() for field in kind.__pydantic_fields__.values())
    )
    writer = (to_json, may_be_empty)
    if kind.__pydantic_complete__ and len(_WRITERS) < 4096:  # the models are a few hundred
        _WRITERS[kind] = writer
    return writer


#: What :meth:`AcpModel.to_wire_json` needs of each model class written so far (see
#: :func:`_writer_of`): reading it from the instance or the class goes through pydantic's
#: ``__getattr__`` hooks each time.
_WRITERS: dict[type, tuple[Callable[..., bytes], bool]] = {}


@construction_hook
def tagging_init(self: AcpModel, /, **data: Any) -> None:
    """The ``__init__`` of a tagged union variant: validates, then marks its tags as set.

    Generated variants install it under ``if not TYPE_CHECKING`` (so the pydantic mypy plugin
    still types their constructors). Parsing never runs it: the tags come from the input.
    """
    self.__pydantic_validator__.validate_python(data, self_instance=self)
    self.__pydantic_fields_set__.update(self._acp_tags)


def _module_version(module: str) -> int | None:
    """The ACP version of the generated models in ``module`` (``None``: not acpio's models)."""
    if module.startswith("acpio.schema.v2."):
        return 2
    return 1 if module.startswith("acpio.schema.") else None


class AcpJson(RootModel[Any]):
    """Any JSON value, kept exactly as received (extension payloads, the inner result of ``mcp/message``).

    ``value.root`` is the decoded JSON; :meth:`to_wire` gives it back unchanged.
    """

    model_config = ConfigDict(defer_build=True)

    METHOD: ClassVar[str]

    def to_wire(self) -> Any:
        """The JSON value, unchanged."""
        return self.root


_R = TypeVar("_R", covariant=True)

if TYPE_CHECKING:

    class AcpRequest(AcpModel, Generic[_R]):
        """Params of a request: ``METHOD`` is its wire method, ``RESPONSE`` the model of its result."""

        METHOD: ClassVar[str]
        RESPONSE: ClassVar[type[AcpModel] | type[AcpJson]]

        def __acpio_response__(self) -> _R:
            """Never called: tells type checkers what the request's result parses into."""
            ...

else:

    class AcpRequest(AcpModel):
        """Params of a request: ``METHOD`` is its wire method, ``RESPONSE`` the model of its result.

        Type checkers see it generic in the type of its result (``PromptRequest`` is an
        ``AcpRequest[PromptResponse]``), so ``await cx.send_request(PromptRequest(...))`` is a
        ``PromptResponse`` to them; at run time ``AcpRequest[X]`` is ``AcpRequest`` itself, and
        ``RESPONSE`` names the type.
        """

        METHOD: ClassVar[str]
        RESPONSE: ClassVar[type[AcpModel] | type[AcpJson]]

        def __class_getitem__(cls, response: Any) -> Any:
            return cls


class AcpNotification(AcpModel):
    """Params of a notification: ``METHOD`` is its wire method."""

    METHOD: ClassVar[str]


class AcpResponse(AcpModel):
    """Result of a request. ``METHOD`` names the request it answers."""

    METHOD: ClassVar[str]
