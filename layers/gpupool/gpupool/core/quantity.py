"""Kubernetes resource quantities ("65", "4k", "15Gi", "500m", "1.5e3"), parsed exactly.

Role: the one place that turns quantity strings into exact numbers and back into Kubernetes'
canonical text. Values are held as `fractions.Fraction`, so arithmetic on capacities never
loses precision; printing follows apimachinery's rules (keep the input's format — binary SI,
decimal SI or decimal exponent — and use the largest suffix that keeps the mantissa an
integer). Like apimachinery, values are rounded up to nano precision.

Must not: read files, log, or know what a quantity measures.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import Enum
from fractions import Fraction
from functools import lru_cache, total_ordering
from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, PlainSerializer
from pydantic_core import core_schema

__all__ = ["Quantity", "QuantityError", "QuantityField", "parse_quantity", "sum_quantities"]


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity."""


class _Format(Enum):
    BINARY_SI = "BinarySI"
    DECIMAL_SI = "DecimalSI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXP = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_BY_EXP = {exp: suffix for suffix, exp in _BINARY.items()}

_PATTERN = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<binary>Ki|Mi|Gi|Ti|Pi|Ei)|(?P<exponent>[eE][+-]?\d+)|(?P<decimal>[numkMGTPE]?))$"
)
_NANO = Fraction(1, 10**9)


def _round_up_to_nano(value: Fraction) -> Fraction:
    scaled = value / _NANO
    ceiled = -((-scaled.numerator) // scaled.denominator)
    return Fraction(ceiled) * _NANO


@total_ordering
class Quantity:
    """An exact, immutable Kubernetes quantity. Compare and add like numbers."""

    # `_whole`: the value as an int when it is whole (almost every quantity a cluster reports),
    # else None — summing, comparing and testing thousands of them need not go through
    # Fraction's Python-level methods.
    __slots__ = ("_format", "_value", "_whole")

    def __init__(self, value: Fraction | int = 0, fmt: _Format = _Format.DECIMAL_SI) -> None:
        exact = _round_up_to_nano(Fraction(value))
        self._value = exact
        self._whole = exact.numerator if exact.denominator == 1 else None
        self._format = fmt

    # ---- construction -------------------------------------------------------------------
    @classmethod
    def parse(cls, text: str | int | float | Quantity) -> Quantity:
        """Parse a quantity; raise QuantityError naming the bad text."""
        if isinstance(text, Quantity):
            return text
        if isinstance(text, bool):
            raise QuantityError(f"not a quantity: {text!r}")
        if isinstance(text, int):
            return cls(text)
        if isinstance(text, float):
            if text != text or text in (float("inf"), float("-inf")):
                raise QuantityError(f"not a quantity: {text!r}")
            return cls(Fraction(str(text)))
        if not isinstance(text, str):
            raise QuantityError(f"not a quantity: {text!r}")
        return _parse_text(text)

    @classmethod
    def _from_text(cls, text: str) -> Quantity:
        match = _PATTERN.match(text.strip())
        if not match or not text.strip():
            raise QuantityError(f"not a quantity: {text!r} (expected e.g. '65', '500m', '15Gi', '1.5e3')")
        number = Fraction(match["number"])
        if match["sign"] == "-":
            number = -number
        if match["binary"]:
            return cls(number * 2 ** _BINARY[match["binary"]], _Format.BINARY_SI)
        if match["exponent"]:
            exp = int(match["exponent"][1:])
            if abs(exp) > 30:
                raise QuantityError(f"quantity exponent out of range: {text!r}")
            return cls(number * Fraction(10) ** exp, _Format.DECIMAL_EXPONENT)
        return cls(number * Fraction(10) ** _DECIMAL[match["decimal"] or ""], _Format.DECIMAL_SI)

    @classmethod
    def from_number(cls, value: Fraction | int | float, *, binary: bool = False) -> Quantity:
        """A quantity from a number (floats through their shortest decimal text)."""
        exact = Fraction(str(value)) if isinstance(value, float) else Fraction(value)
        return cls(exact, _Format.BINARY_SI if binary else _Format.DECIMAL_SI)

    # ---- numbers ------------------------------------------------------------------------
    @property
    def value(self) -> Fraction:
        return self._value

    def __float__(self) -> float:
        return float(self._value)

    def _result_format(self, other: Quantity) -> _Format:
        # Like apimachinery's Add on a zero Quantity{}: a sum that starts from zero takes the
        # format of what is added, so summed VRAM prints as "48Gi", not as plain bytes.
        return other._format if self._value == 0 else self._format

    @classmethod
    def _exact(cls, value: Fraction, fmt: _Format) -> Quantity:
        """A quantity of a value already at nano precision: sums and differences of quantities
        are, and skipping the rounding makes summing a pool's thousands of nodes cheap."""
        made = object.__new__(cls)
        made._value = value
        made._whole = value.numerator if value.denominator == 1 else None
        made._format = fmt
        return made

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity._exact(self._value + other._value, self._result_format(other))

    def __sub__(self, other: Quantity) -> Quantity:
        return Quantity._exact(self._value - other._value, self._result_format(other))

    def __mul__(self, factor: int | Fraction) -> Quantity:
        return Quantity(self._value * factor, self._format)

    __rmul__ = __mul__

    def __neg__(self) -> Quantity:
        return Quantity._exact(-self._value, self._format)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            if self._whole is not None and other._whole is not None:
                return self._whole == other._whole
            return self._value == other._value
        if isinstance(other, int | Fraction):
            return self._value == other
        return NotImplemented

    def __lt__(self, other: Quantity | int | Fraction) -> bool:
        if isinstance(other, Quantity):
            if self._whole is not None and other._whole is not None:
                return self._whole < other._whole
            return self._value < other._value
        return self._value < other

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        whole = self._whole
        return whole != 0 if whole is not None else self._value != 0

    # ---- text ---------------------------------------------------------------------------
    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"

    def canonical(self) -> str:
        """Kubernetes' canonical text for this value in its format."""
        value = self._value
        sign = "-" if value < 0 else ""
        value = abs(value)
        if value == 0:
            return "0"
        if self._format is _Format.BINARY_SI and value.denominator == 1:
            mantissa, exp = value.numerator, 0
            while exp < 60 and mantissa % 1024 == 0:
                mantissa //= 1024
                exp += 10
            if exp > 0 or mantissa < 1024:
                return f"{sign}{mantissa}{_BINARY_BY_EXP.get(exp, '')}"
        # Decimal: smallest exponent (multiple of 3, >= -9) keeping an integer mantissa, then grow.
        exp = -9
        mantissa_fraction = value / Fraction(10) ** exp
        while exp < 0 and (mantissa_fraction / 1000).denominator == 1:
            mantissa_fraction /= 1000
            exp += 3
        mantissa = int(mantissa_fraction)
        if exp >= 0:
            while exp < 18 and mantissa % 1000 == 0:
                mantissa //= 1000
                exp += 3
        if self._format is _Format.DECIMAL_EXPONENT:
            return f"{sign}{mantissa}" + (f"e{exp}" if exp else "")
        return f"{sign}{mantissa}{_DECIMAL_BY_EXP[exp]}"

    # ---- pydantic -----------------------------------------------------------------------
    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        def validate(raw: Any) -> Quantity:
            try:
                # Text first: a listed object's quantities are, and each is parsed once per text.
                return _parse_text(raw) if type(raw) is str else cls.parse(raw)
            except QuantityError as exc:
                raise ValueError(str(exc)) from None

        return core_schema.no_info_plain_validator_function(
            validate,
            serialization=core_schema.plain_serializer_function_ser_schema(lambda q: q.canonical()),
            json_schema_input_schema=core_schema.union_schema(
                [core_schema.int_schema(), core_schema.str_schema()]
            ),
        )


@lru_cache(maxsize=4096)
def _parse_text(text: str) -> Quantity:
    """Parsed once per distinct text: a cluster's thousands of objects repeat a few dozen
    quantities ("8", "16Gi", "125"), and exact parsing costs ~0.2 ms each. Safe to share:
    a Quantity is immutable. Errors are not cached (they raise every time)."""
    return Quantity._from_text(text)


def sum_quantities(quantities: Iterable[Quantity]) -> Quantity:
    """Zero plus each of `quantities` in turn, in one pass: the value and the format `+` gives
    (a sum that is zero takes the format of what is added next), adding whole values as ints
    (a pool's thousands of nodes are summed per decision)."""
    total: int | Fraction = 0
    fmt = _Format.DECIMAL_SI
    for quantity in quantities:
        if total == 0:
            fmt = quantity._format
        whole = quantity._whole
        total = total + (whole if whole is not None else quantity._value)
    return Quantity._exact(Fraction(total), fmt)


def parse_quantity(text: str | int | float | Quantity) -> Quantity:
    """Parse a Kubernetes quantity exactly (see Quantity.parse)."""
    return Quantity.parse(text)


# A model field holding a quantity; serialises to canonical text.
QuantityField = Annotated[Quantity, PlainSerializer(lambda q: q.canonical(), return_type=str)]
