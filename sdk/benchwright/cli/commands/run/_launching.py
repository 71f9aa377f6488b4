"""``run launch``, ``run fork`` and ``run rescore``: start a run, then follow it to its
verdict."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import typer
from rich.console import Console

from ...._client import Benchwright
from ...._errors import WaitTimeoutError
from ...._models import Run, TaskSummary
from ... import _profiles
from ..._common import (
    EXIT_ERROR,
    EXIT_GATE,
    EXIT_USAGE,
    OutputFormat,
    OutputOption,
    dump,
    emit,
    fail,
    get_client,
    handle_errors,
    output_format,
    resolve_run_id,
)
from ..._launch import (
    Gate,
    HarborFlags,
    RegressionGate,
    harness_metadata,
    invocation_key,
    parse_gate,
    parse_judges,
    parse_limits,
    parse_model,
    parse_phase_models,
)
from ..._render import RunProgress, estimate_table, run_table
from ._group import (
    ApiBaseOption,
    CacheMode,
    Compute,
    DriverOption,
    FreshOption,
    GateOption,
    IdempotencyOption,
    JudgeOption,
    LimitToOption,
    ModelOption,
    NoWaitOption,
    RunId,
    echo_link,
    run_app,
)

__all__ = ["fork", "launch", "rescore"]

# The stream ends at PipelineFinished, but the run projection can trail the log by a
# moment; this bounds how long we wait for it to catch up.
_SETTLE_TIMEOUT = 60.0


@run_app.command("launch")
@handle_errors
def launch(
    request_arg: Annotated[
        str | None,
        typer.Argument(
            metavar="[REQUEST]", help="What to run, in plain English.", show_default=False
        ),
    ] = None,
    request: Annotated[
        str | None,
        typer.Option("--request", "-r", help="The same as REQUEST.", show_default=False),
    ] = None,
    benchmark: Annotated[
        str | None,
        typer.Option(help="Pin a catalog benchmark (name or bm_ id).", show_default=False),
    ] = None,
    subset: Annotated[
        str | None, typer.Option(help="With --benchmark: a subset slug or id.", show_default=False)
    ] = None,
    impl: Annotated[
        str | None,
        typer.Option(
            help="With --benchmark: a scorer impl id, or latest:official.", show_default=False
        ),
    ] = None,
    replay_from: Annotated[
        str | None,
        typer.Option(
            "--replay-from",
            "--replay",
            help="Replay this run's tasks with its scorer (add --model to swap the model).",
            show_default=False,
        ),
    ] = None,
    model: ModelOption = None,
    api_base: ApiBaseOption = None,
    judge: JudgeOption = None,
    driver: DriverOption = None,
    harness: Annotated[
        str | None,
        typer.Option(
            help="Score with a third-party harness: inspect (an Inspect AI task) or harbor "
            "(agents on a Harbor-format dataset). lm-evaluation-harness and lighteval are "
            "not supported.",
            show_default=False,
        ),
    ] = None,
    harness_task: Annotated[
        str | None,
        typer.Option(
            help="The Inspect task: a local task file, path/arith.py or path/arith.py@arith, "
            "sent with the files of its folder (its datasets). With --harness harbor: the "
            "dataset, a local folder of Harbor task folders, sent whole.",
            show_default=False,
        ),
    ] = None,
    harness_arg: Annotated[
        list[str] | None,
        typer.Option(
            help="A task argument KEY=VALUE (repeat; a value is read as JSON when it parses).",
            show_default=False,
        ),
    ] = None,
    harbor_task: Annotated[
        str | None,
        typer.Option(
            help="With --harness harbor: run one task of the dataset (its folder or "
            "task.toml name).",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            help="With --harness harbor: the agent, benchwright (the platform's own loop, "
            "the default), oracle (runs each task's solution), nop, or product (a product "
            "under test: --agent-arg command=[...] ready_url=... drive_url=...).",
            show_default=False,
        ),
    ] = None,
    agent_arg: Annotated[
        list[str] | None,
        typer.Option(
            help="With --harness harbor: an agent argument KEY=VALUE, e.g. max_turns=30 "
            "(repeat; a value is read as JSON when it parses).",
            show_default=False,
        ),
    ] = None,
    compute: Annotated[
        Compute | None,
        typer.Option(
            help="Where sandboxes run (default: the account's default).", show_default=False
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(min=1, help="Run only the first N tasks.", show_default=False),
    ] = None,
    limit_to: LimitToOption = None,
    hint: Annotated[
        list[str] | None,
        typer.Option(
            help="Guidance for the Driver, e.g. 'the answer is the last number' (repeatable).",
            show_default=False,
        ),
    ] = None,
    phase_model: Annotated[
        list[str] | None,
        typer.Option(
            help="PHASE=PROVIDER://MODEL: the LLM Driver's model for find, analyze or "
            "atomize (repeatable).",
            show_default=False,
        ),
    ] = None,
    cache: Annotated[
        CacheMode | None,
        typer.Option(
            help="The proxy's response cache: read answers it kept for the same request, "
            "model and trial (no cost), and keep new ones with read_write. Off by default.",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Launch nothing: print what the run would cost (model calls, tokens and "
            "dollars as a range) and how that was worked out.",
        ),
    ] = False,
    gate: GateOption = None,
    no_wait: NoWaitOption = False,
    idempotency_key: IdempotencyOption = None,
    fresh: FreshOption = False,
    output: OutputOption = None,
) -> None:
    """Launch a run (plain English, pinned or replay) and stream it to the end.

    Exits 0 when the run ends ok, 1 when it ends in error, 3 when a --gate does not
    hold. Running the same command again (same flags, directory and git commit)
    re-attaches to the run it launched instead of paying for a second one.
    """
    if request_arg is not None and request is not None:
        fail("give the request once: as REQUEST or as --request", code=EXIT_USAGE)
    request = request_arg if request is None else request
    modes = [m for m in (request, benchmark, replay_from) if m is not None]
    # A harness run's task names what runs: REQUEST is then only its description.
    if len(modes) > 1 or not (modes or harness_task):
        fail(
            "`benchwright run` needs one of REQUEST, --benchmark, --replay-from or --harness-task",
            EXIT_USAGE,
        )
    if benchmark is not None and model is None:
        fail("a pinned run needs --model MODEL@PROVIDER", code=EXIT_USAGE)
    if (subset or impl) and benchmark is None:
        fail("--subset and --impl pin a catalog entry: they need --benchmark", code=EXIT_USAGE)
    if api_base and not model:
        fail("--api-base serves a model: it needs --model", code=EXIT_USAGE)
    if dry_run and gate is not None:
        fail("--dry-run launches nothing for --gate to judge: drop one", code=EXIT_USAGE)
    checked_gate = _check_wait_flags(gate, no_wait)
    sut = parse_model(model, api_base) if model else None
    limits = parse_limits(limit_to or [])
    phase_models = parse_phase_models(phase_model or [])
    harbor = HarborFlags(harbor_task, agent, tuple(agent_arg or ()))
    metadata: dict[str, Any] = harness_metadata(
        harness, harness_task, harness_arg, harbor, pinned=benchmark is not None
    )
    if limit is not None:
        metadata["limit"] = limit
    key = _key(
        "run launch",
        fresh,
        idempotency_key,
        {
            "request": request,
            "benchmark": benchmark,
            "subset": subset,
            "impl": impl,
            "replay_from": replay_from,
            "model": model,
            "api_base": api_base,
            "judge": judge or [],
            "driver": driver,
            "harness": harness,
            # The task's files and args too: an edited task file is a new launch.
            "harness_task": metadata.get(f"{harness}_harness"),
            "harbor_task": harbor_task,
            "compute": compute.value if compute else None,
            "limit": limit,
            "limit_to": sorted(limit_to or []),
            "hint": hint or [],
            "phase_model": sorted(phase_model or []),
            "cache": cache.value if cache else None,
        },
    )
    fmt = output_format(output)
    with get_client() as bw:
        replay = {"from_run": resolve_run_id(bw, replay_from)} if replay_from else None
        # One launch body, whether it is priced (--dry-run) or launched.
        body: dict[str, Any] = {
            "request": request,
            "benchmark": benchmark,
            "subset": subset,
            "impl": impl,
            "sut": sut,
            "judge": parse_judges(judge or []),
            "metadata": metadata or None,
            "replay": replay,
            "driver": driver,
            "harness": harness,
            "compute": compute.value if compute else None,
            "limits": limits,
            "hints": hint or None,
            "phase_models": phase_models,
            "cache": cache.value if cache else None,
        }
        if dry_run:
            found = bw.runs.estimate(**body)
            emit(
                dict(found),
                fmt,
                table=lambda: Console(highlight=False).print(estimate_table(found)),
            )
            return
        launched = bw.runs.launch(**body, idempotency_key=key)
        _attach(bw, launched, key, fmt, no_wait, checked_gate)


@run_app.command("fork")
@handle_errors
def fork(
    run_id: RunId,
    message: Annotated[
        str,
        typer.Option(
            "--message",
            "-m",
            help="What to change, in plain English: it guides the rewritten phases.",
            show_default=False,
        ),
    ],
    from_phase: Annotated[
        str,
        typer.Option(
            help="Rewind to this phase: fetch, analyze, setup, attach, atomize or materialize."
        ),
    ] = "atomize",
    model: ModelOption = None,
    api_base: ApiBaseOption = None,
    driver: DriverOption = None,
    limit_to: LimitToOption = None,
    gate: GateOption = None,
    no_wait: NoWaitOption = False,
    idempotency_key: IdempotencyOption = None,
    fresh: FreshOption = False,
    output: OutputOption = None,
) -> None:
    """Fork a run: rewind it to a phase and carry on with your guidance.

    Everything before the phase is inherited, not recomputed; a rewritten scorer gets
    a new impl id. Streams the fork like a launch (same exit codes).
    """
    if api_base and not model:
        fail("--api-base serves a model: it needs --model", code=EXIT_USAGE)
    checked_gate = _check_wait_flags(gate, no_wait)
    sut = parse_model(model, api_base) if model else None
    key = _key(
        "run fork",
        fresh,
        idempotency_key,
        {
            "run_id": run_id,
            "message": message,
            "from_phase": from_phase,
            "model": model,
            "api_base": api_base,
            "driver": driver,
            "limit_to": sorted(limit_to or []),
        },
    )
    fmt = output_format(output)
    with get_client() as bw:
        forked = bw.runs.fork(
            resolve_run_id(bw, run_id),
            description=message,
            from_phase=from_phase,
            sut=sut,
            driver=driver,
            limits=parse_limits(limit_to or []),
            idempotency_key=key,
        )
        _attach(bw, forked, key, fmt, no_wait, checked_gate)


@run_app.command("rescore")
@handle_errors
def rescore(
    run_id: RunId,
    impl: Annotated[
        str,
        typer.Option(
            help="The scorer to grade the run's recorded outputs with: an impl id of the "
            "same subset.",
            show_default=False,
        ),
    ],
    judge: JudgeOption = None,
    limit_to: LimitToOption = None,
    gate: GateOption = None,
    no_wait: NoWaitOption = False,
    idempotency_key: IdempotencyOption = None,
    fresh: FreshOption = False,
    output: OutputOption = None,
) -> None:
    """Rescore a finished run: its recorded outputs graded by another scorer (or by the
    same one with another --judge), in a new run; the model is not called.

    `benchwright run diff RUN NEW` then lists exactly the tasks graded differently.
    Streams the new run like a launch (same exit codes).
    """
    checked_gate = _check_wait_flags(gate, no_wait)
    key = _key(
        "run rescore",
        fresh,
        idempotency_key,
        {"run_id": run_id, "impl": impl, "judge": judge or [], "limit_to": sorted(limit_to or [])},
    )
    fmt = output_format(output)
    with get_client() as bw:
        rescored = bw.runs.rescore(
            resolve_run_id(bw, run_id),
            impl=impl,
            judge=parse_judges(judge or []),
            limits=parse_limits(limit_to or []) or None,
            idempotency_key=key,
        )
        _attach(bw, rescored, key, fmt, no_wait, checked_gate)


def _check_wait_flags(gate: str | None, no_wait: bool) -> Gate | RegressionGate | None:
    if gate is not None and no_wait:
        fail("--gate needs the run's result: drop --no-wait", code=EXIT_USAGE)
    return parse_gate(gate) if gate is not None else None


def _key(command: str, fresh: bool, explicit: str | None, params: dict[str, Any]) -> str:
    """The launch's Idempotency-Key: yours, a fresh one, or the invocation's."""
    if explicit is not None:
        return explicit
    if fresh:
        return f"cli-fresh-{uuid.uuid4()}"
    return invocation_key(command, params)


def _attach(
    bw: Benchwright,
    run: Run,
    key: str,
    fmt: OutputFormat,
    no_wait: bool,
    gate: Gate | RegressionGate | None,
) -> None:
    """Remember the run as @last, then print its id or follow it; exits with its verdict."""
    reattached = _profiles.recalled_launch(key) == run.id
    _profiles.remember_launch(key, run.id)
    _profiles.remember_last(bw.base_url, run.id)
    if reattached:
        typer.echo(
            f"re-attached to run {run.id}, launched earlier by the same command "
            "(--fresh launches a new one)",
            err=fmt is not OutputFormat.table,
        )
    if no_wait:
        if fmt is OutputFormat.table:
            typer.echo(f"launched run {run.id}")
            echo_link(run)
        else:
            emit(dump(run), fmt)
        return
    try:
        final, summary = _follow(bw, run, fmt)
    except KeyboardInterrupt:
        typer.echo(
            f"interrupted; run {run.id} carries on on the server "
            "(run the same command again to re-attach)",
            err=True,
        )
        raise typer.Exit(130) from None
    run_ok = final.status == "ok"
    verdict = gate.check(bw, final, summary, run_ok) if gate is not None else None
    document: dict[str, Any] = {"run": dump(final), "summary": dump(summary)}
    if verdict is not None:
        document["gate"] = verdict.document()

    def table() -> None:
        Console(highlight=False).print(run_table(final, summary))
        echo_link(final)
        if verdict is not None:
            typer.echo(verdict.line())

    emit(document, fmt, table=table)
    if verdict is not None and fmt is not OutputFormat.table:
        typer.echo(verdict.line(), err=True)
    if not run_ok:
        raise typer.Exit(EXIT_ERROR)
    if verdict is not None and not verdict.held:
        raise typer.Exit(EXIT_GATE)


def _follow(bw: Benchwright, launched: Run, fmt: OutputFormat) -> tuple[Run, TaskSummary]:
    """Stream the run to its end, drawing progress, and return its final state."""
    if fmt is OutputFormat.ndjson:
        for event in bw.runs.stream(launched.id):
            emit(dump(event), fmt)
    else:
        # Unless stdout is the human view, it carries one document: progress goes to stderr.
        console = Console(stderr=fmt is not OutputFormat.table, highlight=False)
        console.print(f"following run [bold]{launched.id}[/]", highlight=False)
        with RunProgress(console) as progress:
            for event in bw.runs.stream(launched.id):
                progress.handle(event)
    try:
        final = bw.runs.wait(launched.id, timeout=_SETTLE_TIMEOUT, poll_interval=1.0)
    except WaitTimeoutError as exc:
        fail(f"the event stream ended but {exc}")
    return final, bw.runs.tasks(launched.id, limit=1).summary
