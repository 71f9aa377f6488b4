"""Dockerfile syntax: instructions, continued lines, comments and variables.

Only what reading a Dockerfile as a plan needs (``environment.py``): parser
directives (``# escape=``), line continuations, comments (also inside a
continuation), ``$VAR`` / ``${VAR:-default}`` / ``${VAR:+alternative}``, and the
JSON (``["a", "b"]``) and shell forms of arguments. Heredocs are not parsed.
"""

import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass

VARIABLE = re.compile(r"\\\$|\$\{(\w+)(?::([-+])([^}]*))?\}|\$(\w+)")
DIRECTIVE = re.compile(r"^#\s*([A-Za-z]+)\s*=\s*(.*?)\s*$")


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction: its first line's number, keyword and joined arguments."""

    line: int
    keyword: str
    args: str
    text: str


class DockerfileError(ValueError):
    """A Dockerfile step the local backend cannot honour: its line, why, and a code."""

    def __init__(
        self, line: int, text: str, why: str, code: str = "unsupported_dockerfile_step"
    ) -> None:
        self.line = line
        self.text = text
        self.why = why
        self.code = code
        super().__init__(f"line {line}: {text}: {why}" if line else why)


def parse_dockerfile(text: str) -> list[Instruction]:
    """The instructions of a Dockerfile: comments dropped, continued lines joined."""
    lines = text.splitlines()
    escape = "\\"
    index = 0
    # Parser directives come first, before any comment, blank line or instruction.
    while index < len(lines) and (found := DIRECTIVE.match(lines[index].strip())):
        if found.group(1).lower() == "escape":
            escape = found.group(2)
            if escape not in ("\\", "`"):
                raise DockerfileError(
                    index + 1, lines[index], "escape must be \\ or `", "dockerfile_syntax"
                )
        index += 1
    instructions: list[Instruction] = []
    while index < len(lines):
        start = index
        line = lines[index]
        index += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = [line]
        while parts[-1].rstrip().endswith(escape) and index <= len(lines):
            parts[-1] = parts[-1].rstrip()[: -len(escape)]
            # Inside a continuation, comment lines and blank lines are dropped.
            while index < len(lines) and (
                not lines[index].strip() or lines[index].lstrip().startswith("#")
            ):
                index += 1
            if index == len(lines):
                break
            parts.append(lines[index])
            index += 1
        joined = "".join(parts).strip()
        keyword, *rest = re.split(r"\s+", joined, maxsplit=1)
        args = rest[0] if rest else ""
        instructions.append(
            Instruction(line=start + 1, keyword=keyword.upper(), args=args.strip(), text=joined)
        )
    return instructions


def substitute(value: str, variables: Mapping[str, str]) -> str:
    """``$NAME``, ``${NAME}``, ``${NAME:-default}`` and ``${NAME:+alternative}``, as
    Docker expands them; ``\\$`` is a literal dollar; unset names expand to nothing."""

    def expand(match: re.Match[str]) -> str:
        if match.group(0) == "\\$":
            return "$"
        name = match.group(1) or match.group(4)
        current = variables.get(name, "")
        word = substitute(match.group(3) or "", variables)
        if match.group(2) == "-":
            return current or word
        if match.group(2) == "+":
            return word if current else ""
        return current

    return VARIABLE.sub(expand, value)


def json_or_words(args: str) -> list[str]:
    if args.startswith("["):
        try:
            parsed = json.loads(args)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and all(isinstance(item, str) for item in parsed):
            return parsed
    return args.split()


def split_words(step: Instruction) -> list[str]:
    try:
        return shlex.split(step.args)
    except ValueError as exc:
        raise DockerfileError(step.line, step.text, str(exc), "dockerfile_syntax") from None
