"""The ``bench`` group: its typer apps, shared options, and reading the files it sends.

``benchwright bench`` authors benchmarks, subsets and scorers (``_authoring``) and
fixes BUILT subsets (``_built``). Task rows come from JSON Lines files, one
``{"task_id", "input", "expected"}`` object a line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.text import Text

from ..._common import EXIT_USAGE, fail
from .. import MARKUP, examples

__all__ = [
    "CHUNK",
    "BuiltRef",
    "Note",
    "SetOption",
    "bench_app",
    "impl_app",
    "parse_settings",
    "print_",
    "read_jsonl",
    "read_text",
    "recipe_app",
    "samples_app",
    "subset_app",
    "text",
]

# Rows a request may carry; longer files go in several.
CHUNK = 1000

bench_app = typer.Typer(
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    help=(
        "Author benchmarks: create one, load task rows into subsets, register scorers "
        "(impls), see which runs cover a task range, and fix a BUILT subset's recipe or "
        "samples. Publishing is run-derived: `benchwright run publish <run_id>`."
    ),
    epilog=examples(
        'benchwright bench create "BFCL v4 mirror" --category tool-use --tag function-calling',
        "benchwright bench subset create bm_… --slug v1 --file tasks.jsonl --grader-file g.py",
        "benchwright bench impl create sub_… --file task_impl.py --label 'strict v1'",
        "benchwright bench recipe set my-bench --set run_timeout=900 --note 'slow boot'",
        "benchwright bench samples set my-bench --upsert-file fix.jsonl --note 'q2 was wrong'",
    ),
)
subset_app = typer.Typer(
    rich_markup_mode=MARKUP, no_args_is_help=True, help="Subsets of task rows."
)
impl_app = typer.Typer(
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    help="Scorers (`task_impl.py`): immutable, content-addressed.",
)
recipe_app = typer.Typer(
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    help=(
        "A BUILT subset's recipe: the knobs its generated scorer runs with. Changing it "
        "keeps the subset id and mints a new impl id; earlier runs keep theirs.\n\n"
        "Knobs: `prompt_template` (`{input}`, `{input.field}`), `system_prompt`, "
        "`max_tokens`, `temperature`; `extraction` (`full`, `last_line`, `last_number`, "
        "`pattern` with `answer_pattern`); `grading` (`exact`, `numeric` with `tolerance`, "
        "`contains`, `regex`), `case_sensitive`; `trials`, `aggregator` (`any_pass`, "
        "`all_pass`, `mean`, `majority_on`); `run_timeout` (seconds per task)."
    ),
    epilog=examples(
        "benchwright bench recipe show my-bench",
        "benchwright bench recipe set my-bench --set run_timeout=900 --set trials=3 \\",
        "    --note 'product boots slower than 240s'",
    ),
)
samples_app = typer.Typer(
    rich_markup_mode=MARKUP,
    no_args_is_help=True,
    help=(
        "A BUILT subset's task rows. Editing them makes a new subset (carrying the "
        "recipe) and retires the old one for new runs; earlier runs keep theirs."
    ),
)

BuiltRef = Annotated[
    str, typer.Argument(help="The BUILT subset: one of your slugs, or a subset id (sub_…).")
]
Note = Annotated[str, typer.Option("--note", help="Why: kept in the subset's history.")]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        metavar="KEY=VALUE",
        help=(
            "A recipe knob as KEY=VALUE (repeatable). VALUE is read as JSON when it parses "
            '(900, 0.5, true, null, "42"), else as text.'
        ),
        show_default=False,
    ),
]


# -- helpers -------------------------------------------------------------------------------
def print_(renderable: Any) -> None:
    Console(highlight=False).print(renderable)


def text(value: Any) -> Text:
    # Text, not str: server-provided strings must never be parsed as rich markup.
    return Text("" if value is None else str(value))


def read_jsonl(path: Path, what: str = "--file") -> list[dict[str, Any]]:
    """Rows of a JSON Lines file; a bad line is a one-line usage error naming it."""
    try:
        # "\n" only: a JSON string may hold U+2028 or U+0085 raw.
        lines = path.read_text(encoding="utf-8").split("\n")
    except OSError as exc:
        fail(f"{what}: cannot read {path}: {exc.strerror or exc}", code=EXIT_USAGE)
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            fail(f"{path} line {number}: not JSON ({exc})", code=EXIT_USAGE)
        if not isinstance(row, dict):
            fail(f"{path} line {number}: each line must be a JSON object", code=EXIT_USAGE)
        rows.append(row)
    if not rows:
        fail(f"{what}: {path} holds no rows", code=EXIT_USAGE)
    return rows


def read_text(path: Path, what: str) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        fail(f"{what}: cannot read {path}: {exc.strerror or exc}", code=EXIT_USAGE)


def parse_settings(values: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` pairs as a dict, VALUE as JSON when it parses, else text."""
    config: dict[str, Any] = {}
    for item in values or []:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            fail(f"--set takes KEY=VALUE (got {item!r})", code=EXIT_USAGE)
        try:
            config[key.strip()] = json.loads(raw)
        except ValueError:
            config[key.strip()] = raw
    return config


bench_app.add_typer(subset_app, name="subset")
bench_app.add_typer(impl_app, name="impl")
bench_app.add_typer(recipe_app, name="recipe")
bench_app.add_typer(samples_app, name="samples")
