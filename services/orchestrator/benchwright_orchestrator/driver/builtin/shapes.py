"""Small, pure predicates on JSON values, shared by the analyzer and the reference outputs."""

import re
from typing import Any

LETTERS = "ABCDEFGHIJ"

_NUMERIC = re.compile(
    r"^\s*-?\$?\s*(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\s*%?\s*$|^\s*-?\d+\s*/\s*\d+\s*$"
)


def describe_schema(rows: list[dict[str, Any]]) -> dict[str, str]:
    """Dotted path -> JSON type for the rows' fields, objects descended two levels deep."""
    seen: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for row in rows:
        for path, kind in _walk(row, "", 0):
            seen.setdefault(path, set()).add(kind)
            counts[path] = counts.get(path, 0) + 1
    return {
        path: "|".join(sorted(kinds)) + ("" if counts[path] == len(rows) else "?")
        for path, kinds in sorted(seen.items())
    }


def _walk(value: Any, path: str, depth: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if isinstance(value, dict) and depth < 2:
        for key, sub in value.items():
            child = f"{path}.{key}" if path else str(key)
            out.append((child, json_type(sub)))
            out.extend(_walk(sub, child, depth + 1))
    return out


def json_type(value: Any) -> str:
    """The JSON type of ``value``; arrays name their element types: ``array<string>``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        inner = sorted({json_type(v) for v in value})
        return f"array<{'|'.join(inner)}>" if inner else "array"
    return type(value).__name__


def is_numeric(value: Any) -> bool:
    """A number, or a string that is one ("18", "-3.5", "$1,234", "50%", "3/4")."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and _NUMERIC.match(value) is not None


def letter_index(expected: Any, count: int) -> int | None:
    """The 0-based choice ``expected`` names (a letter, "(B)", an index), if in range."""
    if isinstance(expected, bool):
        return None
    if isinstance(expected, int):
        index = expected
    elif isinstance(expected, str):
        text = expected.strip().strip("()").strip()
        if len(text) == 1 and text.upper() in LETTERS:
            index = LETTERS.index(text.upper())
        elif text.isdigit():
            index = int(text)
        else:
            return None
    else:
        return None
    return index if 0 <= index < count else None


def is_function_spec(value: Any) -> bool:
    """A function spec: ``{"name", ...}`` or an OpenAI tool ``{"function": {"name"}}``."""
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    return isinstance(value, dict) and isinstance(value.get("name"), str)


def is_expected_call(value: Any) -> bool:
    """One BFCL expected call: ``{func_name: {arg: [acceptable values]}}``."""
    if not (isinstance(value, dict) and len(value) == 1):
        return False
    args = next(iter(value.values()))
    return isinstance(args, dict) and all(isinstance(v, list) for v in args.values())
