"""Harbor runs (``harness: "harbor"``): an agent at each task, in a sandbox of its own,
then the task's own tests.

Setup reads the dataset the launch carried (the gateway checked every task and its
environment before the run existed): index ``i`` of the run is the ``i``-th task in
name order. Materialize runs every unsettled (task, trial) as an *attempt*::

    a fresh sandbox laid out from the task's environment plan (/app, /logs, ...)
    the agent      benchwright: the tool-calling loop (agents/loop.py), its model
                   reached through the run's proxy with the run's key;
                   oracle: solution/solve.sh; nop: nothing; product: a product
                   under test, booted, driven and stopped (harbor_product.py)
    the verifier   tests/ copied in only now (the agent never sees them), then
                   tests/test.sh; /logs/verifier/reward.json|txt is the score
    one result     pass at reward 1, fail below; err when the verifier gave no reward

Each step is in the run's log before the next begins (``agent_events``). An attempt
the platform broke (its sandbox lost, the orchestrator restarted mid-attempt) runs
again from a fresh sandbox as attempt + 1, never from the half-changed one, at most
``MAX_ATTEMPTS`` times; the trial is then an error. A halt cancels the attempts under
way at their next await (a model call or a command, each bounded by its timeout) and
kills their sandboxes.

The verifier runs in the agent's sandbox (Harbor's "shared" mode). Each attempt's
sandbox has the ``harbor_task_env`` role; a product run first probes its tasks'
environments in ``template_probe`` sandboxes (``probe_products``).
"""

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from benchwright_orchestrator.agents.loop import (
    AGENT_NAME,
    AgentLimits,
    AttemptEnd,
    AttemptRef,
    run_agent,
)
from benchwright_orchestrator.agents.openai_model import ProxyAgentModel
from benchwright_orchestrator.domain.agents import MAX_ATTEMPTS
from benchwright_orchestrator.phases.context import PhaseContext
from benchwright_orchestrator.phases.harbor_attempts import (
    AGENT_LOGS,
    SOLUTION_DIR,
    TESTS_DIR,
    VERIFIER_LOGS,
    HarborAttempts,
    attempt_ids,
    record_ended,
    record_started,
    sandbox_dirs,
)
from benchwright_orchestrator.phases.harbor_bridge import BRIDGE_AGENTS, agent_dirs, run_bridged
from benchwright_orchestrator.phases.harbor_product import probe_products, run_product
from benchwright_orchestrator.phases.harbor_state import carry_final_state, restore_final_state
from benchwright_orchestrator.phases.sandbox_life import create_held, kill_held
from benchwright_orchestrator.phases.task_sandbox import WorkspaceTaskSandbox
from benchwright_orchestrator.plan import scope_selection, selected_indices
from benchwright_orchestrator.ports import InfraError, PhaseError
from benchwright_shared.agentic import (
    PRODUCT_AGENT,
    REWARD_JSON_PATH,
    REWARD_TEXT_PATH,
    AgenticDataset,
    AgenticTask,
    EnvironmentPlan,
    VerifierError,
    builds_dockerfiles,
    environment_build,
    environment_plan,
    image_plan,
    load_dataset,
    parse_reward,
    template_plan,
)
from benchwright_shared.contracts import EnvironmentBuild, SandboxFile, TaskOutcome
from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentToolResult,
    AttemptEndReason,
    VerifierFinished,
    cap_text,
)
from benchwright_shared.hashing import canonical_json, sha256_hex
from benchwright_shared.money import dollars_to_micros
from benchwright_shared.refusal import Refused

__all__ = ["AGENTS", "harbor_materialize", "harbor_setup", "sandbox_dirs"]

AGENTS = (AGENT_NAME, "oracle", "nop", PRODUCT_AGENT, *BRIDGE_AGENTS)
# A task.toml that gives no agent timeout: how long the oracle's solve.sh may run.
DEFAULT_AGENT_TIMEOUT_S = 600.0
# A reward of 1 passes (Harbor's "resolved"); anything less is a fail.
PASS_REWARD = 1.0
DEFAULT_LIMITS = AgentLimits()


def harbor_dataset(ctx: PhaseContext) -> AgenticDataset:
    harness = ctx.run.harness or {}
    try:
        return load_dataset(
            harness["files"], dataset=str(harness["dataset"]), only=harness.get("task")
        )
    except Refused as exc:  # the gateway checked it: only an older or forged launch
        raise PhaseError("harness_task_broken", exc.detail or exc.title) from None


def _plan(task: AgenticTask, backend: str) -> EnvironmentPlan:
    try:
        # A task's own image is its environment (the gateway sends it to sandbox0 only).
        if task.config.environment.docker_image:
            return image_plan(task)
        # A backend that builds the Dockerfile runs it whole (decision 0058).
        if builds_dockerfiles(backend):
            return template_plan(task)
        return environment_plan(task)
    except Refused as exc:
        raise PhaseError("environment_refused", exc.detail or exc.title) from None


def _builds(tasks: list[AgenticTask], backend: str) -> dict[str, EnvironmentBuild]:
    """The environments to build, by task: each Dockerfile task's, where the backend builds."""
    if not builds_dockerfiles(backend):
        return {}
    return {
        task.name: environment_build(task)
        for task in tasks
        if not task.config.environment.docker_image
    }


async def harbor_setup(ctx: PhaseContext) -> None:
    """Record the dataset's tasks and the selection; no sandbox is needed yet."""
    run, harness = ctx.run, ctx.run.harness or {}
    dataset = harbor_dataset(ctx)
    noted: dict[str, list[str]] = {}
    for task in dataset.tasks.values():
        for note in _plan(task, run.backend).notes:
            noted.setdefault(note, []).append(task.name)
    for note, names in noted.items():
        run.agent_text(phase="setup", text=f"{note} (tasks: {', '.join(names)})")
    total = len(dataset.tasks)
    selection = scope_selection({"kind": "all"}, cap=run.limit)
    run.agent_text(
        phase="setup",
        text=f"Harbor dataset {dataset.name}: {total} tasks, agent {harness.get('agent')}",
    )
    run.dataset_tasks(
        benchmark_id=run.benchmark_id or "",
        subset_id=run.subset_id or "",
        total_tasks=total,
        selected_tasks=len(selected_indices(selection, total)),
        content_sha256=dataset.digest,
        selection=selection,
    )
    # What decides the scores besides the model: the tasks, the agent and its settings.
    scored_by = {
        "dataset": dataset.digest,
        "agent": harness.get("agent"),
        "agent_args": harness.get("agent_args") or {},
    }
    run.setup_done(impl_id=None, impl_sha256=sha256_hex(canonical_json(scored_by)))


async def harbor_materialize(ctx: PhaseContext) -> None:
    run, harness = ctx.run, ctx.run.harness or {}
    dataset = harbor_dataset(ctx)
    tasks = list(dataset.tasks.values())
    model = await ctx.work.attach()
    todo = run.sweep.unsent(run.artifacts.selected())
    run.agent_text(
        phase="materialize",
        text=f"{len(todo)} task trials to run, each in a sandbox of its own",
    )
    async with httpx.AsyncClient(timeout=600.0) as client:
        harbor = HarborAttempts(
            ctx,
            model,
            tasks,
            {t.name: _plan(t, run.backend) for t in tasks},
            str(harness.get("agent") or AGENT_NAME),
            dict(harness.get("agent_args") or {}),
            client,
            _builds(tasks, run.backend),
        )
        if harbor.agent == PRODUCT_AGENT and todo:
            await probe_products(harbor, [index for index, _ in todo])
        queue = iter(todo)  # shared by the workers: each trial is taken once

        async def worker() -> None:
            for index, trial in queue:
                await _trial(harbor, index, trial)

        limit = ctx.settings.task_concurrency
        workers = min(limit, model.max_concurrency or limit, len(todo))
        try:
            async with asyncio.TaskGroup() as group:
                for _ in range(workers):
                    group.create_task(worker())
        except BaseExceptionGroup as failed:
            raise failed.exceptions[0] from None


# -- one trial ------------------------------------------------------------------------
async def _trial(harbor: HarborAttempts, index: int, trial: int) -> None:
    """Attempts at one (task, trial) until one is scored, or none may run any more."""
    run = harbor.ctx.run
    task = harbor.tasks[index]
    # Crashes here, besides those on record: one before the agent started records none.
    failures = 0
    while not run.sweep.settled(index, trial):
        current = run.agents.attempt(index, trial)
        number = (current["attempt"] if current else 0) + 1
        if number > MAX_ATTEMPTS or failures >= MAX_ATTEMPTS:
            detail = f"the platform failed all {MAX_ATTEMPTS} attempts at this trial"
            await _settle(harbor, _error_row(index, trial, task, "crashed", detail))
            return
        ref = AttemptRef(task.name, index, trial, number, harbor.agent, _model_name(run.sut))
        try:
            row = await _attempt(harbor, task, ref)
        except InfraError as exc:  # the sandbox lost, the manager silent: run it again
            failures += 1
            await _crashed(harbor, ref, f"{exc.error_type}: {exc.detail}")
            continue
        except PhaseError as exc:  # the sandbox refused (isolation, a path): no rerun helps
            row = _error_row(index, trial, task, exc.error_type, exc.detail)
        await _settle(harbor, row)


def _model_name(sut: dict[str, Any] | None) -> str | None:
    if not sut or not sut.get("model"):
        return None
    return f"{sut['model']}@{sut['provider']}" if sut.get("provider") else str(sut["model"])


async def _settle(harbor: HarborAttempts, row: TaskOutcome) -> None:
    """Record the trial's row, with the verdict recorded before it, in one save."""
    run = harbor.ctx.run
    run.record_results([row], run.progress.invocations["materialize"])
    await harbor.ctx.save()


def _error_row(
    index: int, trial: int, task: AgenticTask, error_type: str, detail: str
) -> TaskOutcome:
    return TaskOutcome(
        index=index,
        trial=trial,
        task_id=task.name,
        outcome="err",
        error_type=error_type,
        error=detail[:2000],
    )


async def _crashed(harbor: HarborAttempts, ref: AttemptRef, detail: str) -> None:
    """Close an attempt the platform broke, so that the next one supersedes it."""
    run = harbor.ctx.run
    current = run.agents.attempt(ref.index, ref.trial)
    if current and current["attempt"] == ref.attempt and current["ended"] is None:
        await harbor.trajectory.record(
            AgentAttemptEnded(
                **attempt_ids(ref), reason="crashed", turns=current["turns"], detail=detail
            )
        )
    run.agent_text(
        phase="materialize",
        text=f"task {ref.task_id} trial {ref.trial}: attempt {ref.attempt} crashed ({detail})",
    )
    await harbor.ctx.save()


async def _attempt(harbor: HarborAttempts, task: AgenticTask, ref: AttemptRef) -> TaskOutcome:
    began = time.monotonic()
    plan = harbor.plans[task.name]
    files = [SandboxFile(path=p, content=c.decode()) for p, c in sorted(plan.files.items())]
    work = harbor.ctx.work
    # Harbor's "separate" verifier: a fresh sandbox, holding what the agent left.
    separate = task.config.verifier.environment_mode == "separate"
    image = task.config.environment.docker_image
    build = harbor.builds.get(task.name)
    dirs = [*sandbox_dirs(plan), *agent_dirs(harbor.agent)]
    sandbox_id = await create_held(
        work, work.create_agentic_sandbox(files, dirs, image=image, build=build)
    )
    try:
        network = _network(harbor, task, "agent")
        box = WorkspaceTaskSandbox(work, sandbox_id, env=dict(plan.env), network=network)
        made = await box.exec(["mkdir", "-p", *plan.directories, AGENT_LOGS, VERIFIER_LOGS])
        if made.exit_code != 0:
            raise PhaseError("environment_refused", f"could not lay out: {made.stderr[-500:]}")
        spent = await AGENT_RUNNERS[harbor.agent](harbor, task, box, ref)
        if separate:
            carried = await carry_final_state(work, sandbox_id, plan)
        else:
            row = await _verify(harbor, task, _verifier_box(harbor, task, sandbox_id), ref)
    finally:
        await kill_held(work, sandbox_id)
    if separate:
        fresh = await create_held(
            work,
            work.create_agentic_sandbox(
                [*files, carried], sandbox_dirs(plan), image=image, build=build
            ),
        )
        try:
            await restore_final_state(work, fresh)
            row = await _verify(harbor, task, _verifier_box(harbor, task, fresh), ref)
        finally:
            await kill_held(work, fresh)
    # The row covers the whole attempt, and what its model calls cost.
    usage = (
        {
            "cost_micros": spent.cost_micros,
            "prompt_tokens": spent.input_tokens,
            "completion_tokens": spent.output_tokens,
            "calls": spent.turns,
        }
        if spent is not None
        else {}
    )
    return row.model_copy(update={"duration_ms": int((time.monotonic() - began) * 1000), **usage})


def _verifier_box(
    harbor: HarborAttempts, task: AgenticTask, sandbox_id: str
) -> WorkspaceTaskSandbox:
    plan = harbor.plans[task.name]
    return WorkspaceTaskSandbox(
        harbor.ctx.work,
        sandbox_id,
        env={**plan.env, **task.config.verifier.env},
        network=_network(harbor, task, "verifier"),
    )


def _network(harbor: HarborAttempts, task: AgenticTask, phase: str) -> bool:
    """Whether a phase of the task reaches out at all: only a task that asks for the
    public network gets the run's egress, and there the account's host policy decides
    each host. An allowlist gets none (the injector knows no per-task list: narrower,
    never wider)."""
    policy = task.config.network_policy("agent" if phase == "agent" else "verifier")
    return policy.network_mode == "public" and harbor.model.egress is not None


# -- the agents -----------------------------------------------------------------------
# An agent runs its attempt; the platform's own says what it spent (the others spend nothing).
AgentRunner = Callable[
    [HarborAttempts, AgenticTask, WorkspaceTaskSandbox, AttemptRef], Awaitable[AttemptEnd | None]
]


async def _own_agent(
    harbor: HarborAttempts, task: AgenticTask, box: WorkspaceTaskSandbox, ref: AttemptRef
) -> AttemptEnd:
    args, run = harbor.agent_args, harbor.ctx.run
    timeouts = [t for t in (args.get("wall_time_s"), task.config.agent.timeout_sec) if t]
    cost = ((run.limits or {}).get("task") or {}).get("cost")
    limits = AgentLimits(
        max_turns=int(args.get("max_turns") or DEFAULT_LIMITS.max_turns),
        max_tokens=args.get("max_tokens"),
        wall_time_s=min(float(t) for t in timeouts) if timeouts else None,
        cost_micros=dollars_to_micros(cost) if cost else None,
    )
    model = ProxyAgentModel(
        harbor.model.proxy_url.rstrip("/") + "/v1",
        harbor.model.proxy_key,
        harbor.model.model_id,
        # The proxy meters and caps each call against its task and trial.
        {"x-benchwright-task": str(ref.index), "x-benchwright-trial": str(ref.trial)},
        client=harbor.client,
    )
    extra = {"system_prompt": args["system_prompt"]} if args.get("system_prompt") else {}
    return await run_agent(
        task.instruction,
        attempt=ref,
        model=model,
        sandbox=box,
        trajectory=harbor.trajectory,
        limits=limits,
        **extra,
    )


async def _oracle(
    harbor: HarborAttempts, task: AgenticTask, box: WorkspaceTaskSandbox, ref: AttemptRef
) -> AttemptEnd | None:
    """Harbor's ``oracle``: the task's own ``solution/solve.sh``, as one shell step."""
    await record_started(harbor, task, ref, tools=["shell"])
    solution = task.under("solution")
    files = [
        SandboxFile(path=f"{SOLUTION_DIR}/{p}", content=c.decode()) for p, c in solution.items()
    ]
    plan = harbor.plans[task.name]
    timeout_s = task.config.agent.timeout_sec or DEFAULT_AGENT_TIMEOUT_S
    done = await harbor.ctx.work.exec_in(
        box.sandbox_id,
        ["bash", f"{SOLUTION_DIR}/solve.sh"],
        files=files,
        cwd=plan.workdir,
        env={**box.env, **task.config.solution.env},
        timeout_s=timeout_s,
        network=box.network,
    )
    output = done.stdout + (f"\n[stderr]\n{done.stderr}" if done.stderr else "")
    shown, cut, chars = cap_text(output)
    await harbor.trajectory.record(
        AgentToolResult(
            **attempt_ids(ref),
            turn=0,
            call_id="solve",
            name="shell",
            exit_code=None if done.timed_out else done.exit_code,
            is_error=done.timed_out or done.exit_code != 0,
            output=shown,
            truncated=cut,
            output_chars=chars,
            duration_ms=done.duration_ms,
        )
    )
    reason: AttemptEndReason = "wall_time" if done.timed_out else "done"
    await record_ended(harbor, ref, reason, done.duration_ms)
    return None


async def _nop(
    harbor: HarborAttempts, task: AgenticTask, box: WorkspaceTaskSandbox, ref: AttemptRef
) -> AttemptEnd | None:
    """Harbor's ``nop``: does nothing (what the tests give an untouched environment)."""
    await record_started(harbor, task, ref, tools=[])
    await record_ended(harbor, ref, "done", 0)
    return None


AGENT_RUNNERS: dict[str, AgentRunner] = {
    AGENT_NAME: _own_agent,
    "oracle": _oracle,
    "nop": _nop,
    PRODUCT_AGENT: run_product,
    **dict.fromkeys(BRIDGE_AGENTS, run_bridged),  # Harbor's own agents: phases/harbor_bridge
}
assert tuple(AGENT_RUNNERS) == AGENTS


# -- the verifier ---------------------------------------------------------------------
async def _verify(
    harbor: HarborAttempts, task: AgenticTask, box: WorkspaceTaskSandbox, ref: AttemptRef
) -> TaskOutcome:
    """Copy the tests in, run them, read the reward; record the verdict and return the
    trial's row (both saved together by the caller's ``_settle``)."""
    tests = task.under("tests")
    files = [SandboxFile(path=f"{TESTS_DIR}/{p}", content=c.decode()) for p, c in tests.items()]
    timeout_s = task.config.verifier.timeout_sec
    ran = await harbor.ctx.work.exec_in(
        box.sandbox_id,
        ["bash", f"{TESTS_DIR}/test.sh"],
        files=files,
        cwd=harbor.plans[task.name].workdir,
        env=dict(box.env),
        timeout_s=timeout_s,
        network=box.network,
    )
    verdict: dict[str, Any] = {"duration_ms": ran.duration_ms}
    if ran.timed_out:
        verdict |= {
            "error_type": "verifier:timeout",
            "detail": f"tests/test.sh ran past its {timeout_s:g} s",
        }
    else:
        try:
            reward = parse_reward({name: await _read_reward(box, path) for name, path in REWARDS})
            verdict |= {"reward": reward.score, "metadata": dict(reward.metadata)}
        except VerifierError as exc:
            tail = (ran.stderr or ran.stdout)[-500:]
            verdict |= {
                "error_type": f"verifier:{exc.code}",
                "detail": f"{exc.detail} (tests/test.sh exited {ran.exit_code}: {tail})",
            }
    run = harbor.ctx.run
    run.record_agent_event(VerifierFinished(**attempt_ids(ref), **verdict))
    if verdict.get("error_type"):
        return _error_row(ref.index, ref.trial, task, verdict["error_type"], str(verdict["detail"]))
    score = float(verdict["reward"])
    return TaskOutcome(
        index=ref.index,
        trial=ref.trial,
        task_id=task.name,
        score=score,
        score_meta=verdict["metadata"],
        outcome="pass" if score >= PASS_REWARD else "fail",
        duration_ms=ran.duration_ms,
    )


REWARDS = (("reward.json", REWARD_JSON_PATH), ("reward.txt", REWARD_TEXT_PATH))


async def _read_reward(box: WorkspaceTaskSandbox, path: str) -> str | None:
    """A reward file's text; None when the verifier did not write it."""
    try:
        return await box.read(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise VerifierError("reward_unreadable", f"{path}: {exc.strerror}", path) from None
