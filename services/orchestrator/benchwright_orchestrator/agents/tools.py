"""The tools the platform's agent offers its model, and how each runs in the sandbox.

``TOOL_SCHEMAS`` is what the model sees (OpenAI ``tools``); ``run_tool`` carries out
one call over a ``TaskSandbox``. A call the agent got wrong (an unknown tool,
arguments that are not a JSON object, a field missing, text to replace that is not
there) is a ``ToolOutcome`` with ``is_error`` set and text saying what to fix: the
model reads it on its next turn, nothing raises.
"""

import json
import posixpath
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from benchwright_orchestrator.agents.ports import APP_DIR, TaskSandbox

__all__ = [
    "DEFAULT_SHELL_TIMEOUT_S",
    "MAX_SHELL_TIMEOUT_S",
    "SHELL_ARGV",
    "TOOL_NAMES",
    "TOOL_SCHEMAS",
    "ToolCallError",
    "ToolOutcome",
    "parse_arguments",
    "resolve_path",
    "run_tool",
]

# How ``shell`` runs a command: bash, which the task images of the field (Debian and
# Python bases) have, so that the pipelines and ``set -o pipefail`` agents write work.
SHELL_ARGV = ("bash", "-c")
DEFAULT_SHELL_TIMEOUT_S = 120.0
MAX_SHELL_TIMEOUT_S = 1800.0


def _function(name: str, description: str, properties: dict[str, Any]) -> dict[str, Any]:
    required = [k for k, v in properties.items() if not v.pop("optional", False)]
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": required,
                "additionalProperties": False,
            },
        },
    }


TOOL_SCHEMAS: list[dict[str, Any]] = [
    _function(
        "shell",
        f"Run a bash command in the task's environment (working directory {APP_DIR}). "
        "Returns its exit code, stdout and stderr.",
        {
            "command": {"type": "string", "description": "The command line to run."},
            "timeout_s": {
                "type": "number",
                "description": f"Seconds before the command is stopped "
                f"(default {DEFAULT_SHELL_TIMEOUT_S:g}).",
                "optional": True,
            },
        },
    ),
    _function(
        "write_file",
        f"Create or overwrite a file (a relative path is relative to {APP_DIR}; "
        "missing directories are made).",
        {
            "path": {"type": "string"},
            "content": {"type": "string", "description": "The file's whole new content."},
        },
    ),
    _function(
        "edit_file",
        "Replace one exact occurrence of `old` in a file with `new`. `old` must occur "
        "exactly once: include enough surrounding lines to make it unique.",
        {
            "path": {"type": "string"},
            "old": {"type": "string", "description": "The exact text to replace."},
            "new": {"type": "string", "description": "The text to put in its place."},
        },
    ),
    _function(
        "read_file",
        f"Read a text file (a relative path is relative to {APP_DIR}).",
        {"path": {"type": "string"}},
    ),
]
TOOL_NAMES: tuple[str, ...] = tuple(t["function"]["name"] for t in TOOL_SCHEMAS)


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """What a tool call gives back to the model."""

    output: str
    is_error: bool = False
    # The command's exit code (``shell`` only; None when it timed out).
    exit_code: int | None = None
    duration_ms: int = 0


class ToolCallError(ValueError):
    """The call cannot be carried out as the model wrote it; the message says why."""


def parse_arguments(raw: str) -> dict[str, Any]:
    """A call's arguments as a dict, or ``ToolCallError`` saying what is wrong with them."""
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError as exc:
        raise ToolCallError(f"arguments are not valid JSON ({exc.msg} at {exc.pos})") from exc
    if not isinstance(parsed, dict):
        raise ToolCallError("arguments must be a JSON object")
    return parsed


def resolve_path(path: str) -> str:
    """``path`` made absolute, a relative one under ``APP_DIR``, and normalised."""
    return posixpath.normpath(posixpath.join(APP_DIR, path))


def _text(arguments: Mapping[str, Any], name: str) -> str:
    if name not in arguments:
        raise ToolCallError(f"missing required argument {name!r}")
    value = arguments[name]
    if not isinstance(value, str):
        raise ToolCallError(f"argument {name!r} must be a string")
    return value


def _shell_output(stdout: str, stderr: str, exit_code: int | None) -> str:
    parts = [stdout.rstrip("\n")] if stdout else []
    if stderr:
        parts.append("[stderr]\n" + stderr.rstrip("\n"))
    parts.append("[exit code: timed out]" if exit_code is None else f"[exit code: {exit_code}]")
    return "\n".join(parts)


async def _shell(
    sandbox: TaskSandbox, arguments: Mapping[str, Any], budget_s: float
) -> ToolOutcome:
    command = _text(arguments, "command")
    asked = arguments.get("timeout_s", DEFAULT_SHELL_TIMEOUT_S)
    if isinstance(asked, bool) or not isinstance(asked, (int, float)) or asked <= 0:
        raise ToolCallError("argument 'timeout_s' must be a positive number")
    timeout_s = min(float(asked), MAX_SHELL_TIMEOUT_S, budget_s)
    try:
        result = await sandbox.exec([*SHELL_ARGV, command], cwd=APP_DIR, timeout_s=timeout_s)
    except TimeoutError:
        return ToolOutcome(f"the command did not finish within {timeout_s:g} s", is_error=True)
    return ToolOutcome(
        _shell_output(result.stdout, result.stderr, result.exit_code),
        exit_code=result.exit_code,
        duration_ms=result.duration_ms,
    )


async def _write_file(sandbox: TaskSandbox, arguments: Mapping[str, Any], _: float) -> ToolOutcome:
    path, content = resolve_path(_text(arguments, "path")), _text(arguments, "content")
    await sandbox.write(path, content)
    return ToolOutcome(f"wrote {len(content.encode())} bytes to {path}")


async def _edit_file(sandbox: TaskSandbox, arguments: Mapping[str, Any], _: float) -> ToolOutcome:
    path = resolve_path(_text(arguments, "path"))
    old, new = _text(arguments, "old"), _text(arguments, "new")
    if not old:
        raise ToolCallError("'old' is empty: give the exact text to replace")
    content = await sandbox.read(path)
    found = content.count(old)
    if found == 0:
        raise ToolCallError(
            f"'old' does not occur in {path}: read the file and copy the text exactly"
        )
    if found > 1:
        raise ToolCallError(
            f"'old' occurs {found} times in {path}: include more surrounding text so that "
            "it occurs exactly once"
        )
    await sandbox.write(path, content.replace(old, new, 1))
    return ToolOutcome(f"replaced 1 occurrence in {path}")


async def _read_file(sandbox: TaskSandbox, arguments: Mapping[str, Any], _: float) -> ToolOutcome:
    return ToolOutcome(await sandbox.read(resolve_path(_text(arguments, "path"))))


_Tool = Callable[[TaskSandbox, Mapping[str, Any], float], Awaitable[ToolOutcome]]
_TOOLS: dict[str, _Tool] = {
    "shell": _shell,
    "write_file": _write_file,
    "edit_file": _edit_file,
    "read_file": _read_file,
}
assert tuple(_TOOLS) == TOOL_NAMES


async def run_tool(
    sandbox: TaskSandbox,
    name: str,
    raw_arguments: str,
    *,
    budget_s: float = MAX_SHELL_TIMEOUT_S,
    clock: Callable[[], float] = time.monotonic,
) -> ToolOutcome:
    """Carry out one tool call; never raises for a mistake of the model's.

    ``budget_s`` caps a command's timeout (what is left of the attempt's wall time).
    An exception other than ``OSError`` from the sandbox (the sandbox is gone, the
    platform failed) propagates: the attempt cannot go on.
    """
    started = clock()
    tool = _TOOLS.get(name)
    try:
        if tool is None:
            raise ToolCallError(f"no tool named {name!r}; the tools are {', '.join(TOOL_NAMES)}")
        outcome = await tool(sandbox, parse_arguments(raw_arguments), budget_s)
    except ToolCallError as exc:
        outcome = ToolOutcome(f"error: {exc}", is_error=True)
    except OSError as exc:
        what = exc.strerror or type(exc).__name__
        where = f": {exc.filename}" if exc.filename else ""
        outcome = ToolOutcome(f"error: {what}{where}", is_error=True)
    if outcome.duration_ms:
        return outcome
    elapsed_ms = int((clock() - started) * 1000)
    return ToolOutcome(outcome.output, outcome.is_error, outcome.exit_code, elapsed_ms)
