"""How a command prints its result (kept apart: the root's options need it, cheaply)."""

from enum import StrEnum

__all__ = ["OutputFormat"]


class OutputFormat(StrEnum):
    """How a command prints its result."""

    table = "table"
    json = "json"
    ndjson = "ndjson"
    yaml = "yaml"
