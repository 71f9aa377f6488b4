"""The ``run`` group and what its commands share: argument types and the run's link."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ...._models import Run
from .. import MARKUP, examples

__all__ = [
    "ApiBaseOption",
    "Compute",
    "DriverOption",
    "FreshOption",
    "GateOption",
    "IdempotencyOption",
    "LimitToOption",
    "ModelOption",
    "NoWaitOption",
    "RunId",
    "Status",
    "TruthValue",
    "Visibility",
    "echo_link",
    "run_app",
]


class _LaunchByDefault(TyperGroup):
    """Sends ``run ARGS`` to ``run launch ARGS`` unless ARGS name a subcommand."""

    # ``ctx`` is typer's vendored click context, which typer does not export.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ctx.help_option_names:
            args = ["launch", *args]
        return super().parse_args(ctx, args)


run_app = typer.Typer(
    rich_markup_mode=MARKUP,
    cls=_LaunchByDefault,
    no_args_is_help=True,
    help=(
        "Launch a benchmark run and stream it to the end, or inspect and manage runs.\n\n"
        "`benchwright run ...` is short for `benchwright run launch ...`. Anywhere a run "
        "id goes, `@last` names the run this CLI last launched or forked."
    ),
    epilog=examples(
        'benchwright run "Run GSM8K on local/smollm2, first 20 problems"',
        "benchwright run --benchmark GSM8K --model qwen/qwen3-32b@openrouter --limit 50",
        "benchwright run --replay-from @last --model anthropic/claude-haiku-4-5@openrouter",
        'benchwright run fork @last -m "tighter scoring"',
    ),
)


class Compute(StrEnum):
    """Where a run's sandboxes live."""

    default = "default"
    auto = "auto"
    local = "local"
    e2b = "e2b"
    sandbox0 = "sandbox0"


class CacheMode(StrEnum):
    """Whether a run's model calls read (and keep) the proxy's cached answers."""

    off = "off"
    read = "read"
    read_write = "read_write"


class Visibility(StrEnum):
    """Who can see a run."""

    public = "public"
    unlisted = "unlisted"
    private = "private"


class Status(StrEnum):
    """A run's status, as ``run ls`` filters it."""

    running = "running"
    ok = "ok"
    error = "error"


class TruthValue(StrEnum):
    """``--passed true|false``."""

    true = "true"
    false = "false"


RunId = Annotated[
    str, typer.Argument(metavar="RUN", help="The run's id, or @last.", show_default=False)
]
ModelOption = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Model under test as MODEL@PROVIDER, e.g. qwen/qwen3-32b@openrouter.",
        show_default=False,
    ),
]
JudgeOption = Annotated[
    list[str] | None,
    typer.Option(
        "--judge",
        help="The judge a model-graded scorer calls, as MODEL@PROVIDER (or MODEL@URL of "
        "your own OpenAI-compatible server); repeat for a panel.",
        show_default=False,
    ),
]
ApiBaseOption = Annotated[
    str | None,
    typer.Option(help="Your own OpenAI-compatible endpoint serving --model.", show_default=False),
]
DriverOption = Annotated[
    str | None,
    typer.Option(
        help="What drives the evaluation: builtin, litellm or PROVIDER://MODEL.",
        show_default=False,
    ),
]
LimitToOption = Annotated[
    list[str] | None,
    typer.Option(
        "--limit-to",
        metavar="LEVEL.QUANTITY=N",
        help="A ceiling in dollars or seconds, e.g. run.cost=15, run.duration=600, "
        "run.tasks=5. Repeatable.",
        show_default=False,
    ),
]
GateOption = Annotated[
    str | None,
    typer.Option(
        "--gate",
        metavar="pass_rate=FRACTION|no-regression-vs=RUN[,alpha=A]",
        help="For CI. pass_rate=FRACTION: exit 3 unless the run's aggregate pass rate "
        "(over all its tasks, not per task) reaches FRACTION. no-regression-vs=RUN: exit 3 "
        "when the run is significantly worse than RUN (an id, @baseline or @parent) on the "
        "tasks both ran (McNemar's exact test at alpha, default 0.05). Exit 1 if the run "
        "errors.",
        show_default=False,
    ),
]
NoWaitOption = Annotated[
    bool, typer.Option("--no-wait", help="Print the run id and exit instead of streaming.")
]
IdempotencyOption = Annotated[
    str | None,
    typer.Option(
        help="Your own key, e.g. gha-$GITHUB_RUN_ID. Default: derived from the command "
        "line, the directory and its git commit, so re-running re-attaches.",
        show_default=False,
    ),
]
FreshOption = Annotated[
    bool, typer.Option("--fresh", help="Launch a new run even if this command ran before.")
]


def echo_link(run: Run) -> None:
    """The run's page when the server has a dashboard, else its API resource."""
    if run.links.dashboard:
        typer.echo(f"dashboard: {run.links.dashboard}")
    elif run.links.self_:
        typer.echo(f"url: {run.links.self_}")
