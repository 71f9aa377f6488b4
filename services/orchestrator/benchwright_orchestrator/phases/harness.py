"""Setup for a run a third-party harness scores: Inspect AI.

The run's task files (the ``@task`` file and its local datasets) go into the work
sandbox, where ``bench_inspect list`` loads the task and writes its sample ids:
index ``i`` of the run is the ``i``-th sample, so selection, trials, resume and the
task table work as for any run. The files' SHA-256 stands where a scorer's would
(the run's fingerprint covers it); the ids' SHA-256 stands for the dataset's.
"""

import json

from benchwright_orchestrator.phases.context import PhaseContext
from benchwright_orchestrator.plan import scope_selection, selected_indices
from benchwright_orchestrator.ports import PhaseError
from benchwright_shared.contracts import SandboxFile
from benchwright_shared.hashing import canonical_json, sha256_hex

SAMPLES_FILE = "inspect_samples.json"
# Loading a task imports Inspect and builds its dataset: seconds, not minutes.
LIST_TIMEOUT_S = 300.0


def list_argv(harness: dict[str, object]) -> list[str]:
    return [
        "python",
        "-E",
        "-s",
        "bench_inspect.py",
        "list",
        "--task",
        str(harness["task"]),
        "--args",
        json.dumps(harness.get("args") or {}),
        "--samples",
        SAMPLES_FILE,
    ]


async def inspect_setup(ctx: PhaseContext) -> None:
    run = ctx.run
    harness = run.harness or {}
    files = [SandboxFile(path=p, content=t) for p, t in sorted(harness["files"].items())]
    listed = await ctx.work.exec(list_argv(harness), files=files, timeout_s=LIST_TIMEOUT_S)
    if listed.exit_code != 0:
        detail = (listed.stderr or listed.stdout or "no output")[-2000:]
        raise PhaseError("harness_task_broken", f"Inspect could not load the task: {detail}")
    try:
        found = json.loads(listed.stdout)
        total, digest = int(found["samples"]), str(found["sha256"])
    except (ValueError, KeyError, TypeError):
        detail = f"unreadable listing: {listed.stdout[:500]}"
        raise PhaseError("harness_task_broken", detail) from None
    if total == 0:
        raise PhaseError("harness_task_empty", f"the task {harness['task']} has no samples")
    selection = scope_selection({"kind": "all"}, cap=run.limit)
    run.agent_text(
        phase="setup",
        text=f"Inspect task {harness['task']}: {total} samples (first: {found.get('first')})",
    )
    run.dataset_tasks(
        benchmark_id=run.benchmark_id or "",
        subset_id=run.subset_id or "",
        total_tasks=total,
        selected_tasks=len(selected_indices(selection, total)),
        content_sha256=digest,
        selection=selection,
    )
    run.setup_done(impl_id=None, impl_sha256=sha256_hex(canonical_json(harness["files"])))
    await ctx.work.snapshot("setup")


LOGS_DIR = "inspect_logs"
LIST_LOGS = f"import glob, json; print(json.dumps(sorted(glob.glob('{LOGS_DIR}/*.eval'))))"
EVAL_MEDIA_TYPE = "application/zip"


async def keep_harness_logs(ctx: PhaseContext) -> None:
    """Hand the work sandbox's ``.eval`` logs (one per evaluation Inspect ran) to the
    object store and record each on the run, so that ``inspect view`` can open them.

    Logs already kept (a resumed sweep lists them again) are not recorded twice.
    """
    run = ctx.run
    listed = await ctx.work.exec(["python", "-c", LIST_LOGS])
    if listed.exit_code != 0:
        run.agent_text(phase="materialize", text=f"no Inspect logs to keep: {listed.stderr[-300:]}")
        return
    paths = json.loads(listed.stdout or "[]")
    if not paths:
        return
    done = await ctx.work.exec(["python", "-c", "pass"], export=paths)
    kept = {digest for _, digest in run.artifacts.harness_logs}
    for found in done.exported:
        if found.sha256 in kept:
            continue
        run.harness_log(
            name=found.path.rsplit("/", 1)[-1],
            media_type=EVAL_MEDIA_TYPE,
            bucket=found.bucket,
            object_name=found.object_name,
            sha256=found.sha256,
            size_bytes=found.size_bytes,
        )
    await ctx.save()
