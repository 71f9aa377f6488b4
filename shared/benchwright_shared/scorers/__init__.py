"""The scorers Benchwright ships, one real Python file each, read as text.

A scorer is a ``task_impl.py``: it runs in a work sandbox beside the runtime's
``bench_task`` module (a model-graded one beside ``bench_judge`` too), never in a
service, so nothing imports these files. The registry ships them as the built-in
catalog's scorers (and ``built_runner`` as the runner every BUILT subset's generated
code ends in); the orchestrator's builtin Driver writes its scorer for a dataset from
the file of that dataset's kind. The model-graded ones (``JUDGE_SCORERS``) keep the
judge's prompt, rubric and panel mode in their settings block (where a value may
span lines).
Ruff checks them like any other code, and ``scripts/test.sh`` type-checks them
strictly beside ``bench_task``.

A kind's scorer keeps its settings as module-level constants between two marker
lines::

    # -- settings: ...
    PROMPT_FIELD = "prompt"  # in input: the signature and docstring to complete
    MAX_TOKENS = 512
    # -- end of settings --

The values in the file are the built-in catalog's (so the file as it is scores
that benchmark); the builtin Driver replaces them with the values it found for
its dataset and keeps everything else, comments included, byte for byte. Whoever
needs a scorer's knobs back (the gateway's estimate: ``MAX_TOKENS``) reads them
with ``read_settings``, and a BUILT subset's with ``read_recipe``: the literals
as written, never a pattern over the code.

An impl's id is a hash of its code, so any edit to one of these files gives the
scorers that are made from it new impl ids (decision 0028); runs already made keep
the code they recorded.
"""

import ast
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

__all__ = [
    "JUDGE_SCORERS",
    "KIND_SCORERS",
    "SCORERS",
    "SETTINGS_END",
    "SETTINGS_START",
    "ScorerParts",
    "parse_setting",
    "read_recipe",
    "read_settings",
    "scorer_source",
    "split_settings",
]

# The scorer of each kind the builtin Driver recognises (its file has a settings block).
KIND_SCORERS = ("code", "function_call", "multiple_choice", "math", "exact_match")
# The model-graded scorers: each grades with the run's judge through ``bench_judge``, its
# prompt (and rubric, panel mode) in its settings block, so in its impl id.
JUDGE_SCORERS = ("judge_qa", "judge_fact", "judge_rubric", "judge_pairwise", "judge_panel")
# Every scorer here: the kinds', the judges', and the runner of BUILT subsets.
SCORERS = (*KIND_SCORERS, *JUDGE_SCORERS, "built_runner")

SETTINGS_START = "# -- settings"
SETTINGS_END = "# -- end of settings --"


@cache
def scorer_source(name: str) -> str:
    """The source text of scorer ``name`` (one of ``SCORERS``), as a sandbox runs it
    (read once: the files do not change under a running process).

    Raises ``KeyError`` for any other name.
    """
    if name not in SCORERS:
        raise KeyError(f"no scorer named {name!r}")
    return files(__name__).joinpath(f"{name}.py").read_text(encoding="utf-8")


@dataclass(frozen=True)
class ScorerParts:
    """A scorer's source cut around its settings block (``head + lines + tail`` is it all).

    ``head`` ends with the start marker's line, ``tail`` starts with the end marker's,
    and ``lines`` are the lines in between, each with its newline.
    """

    head: str
    lines: tuple[str, ...]
    tail: str


def split_settings(source: str) -> ScorerParts:
    """``source`` cut around its one settings block; ``ValueError`` if it has none."""
    lines = source.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line.startswith(SETTINGS_START)]
    ends = [i for i, line in enumerate(lines) if line.rstrip("\n") == SETTINGS_END]
    if len(starts) != 1 or len(ends) != 1 or ends[0] < starts[0]:
        raise ValueError(
            f"a scorer needs exactly one settings block between {SETTINGS_START!r} "
            f"and {SETTINGS_END!r} lines"
        )
    start, end = starts[0], ends[0]
    return ScorerParts(
        head="".join(lines[: start + 1]),
        lines=tuple(lines[start + 1 : end]),
        tail="".join(lines[end:]),
    )


def parse_setting(line: str) -> tuple[str, ast.expr] | None:
    """A settings block's line as (the constant it sets, the value's expression), or None
    for a blank or comment line; ``ValueError`` for any other line."""
    stripped = line.strip()
    if not stripped or stripped.startswith("#"):
        return None
    body = ast.parse(line).body
    statement = body[0] if len(body) == 1 else None
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Name)
    ):
        raise ValueError(f"a settings line must set one constant: {line!r}")
    return statement.targets[0].id, statement.value


def read_settings(source: str) -> dict[str, object]:
    """The constants of ``source``'s settings block by name, as their literals say.

    A value may span lines (a judge scorer's prompt template or rubric); the builtin
    Driver rewrites only kinds' blocks, whose values are one line each.

    ``ValueError`` when the file has no one settings block, or a statement of it does
    not set one constant to a literal.
    """
    block = "".join(split_settings(source).lines)
    try:
        statements = ast.parse(block).body
    except SyntaxError as exc:
        raise ValueError(f"the settings block does not parse: {exc}") from exc
    values: dict[str, object] = {}
    for statement in statements:
        if not (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            raise ValueError(f"a settings line must set one constant: {ast.unparse(statement)!r}")
        values[statement.targets[0].id] = ast.literal_eval(statement.value)
    return values


def read_recipe(source: str) -> dict[str, object] | None:
    """The ``RECIPE`` a BUILT subset's code starts with (``built_runner`` behind it), or
    None when the code sets none. The registry writes it as a dict literal; any other
    value is a ``ValueError``."""
    try:
        module = ast.parse(source)
    except SyntaxError:
        return None
    for node in module.body:
        if (
            isinstance(node, ast.Assign)
            and [t.id for t in node.targets if isinstance(t, ast.Name)] == ["RECIPE"]
            and isinstance(node.value, ast.Dict)
        ):
            recipe = ast.literal_eval(node.value)
            return {str(key): value for key, value in recipe.items()}
    return None
