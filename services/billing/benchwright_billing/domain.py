"""Billing rules: how costs add up. No I/O here."""

from dataclasses import dataclass


@dataclass(frozen=True)
class CostLine:
    """One cost-bearing fact: who, which run, from which source, how much."""

    account: str
    run_id: str
    source: str  # "model" | "sandbox" | "driver"
    micros: int
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0


SOURCES = ("model", "sandbox", "driver")


def validate(line: CostLine) -> CostLine:
    if line.source not in SOURCES:
        raise ValueError(f"unknown cost source {line.source!r}")
    if line.micros < 0:
        raise ValueError("a cost is never negative")
    return line
