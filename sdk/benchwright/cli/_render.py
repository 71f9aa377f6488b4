"""Rich renderings of runs, task lists and a live run's progress."""

from __future__ import annotations

from collections import Counter
from types import TracebackType
from typing import Any

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from .._models import Money, Run, RunEvent, TaskList, TaskSummary

__all__ = ["RunProgress", "run_table", "summary_line", "tasks_table"]


def _text(value: Any) -> Text:
    # Text, not str: server-provided strings must never be parsed as rich markup.
    return Text("" if value is None else str(value))


def _money(money: Money | None) -> str:
    if money is None:
        return "-"
    return f"{money.amount_cents / 100:.2f} {money.currency}"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.2f}s" if value >= 1000 else f"{value:.0f}ms"


def _rate(summary: TaskSummary) -> str:
    return "-" if summary.pass_rate is None else f"{summary.pass_rate:.1%}"


def summary_line(summary: TaskSummary) -> str:
    """``164/200 passed (82.0%), 36 failed, 0 errored``."""
    return (
        f"{summary.passed}/{summary.total} passed ({_rate(summary)}), "
        f"{summary.failed} failed, {summary.errored} errored"
    )


def run_table(run: Run, summary: TaskSummary | None = None) -> Table:
    """A two-column description of a run, with its task summary when given."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    rows: list[tuple[str, Any]] = [
        ("run", run.id),
        ("status", run.display_status or run.status),
    ]
    if run.halted:
        rows.append(("halted", run.halt_reason or "yes"))
    if run.benchmark is not None:
        rows.append(("benchmark", run.benchmark.name or run.benchmark.id))
    if run.subset is not None:
        rows.append(("subset", run.subset.slug or run.subset.id))
    if run.model is not None:
        rows.append(("model", f"{run.model.model}@{run.model.provider}"))
    if run.phase:
        rows.append(("phase", run.phase))
    if summary is not None:
        rows += [
            ("tasks", summary.total),
            ("passed", summary.passed),
            ("failed", summary.failed),
            ("errored", summary.errored),
            ("pass rate", _rate(summary)),
            ("p50 / p95", f"{_ms(summary.duration_ms_p50)} / {_ms(summary.duration_ms_p95)}"),
        ]
    rows.append(("cost (billed)", _money(run.cost.billed or run.cost.incurred)))
    for key, value in rows:
        table.add_row(key, _text(value))
    return table


def tasks_table(tasks: TaskList) -> Table:
    """One row per task: index, id, outcome, score, duration and a detail column."""
    table = Table(title=summary_line(tasks.summary), title_justify="left")
    table.add_column("#", justify="right")
    table.add_column("task", overflow="fold")
    table.add_column("outcome")
    table.add_column("score", justify="right")
    table.add_column("time", justify="right")
    table.add_column("detail", overflow="ellipsis", max_width=40, no_wrap=True)
    style = {"pass": "green", "fail": "red", "err": "yellow"}
    for row in tasks.data:
        table.add_row(
            _text(row.index),
            _text(row.task_id),
            Text(row.outcome or "-", style=style.get(row.outcome or "", "")),
            _text("-" if row.score is None else f"{row.score:g}"),
            _text(_ms(row.duration_ms)),
            _text(row.error_type or row.output_preview or ""),
        )
    return table


class RunProgress:
    """Draws a live run: phase lines, and a progress bar over Materialize.

    The bar's total is ``selected_tasks`` from ``DatasetTasksArtifact`` and it advances
    once per ``MaterializeTaskAggregated`` (one per task, whatever the trial count).
    """

    def __init__(self, console: Console) -> None:
        self._console = console
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[counts]}"),
            TimeElapsedColumn(),
            console=console,
        )
        self._bar: TaskID | None = None
        self.outcomes: Counter[str] = Counter()
        self.finished: RunEvent | None = None

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def _line(self, text: str, style: str = "") -> None:
        self._progress.console.print(Text(text, style=style))

    def _counts(self) -> str:
        o = self.outcomes
        return f"[green]{o['pass']} pass[/] [red]{o['fail']} fail[/] [yellow]{o['err']} err[/]"

    def _ensure_bar(self, total: int | None) -> TaskID:
        if self._bar is None:
            self._bar = self._progress.add_task("materialize", total=total, counts=self._counts())
        elif total is not None:
            self._progress.update(self._bar, total=total)
        return self._bar

    def handle(self, event: RunEvent) -> None:
        """Update the display for one event; unknown event types are ignored."""
        data = event.data
        if event.type == "PhaseStarted":
            self._line(f"▶ {data.get('phase')}", "bold")
        elif event.type == "PhaseCompleted":
            self._line(f"✓ {data.get('phase')} ({_ms(data.get('duration_ms'))})", "green")
        elif event.type == "PhaseFailed":
            self._line(
                f"✗ {data.get('phase')} failed: {data.get('error_type')}: {data.get('detail')}",
                "red",
            )
        elif event.type == "DatasetTasksArtifact":
            self._ensure_bar(data.get("selected_tasks"))
        elif event.type == "MaterializeTaskAggregated":
            self.outcomes[str(data.get("outcome"))] += 1
            self._progress.update(self._ensure_bar(None), advance=1, counts=self._counts())
        elif event.type == "PipelineFinished":
            self.finished = event
            status = data.get("status")
            message = f"■ finished: {status} in {_ms(data.get('duration_ms'))}"
            if data.get("error_type"):
                message += f" ({data.get('error_type')}: {data.get('detail')})"
            self._line(message, "green" if status == "ok" else "red")
