"""Money: integer cents inside the platform, dollars at the API.

Floats never accumulate: a cost is converted to cents once, at the edge, with
half-up rounding, and sub-cent amounts are kept as micro-dollars where they
matter (a single cheap model call costs far less than a cent).
"""

from decimal import ROUND_HALF_UP, Decimal

MICROS_PER_CENT = 10_000


def dollars_to_cents(dollars: float | Decimal | str) -> int:
    """Convert a dollar amount to whole cents, rounding half up."""
    return int((Decimal(str(dollars)) * 100).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def cents_to_dollars(cents: int) -> float:
    """Convert whole cents to dollars for display at the API."""
    return float(Decimal(cents) / 100)


def dollars_to_micros(dollars: float | Decimal | str) -> int:
    """Convert a dollar amount to micro-dollars (1e-6 USD), rounding half up."""
    return int((Decimal(str(dollars)) * 1_000_000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def micros_to_cents(micros: int) -> int:
    """Round micro-dollars to whole cents, half up."""
    return int((Decimal(micros) / MICROS_PER_CENT).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def money(cents: int, currency: str = "USD") -> dict[str, int | str]:
    """The API's money object."""
    return {"amount_cents": cents, "currency": currency}
