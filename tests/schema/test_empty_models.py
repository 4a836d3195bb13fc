"""A model with nothing set writes ``{}`` without pydantic's walk (``AcpModel.to_wire_json``).

Most answers of setters (``session/set_mode``, ``session/cancel``...) are such models. The short cut
must write what pydantic writes, byte for byte, and step aside as soon as anything is set or the
class writes something of its own.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import computed_field, model_serializer

from acpio import schema as acp
from acpio.schema import v2
from acpio.schema.base import AcpModel


def pydantic_json(model: AcpModel) -> bytes:
    """What pydantic's serializer writes for ``model``, as the frames use it."""
    return model.__pydantic_serializer__.to_json(model, by_alias=True, exclude_unset=True)


def all_optional_classes() -> list[type[AcpModel]]:
    """Every generated model class (v1 and v2) that can be built with no argument."""
    found = []
    for module in (acp, v2):
        for name in module.__all__:
            cls = getattr(module, name)
            if isinstance(cls, type) and issubclass(cls, AcpModel) and cls is not AcpModel:
                try:
                    cls()
                except Exception:
                    continue
                found.append(cls)
    return found


CLASSES = all_optional_classes()


def test_there_are_classes_to_check_in_both_versions() -> None:
    assert acp.SetSessionModeResponse in CLASSES
    assert any(cls.PROTOCOL_VERSION == 2 for cls in CLASSES)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: f"{c.__module__.split('.')[-2]}.{c.__name__}")
def test_a_model_built_with_nothing_writes_what_pydantic_writes(cls: type[AcpModel]) -> None:
    for model in (cls(), cls.model_validate({}), cls.model_validate_json(b"{}")):
        assert model.to_wire_json() == pydantic_json(model)


def test_anything_set_is_written() -> None:
    empty = acp.SetSessionModeResponse()
    assert empty.to_wire_json() == b"{}"
    assert acp.SetSessionModeResponse(meta=None).to_wire_json() == b'{"_meta":null}'
    assert acp.SetSessionModeResponse(meta={"k": 1}).to_wire_json() == b'{"_meta":{"k":1}}'
    assigned = acp.SetSessionModeResponse()
    assigned.meta = {"later": True}
    assert assigned.to_wire_json() == b'{"_meta":{"later":true}}' == pydantic_json(assigned)
    unknown = acp.SetSessionModeResponse.model_validate({"vendorField": [1]})
    assert unknown.to_wire_json() == b'{"vendorField":[1]}' == pydantic_json(unknown)
    tagged = acp.TextContent(text="")  # a union variant: its tag counts as set
    assert tagged.to_wire_json() == pydantic_json(tagged)


class Computed(AcpModel):
    """A user's model that writes a field of its own."""

    note: str | None = None

    @computed_field  # type: ignore[prop-decorator]
    @property
    def always(self) -> int:
        return 1


class Serialized(AcpModel):
    """A user's model with its own serializer."""

    note: str | None = None

    @model_serializer
    def write(self) -> dict[str, Any]:
        return {"written": True}


@pytest.mark.parametrize("cls", [Computed, Serialized])
def test_a_class_that_writes_something_of_its_own_is_written_by_pydantic(cls: type[AcpModel]) -> None:
    model = cls()
    assert model.to_wire_json() == pydantic_json(model) != b"{}"
