"""``bench recipe show|set`` and ``bench samples set``: fixing a BUILT subset in place
(guide section 6.6). Neither rewrites history: a recipe edit mints a new impl id,
a sample edit a new subset id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from ....build import BuiltSubset
from ..._common import EXIT_USAGE, OutputOption, dump, emit, fail, get_client, handle_errors
from ..._common import output_format as _format
from ..._render import key_value_table
from ._group import (
    BuiltRef,
    Note,
    SetOption,
    parse_settings,
    print_,
    read_jsonl,
    recipe_app,
    samples_app,
    text,
)

__all__ = ["show_built"]


def _built_table(built: BuiltSubset) -> Table:
    rows: list[tuple[str, Any]] = [
        ("subset", built.subset_id + ("  (retired)" if built.retired else "")),
        ("slug", built.slug),
        ("benchmark", built.benchmark_id),
        ("tasks", built.task_count),
        ("impl", built.impl_id),
    ]
    if built.successor_id:
        rows.append(("succeeded by", built.successor_id))
    if built.predecessor_id:
        rows.append(("forked from", built.predecessor_id))
    rows += [(f"  {key}", json.dumps(value)) for key, value in sorted(built.config.items())]
    return key_value_table(rows)


def _history_table(built: BuiltSubset) -> Table:
    table = Table(title="history", title_justify="left", box=None, pad_edge=False)
    for column in ("WHEN", "WHAT", "BY", "NOTE", "IDS"):
        table.add_column(column, overflow="fold")
    for edit in built.history:
        if edit.kind == "recipe":
            what = ", ".join(
                f"{k} {json.dumps(v[0])} → {json.dumps(v[1])}" for k, v in edit.changes.items()
            )
            ids = edit.impl_id
        elif edit.kind == "samples":
            what = f"samples: {edit.upserted} upserted, {edit.removed} removed"
            ids = f"{edit.from_subset_id} → {edit.subset_id}"
        else:
            what, ids = "created", f"{edit.subset_id} {edit.impl_id}"
        table.add_row(
            text(edit.at.strftime("%Y-%m-%d %H:%M")),
            text(what),
            text(edit.by),
            text(edit.note or "-"),
            text(ids),
        )
    return table


def show_built(built: BuiltSubset) -> None:
    print_(_built_table(built))
    if built.history:
        print_(_history_table(built))


# -- bench recipe / samples ------------------------------------------------------------------
@recipe_app.command("show")
@handle_errors
def recipe_show(subset: BuiltRef, output: OutputOption = None) -> None:
    """Show the recipe, the impl generated from it, and every edit with its note."""
    fmt = _format(output)
    with get_client() as bw:
        built = bw.registry.build.recipe(subset)
    emit(dump(built), fmt, table=lambda: show_built(built))


@recipe_app.command("set")
@handle_errors
def recipe_set(
    subset: BuiltRef, set_: SetOption = None, note: Note = "", output: OutputOption = None
) -> None:
    """Change recipe knobs (the others stay). Owner or admin only."""
    config = parse_settings(set_)
    if not config:
        fail("name at least one knob: --set KEY=VALUE", code=EXIT_USAGE)
    fmt = _format(output)
    with get_client() as bw:
        before = bw.registry.build.recipe(subset)
        after = bw.registry.build.update_recipe(subset, config, note=note)

    def table() -> None:
        if not after.changed:
            typer.echo(f"{after.slug}: the recipe already reads so; impl {after.impl_id}")
            return
        typer.echo(f"{after.slug}: recipe changed; impl {before.impl_id} → {after.impl_id}")
        typer.echo("the next run records the new impl; earlier runs keep theirs")

    emit(dump(after), fmt, table=table)


@samples_app.command("set")
@handle_errors
def samples_set(
    subset: BuiltRef,
    upsert_file: Annotated[
        Path | None,
        typer.Option(help="Rows to add or replace (by task_id), JSON Lines.", show_default=False),
    ] = None,
    remove: Annotated[
        list[str] | None,
        typer.Option(
            "--remove",
            metavar="TASK_ID",
            help="A task_id to drop (repeatable).",
            show_default=False,
        ),
    ] = None,
    note: Note = "",
    output: OutputOption = None,
) -> None:
    """Upsert and remove rows. The edited rows become a new subset carrying the recipe;
    the old one retires for new runs. Owner or admin only."""
    if upsert_file is None and not remove:
        fail("give --upsert-file and/or --remove", code=EXIT_USAGE)
    rows = read_jsonl(upsert_file, "--upsert-file") if upsert_file is not None else []
    fmt = _format(output)
    with get_client() as bw:
        after = bw.registry.build.update_samples(
            subset, upsert=rows, remove=remove or [], note=note
        )

    def table() -> None:
        if not after.changed:
            typer.echo(f"{after.slug}: the samples already read so; subset {after.subset_id}")
            return
        typer.echo(
            f"{after.slug}: {after.predecessor_id} → {after.subset_id} "
            f"({after.task_count} tasks, impl {after.impl_id})"
        )
        typer.echo(f"{after.predecessor_id} is retired for new runs; earlier runs keep it")

    emit(dump(after), fmt, table=table)
