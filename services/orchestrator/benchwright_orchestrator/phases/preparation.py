"""Setup, Attach, Atomize: the scorer and the model a sweep needs."""

import json
from typing import Any

from benchwright_orchestrator.driver.base import Analysis
from benchwright_orchestrator.phases.context import PhaseContext
from benchwright_orchestrator.phases.discovery import sample
from benchwright_orchestrator.phases.harbor import harbor_setup
from benchwright_orchestrator.phases.harness import inspect_setup
from benchwright_orchestrator.ports import PhaseError
from benchwright_shared.contracts import SandboxFile
from benchwright_shared.hashing import canonical_json, sha256_hex
from benchwright_shared.ids import impl_id_for

RUNTIME_PROBE = ["python", "-c", "import bench_task, bench_runner, json; print('ok')"]


async def setup(ctx: PhaseContext) -> None:
    """Install the scorer a pin names (if any) and prove the runtime works; for a
    harness run, lay its task files and list their samples instead."""
    run = ctx.run
    if run.harness_name == "inspect":
        await inspect_setup(ctx)
        return
    if run.harness_name == "harbor":
        await harbor_setup(ctx)
        return
    code = await ctx.work.scorer_code() if run.impl_id else None
    files = [SandboxFile(path="task_impl.py", content=code)] if code else []
    probe = await ctx.work.exec(RUNTIME_PROBE, files=files)
    if probe.exit_code != 0:
        raise PhaseError("runtime_broken", (probe.stderr or probe.stdout)[-2000:])
    run.setup_done(
        impl_id=run.impl_id if code else None,
        impl_sha256=sha256_hex(code) if code else None,
        code=code,
    )
    await ctx.work.snapshot("setup")


async def attach(ctx: PhaseContext) -> None:
    run = ctx.run
    reply = await ctx.work.attach(fresh=True)
    run.model_proxy(
        model_id=reply.model_id,
        litellm_config_yaml=reply.litellm_config_yaml,
        proxy_url=reply.proxy_url,
    )
    if run.mode == "replay" and run.scorer is None:
        await ctx.store.inherit_scorer(run)
        # On a newer snapshot the work sandbox is already up (Fetch, Setup): the
        # inherited scorer joins it. Otherwise Materialize creates it with the scorer.
        await ctx.work.install_scorer()


async def atomize(ctx: PhaseContext) -> None:
    run = ctx.run
    if run.artifacts.analysis is None:
        raise PhaseError("no_analysis", "Atomize needs Analyze's findings")
    tools = ctx.tools("atomize")
    rows = await sample(ctx, tools)
    analysis = Analysis(
        kind=str(run.artifacts.analysis["kind"]),
        schema=dict(run.artifacts.analysis["schema"]),
        fields=dict(run.artifacts.analysis["fields"]),
        candidates=list(run.artifacts.analysis["candidates"]),
        evidence=list(run.artifacts.analysis["evidence"]),
    )
    invocation = run.progress.invocations["atomize"]
    # Attempts count since the last person looked (a review answer resets them).
    scorer = await ctx.driver.atomize(
        analysis, rows, attempt=run.progress.restarts + 1, guidance=list(run.guidance), tools=tools
    )
    await tools.write_file("task_impl.py", scorer.code)
    run.atomize_done(
        impl_id=impl_id_for(run.benchmark_id or "bm_unknown", scorer.code),
        impl_sha256=sha256_hex(scorer.code),
        invocation=invocation,
        kind=scorer.kind,
        code=scorer.code,
        check=scorer.check,
        guidance=list(run.guidance),
    )
    await ctx.work.snapshot("atomize")


async def report(ctx: PhaseContext) -> None:
    run = ctx.run
    content: dict[str, Any] = {
        "run_id": run.run_id,
        "benchmark_id": run.benchmark_id,
        "subset_id": run.subset_id,
        "impl_id": run.impl_id,
        "model": run.sut,
        "selection": run.artifacts.selection,
        "trials": run.sweep.trials,
        "summary": run.summary(),
    }
    run.report_file(
        name="report.json",
        media_type="application/json",
        content=json.dumps(content, indent=2, sort_keys=True),
        sha256=sha256_hex(canonical_json(content)),
    )
