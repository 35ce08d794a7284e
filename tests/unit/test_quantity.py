"""Kubernetes quantities: exact parsing, canonical printing, arithmetic and pydantic use."""

from fractions import Fraction

import pytest
from pydantic import BaseModel, ValidationError

from gpupool.core.quantity import Quantity, QuantityError, parse_quantity, sum_quantities


@pytest.mark.parametrize(
    ("text", "value", "canonical"),
    [
        ("65", Fraction(65), "65"),
        ("4k", Fraction(4000), "4k"),
        ("15Gi", Fraction(15 * 2**30), "15Gi"),
        ("500m", Fraction(1, 2), "500m"),
        ("1.5e3", Fraction(1500), "1500"),
        ("1e3", Fraction(1000), "1e3"),
        ("1024Mi", Fraction(2**30), "1Gi"),
        ("1.5Gi", Fraction(3 * 2**29), "1536Mi"),
        ("0.5Ki", Fraction(512), "512"),
        ("0.1Ki", Fraction(512, 5), "102400m"),
        ("1000m", Fraction(1), "1"),
        ("2000", Fraction(2000), "2k"),
        ("0", Fraction(0), "0"),
        ("-5", Fraction(-5), "-5"),
        (".5", Fraction(1, 2), "500m"),
        ("0.0000000001", Fraction(1, 10**9), "1n"),
    ],
)
def test_parse_and_print(text: str, value: Fraction, canonical: str) -> None:
    quantity = parse_quantity(text)
    assert quantity.value == value
    assert quantity.canonical() == canonical
    assert parse_quantity(canonical).value == value


@pytest.mark.parametrize("text", ["abc", "", "1.2.3", "15GB", "Gi", "1e", "--1", "1 Gi", "nan"])
def test_rejects_non_quantities(text: str) -> None:
    with pytest.raises(QuantityError, match="not a quantity"):
        parse_quantity(text)


def test_arithmetic_is_exact() -> None:
    total = parse_quantity("100m") + parse_quantity("200m")
    assert total == parse_quantity("300m")
    assert parse_quantity("16Gi") - parse_quantity("1Gi") == parse_quantity("15Gi")
    assert parse_quantity("65") * 4 == parse_quantity("260")
    assert parse_quantity("1Gi") > parse_quantity("1G")


def test_a_sum_from_zero_takes_the_format_of_what_is_added() -> None:
    total = sum((parse_quantity("16Gi"), parse_quantity("32Gi")), Quantity(0))
    assert total.canonical() == "48Gi"
    assert (parse_quantity("1") + parse_quantity("1Ki")).canonical() == "1025"


def test_numbers_parse() -> None:
    assert Quantity.parse(3).canonical() == "3"
    assert Quantity.parse(0.25).canonical() == "250m"
    with pytest.raises(QuantityError):
        Quantity.parse(True)


def test_pydantic_field_round_trip() -> None:
    class Holder(BaseModel):
        q: Quantity

    assert Holder(q="15Gi").model_dump() == {"q": "15Gi"}
    assert Holder.model_validate_json('{"q": 65}').q == 65
    with pytest.raises(ValidationError, match="not a quantity"):
        Holder(q="abc")


def test_sums_and_differences_stay_exact_at_nano_precision() -> None:
    # Sums skip the rounding that parsing does; they must equal what parsing the result gives.
    a, b = Quantity.parse("1.000000001"), Quantity.parse("2500m")
    assert a + b == Quantity.parse("3.500000001")
    assert b - a == Quantity.parse("1.499999999")
    assert -(a + b) == Quantity.parse("-3.500000001")
    assert (Quantity.parse("0") + Quantity.parse("24Gi")).canonical() == "24Gi"


def test_a_parsed_text_is_shared_but_bad_text_raises_every_time() -> None:
    assert Quantity.parse("16Gi") is Quantity.parse("16Gi")
    for _ in range(2):
        with pytest.raises(QuantityError):
            Quantity.parse("16 gigs")


@pytest.mark.parametrize(
    "texts",
    [
        ["8", "16Gi", "500m", "1.000000001", "0", "24Gi"],
        ["0", "0Gi", "1Ki", "-1Ki", "250m"],
        ["1e3", "2k", "0.5", "-0.5"],
        [],
    ],
)
def test_sum_quantities_is_the_chain_of_additions(texts: list[str]) -> None:
    # sum_quantities adds whole values as ints and the rest as fractions: the value and the
    # format (which a zero total takes from what is added next) must be those `+` gives.
    quantities = [parse_quantity(text) for text in texts]
    chained = Quantity(0)
    for quantity in quantities:
        chained = chained + quantity
    summed = sum_quantities(quantities)
    assert (summed.value, summed.canonical()) == (chained.value, chained.canonical())


@pytest.mark.parametrize(
    ("text", "truth"), [("0", False), ("0Gi", False), ("1n", True), ("-1", True), ("8", True)]
)
def test_a_quantity_is_true_when_it_is_not_zero(text: str, truth: bool) -> None:
    quantity = parse_quantity(text)
    assert bool(quantity) is truth
    assert bool(quantity + Quantity(0)) is truth  # the same for a sum's result


@pytest.mark.parametrize(
    ("left", "right"),
    [("8", "8"), ("8", "9"), ("1Gi", "1024Mi"), ("500m", "1"), ("1.5", "1500m"), ("0", "-1")],
)
def test_comparisons_are_those_of_the_exact_values(left: str, right: str) -> None:
    # Whole values compare as ints, the rest as fractions: either way as the exact values do.
    a, b = parse_quantity(left), parse_quantity(right)
    assert (a == b, a < b, b < a) == (a.value == b.value, a.value < b.value, b.value < a.value)
