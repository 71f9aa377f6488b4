"""Assembling a ``task_impl.py``: docstring, imports, settings, then the kind's body.

The output is a pure function of its inputs (no clock, no randomness, dict order
fixed by the analysis), because the scorer's hash is its identity.
"""

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

from benchwright_orchestrator.driver.builtin.analyze import Analysis
from benchwright_orchestrator.driver.builtin.guidance import Directives, describe

Setting = tuple[str, str | int | float | bool | None, str]  # name, value, comment

DOC_WIDTH = 88


@dataclass(frozen=True)
class Template:
    """One kind's scorer: how to set it up from the analysis, and its fixed body."""

    kind: str
    title: str
    summary: str
    # Standard-library imports, sorted the way isort sorts them.
    imports: tuple[str, ...]
    # Which guidance directives this kind acts on (names of ``Directives`` fields).
    directives: tuple[str, ...]
    # Which roles of ``Analysis.fields`` the body needs.
    required: tuple[str, ...]
    settings: Callable[[dict[str, str], Directives], list[Setting]]
    body: str


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
    settings = template.settings(analysis.fields, directives)
    doc = [template.title + ".", "", *_wrap(template.summary), ""]
    doc += _wrap(
        "Written by Benchwright's builtin Driver (deterministic, no model) from the shape "
        "of the dataset's rows; runs in the work sandbox with only the standard library "
        "and ``bench_task``."
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
    lines = ['"""' + _docstring(doc) + '"""', ""]
    lines += list(template.imports)
    lines += ["", "from bench_task import BenchTask", ""]
    lines += ["# Set by the Driver from the dataset's fields and the guidance."]
    for name, value, comment in settings:
        line = f"{name} = {_literal(value)}"
        if not comment:
            lines.append(line)
        elif len(line) + len(comment) + 4 <= DOC_WIDTH:
            lines.append(f"{line}  # {comment}")
        else:  # a long field name: the comment goes above
            lines += [f"# {comment}", line]
    return "\n".join(lines) + "\n\n" + template.body.lstrip("\n")


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
