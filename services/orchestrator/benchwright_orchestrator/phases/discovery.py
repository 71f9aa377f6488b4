"""Fork, Find, Fetch, Analyze: what the run is about and which tasks it sweeps."""

from typing import Any

from benchwright_orchestrator.driver.base import RowSample
from benchwright_orchestrator.phases.context import PhaseContext
from benchwright_orchestrator.plan import replay_selection, scope_selection, selected_indices
from benchwright_orchestrator.ports import PhaseError
from benchwright_orchestrator.tools import PipelineTools
from benchwright_shared.hashing import canonical_json, fingerprint12, sha256_hex


async def fork(ctx: PhaseContext) -> None:
    """Record what the fork starts from; the description reaches the Driver as guidance."""
    run = ctx.run
    spec = run.fork or {}
    run.agent_text(
        phase="fork",
        text=(
            f"forked from run {run.parent_run_id}, rewinding to {spec.get('from_phase')}; "
            f"guidance: {spec.get('description')}"
        ),
    )


async def find(ctx: PhaseContext) -> None:
    run = ctx.run
    if not run.request:
        raise PhaseError("no_request", "a natural-language launch needs 'request'")
    found = await ctx.driver.find(run.request, ctx.tools("find"))
    sut = run.sut or found.sut
    run.benchmark_resolved(
        benchmark_id=found.benchmark_id,
        benchmark_name=found.benchmark_name,
        subset_id=found.subset_id,
        subset_slug=found.subset_slug,
        scope=found.scope,
        sut=None if run.sut else found.sut,
        notes=found.notes,
        substituted_for=found.substituted_for,
    )
    if sut is None:
        raise PhaseError(
            "no_model",
            "the request names no model to evaluate: add '... on <provider>/<model>' or pass 'sut'",
        )


async def fetch(ctx: PhaseContext) -> None:
    run = ctx.run
    if not run.subset_id:
        raise PhaseError("no_dataset", "no benchmark subset to fetch")
    rows = await ctx.work.subset_rows(run.subset_id)
    run.fetch_done(
        source=f"registry:{run.subset_id}",
        content_sha256=rows.content_sha256 or "",
        total_tasks=rows.total,
        bucket=rows.bucket,
        object_name=rows.object_name,
    )
    await ctx.work.ensure_sandbox()
    await ctx.work.snapshot("fetch")
    after_cache_hit(ctx, "fetch")


def after_cache_hit(ctx: PhaseContext, phase: str) -> None:
    """What a phase decides beyond its cached work: without Analyze, Fetch selects.

    A replay fetching a newer snapshot takes all of it, or the slice it names.
    """
    run = ctx.run
    if phase != "fetch" or "analyze" in run.progress.plan:
        return
    if run.mode != "replay":
        select(ctx, scope_selection({"kind": "all"}, cap=run.limit))
        return
    replay = run.replay or {}
    select(
        ctx,
        replay_selection(
            scope_selection({"kind": "all"}),
            int(run.dataset["total_tasks"]),
            replay.get("indices"),
            run.limit,
        ),
    )


def select(ctx: PhaseContext, selection: dict[str, Any]) -> None:
    run = ctx.run
    total = int(run.dataset["total_tasks"])
    run.dataset_tasks(
        benchmark_id=run.benchmark_id or "",
        subset_id=run.subset_id or "",
        total_tasks=total,
        selected_tasks=len(selected_indices(selection, total)),
        content_sha256=str(run.dataset["content_sha256"]),
        selection=selection,
    )


async def sample(ctx: PhaseContext, tools: PipelineTools) -> RowSample:
    """A few rows for the Driver: one per category when the scope asks per category."""
    scope = ctx.run.scope or {}
    per = int(scope.get("n") or 1) if scope.get("kind") == "per_category" else 1
    return await tools.sample_rows(per_category=per)


async def analyze(ctx: PhaseContext) -> None:
    run = ctx.run
    tools = ctx.tools("analyze")
    rows = await sample(ctx, tools)
    analysis = await ctx.driver.analyze(rows, tools)
    run.analyze_done(
        kind=analysis.kind,
        schema=analysis.schema,
        schema_sha256=sha256_hex(canonical_json(analysis.schema)),
        subsets=[run.subset_id or ""],
        fields=analysis.fields,
        candidates=analysis.candidates,
        evidence=analysis.evidence,
    )
    selection = scope_selection(
        run.scope or {"kind": "all"}, category_indices=rows.category_indices, cap=run.limit
    )
    if selection["kind"] == "indices":
        run.synthetic_subset(
            subset_id="sub_"
            + fingerprint12(f"{run.dataset['content_sha256']}:{selection['indices']}"),
            parent_subset_id=run.subset_id or "",
            selection=selection,
            task_count=len(selection["indices"]),
        )
    select(ctx, selection)
