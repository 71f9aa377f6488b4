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

from .._models import (
    AttrDict,
    Money,
    Run,
    RunComparison,
    RunEvent,
    RunList,
    TaskList,
    TaskSummary,
)

__all__ = [
    "RunProgress",
    "checklist",
    "comparison_table",
    "estimate_table",
    "key_value_table",
    "money_text",
    "run_table",
    "runs_table",
    "secrets_table",
    "summary_line",
    "tasks_table",
]


def _text(value: Any) -> Text:
    # Text, not str: server-provided strings must never be parsed as rich markup.
    return Text("" if value is None else str(value))


def _money(money: Money | None) -> str:
    if money is None:
        return "-"
    return f"{money.amount_cents / 100:.2f} {money.currency}"


def money_text(value: Any) -> str:
    """``42.15 USD`` from a ``{"amount_cents", "currency"}`` object (``-`` for none)."""
    if not isinstance(value, dict) or "amount_cents" not in value:
        return "-"
    return f"{int(value['amount_cents']) / 100:.2f} {value.get('currency') or 'USD'}"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.2f}s" if value >= 1000 else f"{value:.0f}ms"


def _rate(summary: TaskSummary) -> str:
    """``82.0%, 95% CI 76.1-86.8%`` when the summary has its interval."""
    if summary.pass_rate is None:
        return "-"
    interval = summary.intervals.pass_rate if summary.intervals else None
    if interval is None:
        return f"{summary.pass_rate:.1%}"
    level = summary.intervals.level if summary.intervals else 0.95
    return f"{summary.pass_rate:.1%}, {level:.0%} CI {interval.low:.1%}-{interval.high:.1%}"


def _mean_score(summary: TaskSummary) -> str:
    if summary.mean_score is None:
        return "-"
    interval = summary.intervals.mean_score if summary.intervals else None
    if interval is None:
        return f"{summary.mean_score:.3f}"
    clustered = f", {interval.clusters} groups" if interval.clusters else ""
    return f"{summary.mean_score:.3f} ({interval.low:.3f}-{interval.high:.3f}{clustered})"


def summary_line(summary: TaskSummary) -> str:
    """``164/200 passed (82.0%), 36 failed, 0 errored``."""
    line = (
        f"{summary.passed}/{summary.total} passed ({_rate(summary)}), "
        f"{summary.failed} failed, {summary.errored} errored"
    )
    if summary.infra_errored:
        line += f" ({summary.infra_errored} by the platform, not the model)"
    return line


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
        if run.benchmark.substituted_for:
            rows.append(("in place of", run.benchmark.substituted_for))
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
            *([("by the platform", summary.infra_errored)] if summary.infra_errored else []),
            ("pass rate", _rate(summary)),
            ("mean score", _mean_score(summary)),
            *(
                [("trial variance", f"{summary.trial_variance.mean:.3f}")]
                if summary.trial_variance
                else []
            ),
            ("p50 / p95", f"{_ms(summary.duration_ms_p50)} / {_ms(summary.duration_ms_p95)}"),
        ]
    rows.append(("cost (billed)", _money(run.cost.billed or run.cost.incurred)))
    for key, value in rows:
        table.add_row(key, _text(value))
    return table


def runs_table(runs: RunList) -> Table:
    """One row per run, newest first; ids never wrap, so they can be copied.

    Cost, dates and the rest are in ``run show`` and ``--output json``.
    """
    table = Table(box=None, pad_edge=False, header_style="bold")
    table.add_column("run", no_wrap=True)
    table.add_column("status", no_wrap=True)
    table.add_column("benchmark", overflow="fold", min_width=6)
    table.add_column("model", overflow="fold", min_width=10)
    table.add_column("pass", justify="right", no_wrap=True)
    for run in runs.data:
        summary = None if run.summary is None else TaskSummary.model_validate(dict(run.summary))
        table.add_row(
            _text(run.id),
            _text(run.display_status or run.status),
            _text(run.benchmark.name or run.benchmark.id if run.benchmark else "-"),
            _text(run.model.model if run.model else "-"),
            _text("-" if summary is None else _rate(summary)),
        )
    return table


def secrets_table(secrets: list[dict[str, Any]]) -> Table:
    """Name, masked preview, version and injection rules of each secret."""
    table = Table()
    for column in ("name", "preview", "version", "rules", "updated"):
        table.add_column(column, overflow="fold")
    for secret in secrets:
        rules = ", ".join(
            ":".join(
                str(p)
                for p in (r.get("host_pattern"), r.get("inject_kind"), r.get("inject_target"))
                if p
            )
            for r in secret.get("rules") or []
        )
        table.add_row(
            _text(secret.get("name")),
            _text(secret.get("preview")),
            _text(secret.get("version")),
            _text(rules or "-"),
            _text(str(secret.get("updated_at") or "-")[:19]),
        )
    return table


def key_value_table(rows: list[tuple[str, Any]]) -> Table:
    """A borderless two-column table: bold keys, plain values."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for key, value in rows:
        table.add_row(key, _text(value))
    return table


def checklist(checks: list[tuple[str, str, str]]) -> Table:
    """``benchwright doctor``'s result: one ``(status, name, detail)`` row per check,
    status ``ok``, ``fail`` or ``skip``."""
    marks = {"ok": ("✓", "green"), "fail": ("✗", "red"), "skip": ("-", "yellow")}
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column()
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    for status, name, detail in checks:
        mark, style = marks[status]
        table.add_row(Text(mark, style=style), name, _text(detail))
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
        elif event.type == "BenchmarkResolved" and data.get("substituted_for"):
            self._line(
                f"! running {data.get('benchmark_name')} in place of "
                f"{data.get('substituted_for')!r} (the catalog has no such benchmark; "
                "the request allowed a substitute)",
                "yellow",
            )
        elif event.type == "DatasetTasksArtifact":
            self._ensure_bar(data.get("selected_tasks"))
        elif event.type == "MaterializeTaskAggregated":
            self.outcomes[str(data.get("outcome"))] += 1
            self._progress.update(self._ensure_bar(None), advance=1, counts=self._counts())
        elif event.type == "RunHalted":
            self._line(f"⏸ halted: {data.get('halt_reason')}", "yellow")
        elif event.type == "HaltCleared":
            self._line("▶ carrying on", "bold")
        elif event.type == "PipelineFinished":
            self.finished = event
            status = data.get("status")
            message = f"■ finished: {status} in {_ms(data.get('duration_ms'))}"
            if data.get("error_type"):
                message += f" ({data.get('error_type')}: {data.get('detail')})"
            self._line(message, "green" if status == "ok" else "red")


def _signed(value: float | None, pattern: str = "{:+.3f}") -> str:
    return "-" if value is None else pattern.format(value)


def comparison_table(found: RunComparison) -> Table:
    """``run diff``: the shared tasks, the flips, the rates, McNemar and what differs."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")
    tasks, flips, errored = found.tasks, found.flips, found.errored
    rates, mean = found.pass_rate, found.mean_score
    interval = mean.interval
    rows: list[tuple[str, Any]] = [
        ("A", found.a.id),
        ("B", found.b.id),
        ("shared tasks", f"{tasks.common} ({tasks.judged} scored by both)"),
        ("only in A / B", f"{tasks.only_in_a} / {tasks.only_in_b}"),
        ("fixed", flips.fixed),
        ("regressed", flips.regressed),
        ("unchanged", f"{flips.unchanged_pass} pass, {flips.unchanged_fail} fail"),
        (
            "errored",
            f"A only {errored['a_only']}, B only {errored['b_only']}, both {errored['both']}",
        ),
        (
            "pass rate",
            f"{_signed(rates.a, '{:.1%}')} -> {_signed(rates.b, '{:.1%}')} "
            f"({_signed(rates.difference, '{:+.1%}')})",
        ),
        (
            "mean score",
            f"{_signed(mean.a, '{:.3f}')} -> {_signed(mean.b, '{:.3f}')} "
            f"({_signed(mean.difference)}"
            + (
                f", {interval.level:.0%} interval {interval.low:+.3f} to {interval.high:+.3f})"
                if interval
                else ")"
            ),
        ),
        ("McNemar p", f"{found.mcnemar.p_value:.3g}"),
    ]
    for part in found.differences:
        rows.append((f"differs: {part.part}", f"{part.a} -> {part.b}"))
    for key, value in rows:
        table.add_row(key, _text(value))
    return table


def estimate_table(found: AttrDict) -> Table:
    """``run --dry-run``: the ranges, then how each was worked out."""
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(overflow="fold")

    def span(key: str) -> str:
        value = found[key]
        return f"{value['low']:,} .. {value['high']:,} (expected {value['expected']:,})"

    cost = found["cost"]
    rows: list[tuple[str, Any]] = [
        ("tasks x trials", f"{found['tasks']} x {found['trials']}"),
        ("model calls", span("calls")),
        ("prompt tokens", span("prompt_tokens")),
        ("completion tokens", span("completion_tokens")),
        (
            "model cost",
            f"{_money(cost['low'])} .. {_money(cost['high'])} "
            f"(expected {_money(cost['expected'])}; priced by {found['priced_by']})",
        ),
        ("not included", found.get("excludes") or "-"),
    ]
    rows += [("how", line) for line in found.get("derivation", [])]
    for key, value in rows:
        table.add_row(key, _text(value))
    return table
