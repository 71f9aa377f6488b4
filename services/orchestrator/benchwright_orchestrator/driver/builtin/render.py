"""Making a ``task_impl.py`` from a kind's scorer file: its settings, and a docstring
that records the dataset and the guidance.

The scorer itself is a real Python file in ``benchwright_shared.scorers`` (one per
kind), read as text. Writing one for a dataset changes exactly two things in it:

* the settings block: each constant's value is replaced by the one the Driver found
  (the dataset's field names, the guidance's directives); the comments stay, but for
  the block's first line, which says whose values they are;
* the module docstring: the file's own text, then what the Driver saw (the rows'
  schema, the fields it uses) and the person's guidance, verbatim.

The output is a pure function of its inputs (no clock, no randomness, dict order
fixed by the analysis), because the scorer's hash is its identity.
"""

import ast
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from benchwright_orchestrator.driver.builtin.analyze import Analysis
from benchwright_orchestrator.driver.builtin.guidance import Directives, describe
from benchwright_shared.scorers import (
    SETTINGS_START,
    parse_setting,
    scorer_source,
    split_settings,
)

Value = str | int | float | bool | None

DOC_WIDTH = 88
SETTINGS_LINE = f"{SETTINGS_START}: set by the builtin Driver for this dataset and guidance --\n"


@dataclass(frozen=True)
class Template:
    """One kind's scorer: its file, and how to set it up from the analysis."""

    kind: str
    # The file in ``benchwright_shared.scorers`` this kind's scorers are made from.
    scorer: str
    # Which guidance directives this kind acts on (names of ``Directives`` fields).
    directives: tuple[str, ...]
    # Which roles of ``Analysis.fields`` the scorer needs.
    required: tuple[str, ...]
    # The value of every constant in the file's settings block.
    settings: Callable[[dict[str, str], Directives], dict[str, Value]]


def render(
    template: Template, analysis: Analysis, guidance: str | None, directives: Directives
) -> str:
    """The full source of ``task_impl.py``."""
    missing = [role for role in template.required if role not in analysis.fields]
    if missing:
        raise ValueError(
            f"a {template.kind} scorer needs the dataset's {', '.join(missing)} field(s); "
            f"the analysis found {analysis.fields or 'none'}"
        )
    parts = split_settings(scorer_source(template.scorer))
    settings = _settings(parts.lines, template.settings(analysis.fields, directives))
    doc = _wrap(
        "Written by Benchwright's builtin Driver (deterministic, no model) from the shape "
        "of the dataset's rows."
    )
    doc += ["", "Rows (sampled schema):"]
    doc += [f"    {path}: {kind}" for path, kind in analysis.schema.items()]
    fields = ", ".join(f"{role}={name!r}" for role, name in analysis.fields.items())
    doc += ["", f"Fields: {fields or 'none'}."]
    if guidance is None or not guidance.strip():
        doc += ["", "Guidance: none."]
    else:
        applied = describe(directives, template.directives)
        doc += ["", "Guidance from a person, verbatim between the rules:", "-" * 20]
        doc += [_VERBATIM + guidance, "-" * 20]
        doc += _wrap(
            "Directives acted on: "
            + ("; ".join(applied) if applied else "none recognised for this kind")
            + "."
        )
    # The file's marker says whose its values are; the written one says they are the Driver's.
    head = parts.head[: parts.head.rstrip("\n").rfind("\n") + 1] + SETTINGS_LINE
    return _with_docstring_lines(head, _docstring(doc)) + "".join(settings) + parts.tail


def _with_docstring_lines(head: str, added: str) -> str:
    """``head`` (the file up to its settings) with ``added`` at the end of its docstring,
    after a blank line. The file's docstring must close on a line of its own."""
    module = ast.parse(head)
    first = module.body[0] if module.body else None
    if not (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
        and first.end_lineno is not None
    ):
        raise ValueError("a scorer file must start with its docstring")
    lines = head.splitlines(keepends=True)
    closing = first.end_lineno - 1
    if lines[closing] != '"""\n':
        raise ValueError("a scorer's docstring must close with a line of its own")
    return "".join(lines[:closing]) + "\n" + added + "".join(lines[closing:])


def _settings(lines: tuple[str, ...], values: dict[str, Value]) -> list[str]:
    """The settings block's lines with each constant set to ``values[name]``.

    Comment lines and each constant's comment are kept; a comment that would make the
    line too long goes on a line of its own above it. Every constant in the block must
    get a value, and every value must have its constant.
    """
    out: list[str] = []
    seen: list[str] = []
    for line in lines:
        setting = parse_setting(line)
        if setting is None:
            out.append(line)
            continue
        name, value = setting
        if name not in values:
            raise ValueError(f"the scorer's setting {name} has no value")
        seen.append(name)
        # Column offsets count UTF-8 bytes.
        rest = line.encode()[value.end_col_offset :].decode().strip()
        assignment = f"{name} = {_literal(values[name])}"
        if not rest:
            out.append(assignment + "\n")
        elif len(assignment) + len(rest) + 2 <= DOC_WIDTH:
            out.append(f"{assignment}  {rest}\n")
        else:  # a long field name: the comment goes above
            out += [rest + "\n", assignment + "\n"]
    unknown = sorted(set(values) - set(seen))
    if unknown:
        raise ValueError(f"the scorer has no setting {', '.join(unknown)}")
    return out


_VERBATIM = "\0verbatim\0"


def _docstring(lines: list[str]) -> str:
    """The docstring's source: prose escaped as needed, guidance escaped to stay verbatim."""
    out = []
    for line in lines:
        if line.startswith(_VERBATIM):
            out.append(_verbatim(line[len(_VERBATIM) :]))
        else:
            out.append("\\\n".join(_break(_escape(line).rstrip())))
    return "\n".join(out) + "\n"


def _verbatim(text: str) -> str:
    """``text`` as docstring source whose value is exactly ``text``.

    Backslashes, quotes and control characters are escaped; trailing spaces become
    ``\\x20``; long lines are broken with a backslash-newline, which Python drops
    from the value. The result is lint-clean (no long lines, no trailing spaces).
    """
    out = []
    for line in text.split("\n"):
        stripped = line.rstrip(" ")
        escaped = _escape(stripped) + "\\x20" * (len(line) - len(stripped))
        out.append("\\\n".join(_break(escaped)))
    return "\n".join(out)


def _escape(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f\t]", lambda m: _control(m.group()), text)


def _control(char: str) -> str:
    return {"\t": "\\t", "\r": "\\r"}.get(char, f"\\x{ord(char):02x}")


# One character of docstring source: an escape sequence, or a plain character.
_ATOM = re.compile(r"\\x[0-9a-f]{2}|\\.|.", re.DOTALL)


def _break(line: str) -> list[str]:
    """Pieces of ``line`` no wider than ``DOC_WIDTH``, cut after a space when one is in
    the second half of the piece, and never inside an escape sequence."""
    pieces: list[str] = []
    current: list[str] = []
    width = 0
    for atom in _ATOM.findall(line):
        if width + len(atom) > DOC_WIDTH:
            spaces = [i for i, a in enumerate(current) if a == " "]
            cut = spaces[-1] + 1 if spaces and spaces[-1] >= len(current) // 2 else len(current)
            pieces.append("".join(current[:cut]))
            current = current[cut:]
            width = sum(map(len, current))
        current.append(atom)
        width += len(atom)
    return [*pieces, "".join(current)]


def _wrap(text: str) -> list[str]:
    words, lines, current = text.split(), [], ""
    for word in words:
        if current and len(current) + 1 + len(word) > DOC_WIDTH:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    return [*lines, current] if current else lines


def _literal(value: str | int | float | bool | None) -> str:
    """Python source for a setting; strings as JSON, which is valid Python too."""
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)
