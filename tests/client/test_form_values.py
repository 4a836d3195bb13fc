"""Form values given as data (code, ``--answer``) or typed at the menu: what each one stands for."""

from __future__ import annotations

import math

import pytest

from acpio.client import FormField
from acpio.client.forms import fill_form


def choice(*values: str) -> FormField:
    options = tuple((value, value) for value in values)
    return FormField("retries", "choice", "Retries", None, True, None, options=options)


def field(kind: str) -> FormField:
    return FormField("value", kind, "Value", None, True, None)


def fill(item: FormField, value: object) -> tuple[dict[str, object], list[str]]:
    values, problems = fill_form([item], {item.name: value}, missing=lambda name: f"{name} missing")
    return dict(values), problems


@pytest.mark.parametrize("given", ["0", "1", "2"])
def test_a_choice_whose_values_are_numbers_is_picked_by_value(given: str) -> None:
    assert fill(choice("0", "1", "2"), given) == ({"retries": given}, [])


def test_a_menu_number_picks_a_choice_only_when_typed_and_no_value_matches() -> None:
    numbered = choice("0", "1", "2")
    assert numbered.parse("1", typed=True) == "1"  # the value first, even at the menu
    assert numbered.parse(" 3 ", typed=True) == "2"  # no value "3": the third choice
    named = choice("low", "high")
    assert named.parse("2", typed=True) == "high"
    assert fill(named, "2") == ({}, ["retries '2' is not one of low, high"])  # data is never a menu number


def test_text_given_as_data_keeps_its_blanks_and_typed_text_loses_them() -> None:
    assert fill(field("string"), "  Ada ") == ({"value": "  Ada "}, [])
    assert field("string").parse("  Ada \n", typed=True) == "Ada"


@pytest.mark.parametrize("kind", ["integer", "number"])
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, "nan", "inf", "1e400"])
def test_a_number_that_is_not_finite_is_refused(kind: str, value: object) -> None:
    values, [problem] = fill(field(kind), value)
    assert values == {}
    assert problem.startswith("value ")


@pytest.mark.parametrize(
    "value",
    [10**400, -(10**400), 2**53, "9007199254740992", 1e300],
    ids=["10**400", "-10**400", "2**53", "2**53 as text", "1e300"],
)
def test_an_integer_beyond_what_json_peers_read_exactly_is_refused(value: object) -> None:
    assert fill(field("integer"), value) == (
        {},
        ["value takes a number between -9007199254740991 and 9007199254740991"],
    )
    assert fill(field("integer"), 2**53 - 1) == ({"value": 2**53 - 1}, [])


def test_a_number_beyond_a_float_is_refused() -> None:
    values, [problem] = fill(field("number"), 10**400)
    assert values == {}
    assert problem.startswith("value takes a number between")
