"""``bench create``, ``bench subset create|add-harbor|append``, ``bench impl create|ls``,
``bench range``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ....registry import Impl, TaskRange
from ..._common import EXIT_USAGE, OutputOption, dump, emit, fail, get_client, handle_errors
from ..._common import output_format as _format
from ._built import show_built
from ._group import (
    CHUNK,
    Note,
    SetOption,
    bench_app,
    impl_app,
    parse_settings,
    print_,
    read_jsonl,
    read_text,
    subset_app,
    text,
)

__all__ = ["parse_range"]


def _recipe_file(path: Path | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        recipe = json.loads(read_text(path, "--recipe-file"))
    except ValueError as exc:
        fail(f"--recipe-file {path}: not JSON ({exc})", code=EXIT_USAGE)
    if not isinstance(recipe, dict):
        fail(f"--recipe-file {path}: must hold a JSON object of knobs", code=EXIT_USAGE)
    return recipe


def _grader(path: Path | None) -> dict[str, Any] | None:
    """``--grader-file``: a ``task_impl.py``, or JSON ``{"code": ..., "label": ...}``."""
    if path is None:
        return None
    text = read_text(path, "--grader-file")
    if path.suffix == ".py":
        return {"code": text, "label": path.stem}
    try:
        grader = json.loads(text)
    except ValueError as exc:
        fail(f"--grader-file {path}: neither a .py file nor JSON ({exc})", code=EXIT_USAGE)
    if not isinstance(grader, dict) or not isinstance(grader.get("code"), str):
        fail(f'--grader-file {path}: JSON must be {{"code": "<task_impl.py>", ...}}', EXIT_USAGE)
    return grader


def _file_key(*parts: str) -> str:
    """An idempotency key derived from what is sent: the same command, the same key."""
    return "cli-" + hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


def _chunks(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    return [rows[i : i + CHUNK] for i in range(0, len(rows), CHUNK)]


def _impls_table(impls: list[Impl]) -> Table:
    table = Table(box=None, pad_edge=False)
    for column in ("ID", "LABEL", "OFFICIAL", "SUBSET", "CREATED"):
        table.add_column(column, overflow="fold")
    for impl in impls:
        table.add_row(
            text(impl.id),
            text(impl.label or "-"),
            text("yes" if impl.official else "no"),
            text(impl.subset_id or "-"),
            text(impl.created_at.strftime("%Y-%m-%d %H:%M") if impl.created_at else "-"),
        )
    return table


def _range_table(found: TaskRange) -> Table:
    title = f"runs of {found.benchmark_id} over tasks {found.start}..{found.end - 1}"
    table = Table(title=title, title_justify="left", box=None, pad_edge=False)
    for column in ("RUN", "MODEL", "IMPL", "COVERED", "PASS", "OUTCOMES"):
        table.add_column(column, overflow="fold")
    marks = {"pass": "✓", "fail": "✗", "err": "!"}
    for run in found.data:
        rate = "-" if run.range_pass_rate is None else f"{run.range_pass_rate:.0%}"
        outcomes = "".join(
            marks.get(run.outcomes.get(str(i), ""), "·") for i in range(found.start, found.end)
        )
        table.add_row(
            text(run.run_id),
            text(run.model),
            text(run.impl_id or "-"),
            text(f"{run.covered}/{found.end - found.start}"),
            text(f"{run.range_passed} ({rate})"),
            text(outcomes),
        )
    return table


def parse_range(value: str) -> tuple[int, int]:
    """``START-END`` (END excluded, like Python's range) or a single index ``N``."""
    start_text, sep, end_text = value.partition("-")
    try:
        start = int(start_text)
        end = int(end_text) if sep else start + 1
    except ValueError:
        fail(f"RANGE takes START-END, e.g. 0-5 (got {value!r})", code=EXIT_USAGE)
    if start < 0 or end <= start:
        fail(f"RANGE {value!r}: END must be greater than START, both from 0", code=EXIT_USAGE)
    return start, end


# -- bench create ----------------------------------------------------------------------------
@bench_app.command("create")
@handle_errors
def create(
    name: Annotated[str, typer.Argument(help="The benchmark's name.")],
    description: Annotated[str, typer.Option(help="What it measures.")] = "",
    category: Annotated[str, typer.Option(help="e.g. math, tool-use, code.")] = "",
    tag: Annotated[
        list[str] | None, typer.Option("--tag", help="A tag (repeatable).", show_default=False)
    ] = None,
    idempotency_key: Annotated[
        str | None,
        typer.Option(help="Re-running with the same key returns the same benchmark."),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Create a benchmark, private to you until one of its runs is published."""
    fmt = _format(output)
    with get_client() as bw:
        bm = bw.benchmarks.create(
            name,
            description=description,
            category=category,
            tags=tag or [],
            idempotency_key=idempotency_key,
        )
    emit(dump(bm), fmt, table=lambda: typer.echo(f"created {bm.id} ({bm.name})"))


# -- bench subset ----------------------------------------------------------------------------
@subset_app.command("create")
@handle_errors
def subset_create(
    benchmark: Annotated[str, typer.Argument(help="The benchmark (bm_…).")],
    slug: Annotated[str, typer.Option(help="A short name, unique in the benchmark.")],
    file: Annotated[Path, typer.Option("--file", help="Task rows, JSON Lines.")],
    name: Annotated[str, typer.Option(help="A display name (default: the slug).")] = "",
    description: Annotated[str, typer.Option(help="What the rows are.")] = "",
    rolling: Annotated[
        bool, typer.Option(help="Allow appends later (a frozen subset never grows).")
    ] = False,
    grader_file: Annotated[
        Path | None,
        typer.Option(
            help="The scorer a pin runs by default: a task_impl.py, or JSON "
            '{"code": ..., "label": ...}.',
            show_default=False,
        ),
    ] = None,
    recipe_file: Annotated[
        Path | None,
        typer.Option(
            help="Make it a BUILT subset: a JSON object of recipe knobs (its scorer is "
            "generated; see `bench recipe`).",
            show_default=False,
        ),
    ] = None,
    set_: SetOption = None,
    note: Note = "",
    output: OutputOption = None,
) -> None:
    """Create a subset from a JSON Lines file. With `--recipe-file` or `--set` it is a
    BUILT subset, scored by code generated from the recipe; with `--rolling` a file of
    more than 1,000 rows goes in several requests."""
    fmt = _format(output)
    rows = read_jsonl(file)
    recipe = {**_recipe_file(recipe_file), **parse_settings(set_)}
    built = recipe_file is not None or bool(set_)
    if built and (rolling or grader_file is not None):
        fail("a BUILT subset (--recipe-file/--set) takes no --rolling or --grader-file", EXIT_USAGE)
    if len(rows) > CHUNK and (built or not rolling):
        fail(
            f"{file} holds {len(rows):,} rows: at most {CHUNK:,} at creation; use --rolling "
            "(later rows are appended) or split the file",
            code=EXIT_USAGE,
        )
    with get_client() as bw:
        if built:
            made = bw.registry.build.create_subset(
                benchmark,
                slug,
                tasks=rows,
                recipe=recipe,
                name=name,
                description=description,
                note=note,
            )
            emit(dump(made), fmt, table=lambda: show_built(made))
            return
        first, *rest = _chunks(rows)
        sub = bw.benchmarks.subsets.create(
            benchmark,
            slug,
            name=name,
            description=description,
            tasks=first,
            rolling=rolling,
            grader=_grader(grader_file),
        )
        key = _file_key(sub.id, hashlib.sha256(file.read_bytes()).hexdigest())
        for i, chunk in enumerate(rest, start=1):
            bw.benchmarks.subsets.append_tasks(sub.id, chunk, idempotency_key=f"{key}-{i}")
        if rest:
            sub = bw.benchmarks.subsets.get(sub.id)

    def table() -> None:
        typer.echo(f"created {sub.id} ({sub.slug}, {sub.task_count} tasks)")
        if sub.grader_impl_id:
            typer.echo(f"grader impl: {sub.grader_impl_id}")

    emit(dump(sub), fmt, table=table)


@subset_app.command("add-harbor")
@handle_errors
def subset_add_harbor(
    benchmark: Annotated[str, typer.Argument(help="The benchmark (bm_…).")],
    folder: Annotated[Path, typer.Argument(help="A Harbor dataset: a folder of task folders.")],
    slug: Annotated[
        str | None,
        typer.Option(help="A short name, unique in the benchmark (default: the folder's)."),
    ] = None,
    name: Annotated[str, typer.Option(help="A display name (default: the slug).")] = "",
    description: Annotated[str, typer.Option(help="What the tasks are.")] = "",
    output: OutputOption = None,
) -> None:
    """Store a Harbor dataset as an agentic subset: one task a row, frozen, its id the
    content address of the tasks (the same folder again is the same subset). Launch it
    with `benchwright run --harness harbor --benchmark BM --subset SLUG --agent NAME`."""
    from ....harbor import DatasetFolderError, dataset_files

    fmt = _format(output)
    try:
        files = dataset_files(folder)
    except DatasetFolderError as exc:
        fail(str(exc), EXIT_USAGE)
    chosen = slug or folder.resolve().name.lower()
    with get_client() as bw:
        sub = bw.benchmarks.subsets.create_harbor(
            benchmark, chosen, files, name=name, description=description
        )
    emit(
        dump(sub),
        fmt,
        table=lambda: typer.echo(f"stored {sub.id} ({sub.slug}, {sub.task_count} tasks)"),
    )


@subset_app.command("append")
@handle_errors
def subset_append(
    subset: Annotated[str, typer.Argument(help="The rolling subset (sub_…).")],
    file: Annotated[Path, typer.Option("--file", help="More task rows, JSON Lines.")],
    idempotency_key: Annotated[
        str | None,
        typer.Option(
            help="Re-running with the same key appends nothing twice (default: derived "
            "from the subset and the file's bytes)."
        ),
    ] = None,
    output: OutputOption = None,
) -> None:
    """Append rows to a rolling subset: a new snapshot, which new runs pin."""
    fmt = _format(output)
    rows = read_jsonl(file)
    key = idempotency_key or _file_key(subset, hashlib.sha256(file.read_bytes()).hexdigest())
    chunks = _chunks(rows)
    results = []
    with get_client() as bw:
        for i, chunk in enumerate(chunks):
            chunk_key = key if len(chunks) == 1 else f"{key}-{i}"
            results.append(
                bw.benchmarks.subsets.append_tasks(subset, chunk, idempotency_key=chunk_key)
            )
    last = results[-1]

    def table() -> None:
        added = sum(r.appended for r in results)
        typer.echo(
            f"appended {added} to {last.subset_id}: snapshot {last.snapshot_id}, "
            f"{last.task_count} tasks"
        )

    emit(dump(last), fmt, table=table, items=[dump(r) for r in results])


# -- bench impl ------------------------------------------------------------------------------
@impl_app.command("create")
@handle_errors
def impl_create(
    subset: Annotated[str, typer.Argument(help="The subset it scores (sub_…).")],
    file: Annotated[Path, typer.Option("--file", help="The task_impl.py to register.")],
    label: Annotated[str, typer.Option(help="A short name for this scorer.")] = "",
    description: Annotated[str, typer.Option(help="What it checks.")] = "",
    output: OutputOption = None,
) -> None:
    """Register a scorer for a subset. The same code again is the same impl."""
    fmt = _format(output)
    code = read_text(file, "--file")
    with get_client() as bw:
        impl = bw.impls.create(subset, code=code, label=label, description=description)
    emit(dump(impl), fmt, table=lambda: typer.echo(f"registered {impl.id} ({impl.label or '-'})"))


@impl_app.command("ls")
@handle_errors
def impl_ls(
    target: Annotated[
        str, typer.Argument(help="A benchmark (bm_…): all its impls; or a subset (sub_…).")
    ],
    output: OutputOption = None,
) -> None:
    """List a benchmark's impls, or those registered for one subset."""
    fmt = _format(output)
    with get_client() as bw:
        if target.startswith("bm_"):
            impls = bw.registry.benchmarks.get(target).impls
        else:
            sub = bw.registry.subsets.get(target)
            ids = {target, sub.id, *(s.id for s in sub.snapshots)}
            owner = bw.registry.benchmarks.get(sub.benchmark_id)
            impls = [i for i in owner.impls if i.subset_id in ids]
    data = [dump(i) for i in impls]
    emit(
        {"object": "list", "data": data}, fmt, table=lambda: print_(_impls_table(impls)), items=data
    )


# -- bench range -----------------------------------------------------------------------------
@bench_app.command("range")
@handle_errors
def task_range(
    benchmark: Annotated[str, typer.Argument(help="The benchmark (bm_…).")],
    span: Annotated[
        str, typer.Argument(metavar="RANGE", help="START-END, END excluded: 0-5 is tasks 0 to 4.")
    ],
    subset: Annotated[
        str | None, typer.Option(help="Only runs of this subset.", show_default=False)
    ] = None,
    limit: Annotated[int, typer.Option(help="At most this many runs.")] = 50,
    output: OutputOption = None,
) -> None:
    """Show the finished runs with results for a range of task indices, newest first."""
    fmt = _format(output)
    start, end = parse_range(span)
    with get_client() as bw:
        found = bw.registry.benchmarks.range(benchmark, start, end, subset=subset, limit=limit)
    data = [dump(r) for r in found.data]
    emit(dump(found), fmt, table=lambda: print_(_range_table(found)), items=data)
