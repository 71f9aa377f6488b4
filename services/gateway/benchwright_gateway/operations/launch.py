"""Launching runs: a launch body checked, resolved into one ``LaunchRun`` and sent,
at most once per idempotency key.

The gateway checks what it can answer itself (one launch mode, the fields that
mode takes, the caller's parent run, a replay slice naming real tasks, the money
where billing is enforced) and sends one command to the orchestrator; everything
else happens in the run's pipeline and shows in its log. A pinned launch and an
``inspect_evals`` task are resolved by the registry here, so a typo is a 404 now.
"""

import json
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from benchwright_gateway.domain import body_fingerprint
from benchwright_gateway.harbor import check_harbor, check_pinned, harbor_launch, with_stored_files
from benchwright_gateway.harness import inspect_launch
from benchwright_gateway.operations import key_reused, raise_for
from benchwright_gateway.operations.funds import check_funds
from benchwright_gateway.operations.replay import replay_command
from benchwright_gateway.operations.runs import owned_run
from benchwright_gateway.ports import LaunchPorts, Registry, RunRow
from benchwright_gateway.requests import ForkRequest, LaunchRequest, RescoreRequest, SutIn
from benchwright_shared.agentic import MAX_TASKS
from benchwright_shared.api.launch import Run
from benchwright_shared.contracts import (
    BenchmarkResolution,
    GetImpl,
    LaunchRun,
    ResolveBenchmark,
    SutRef,
)
from benchwright_shared.contracts.queries import CheckProviderKeys
from benchwright_shared.contracts.registry import ReadSubset
from benchwright_shared.ids import new_run_id
from benchwright_shared.judging import uses_judge
from benchwright_shared.refusal import Refused
from benchwright_shared.scoring import DEFAULT_TRIALS

MODES = ("request", "benchmark", "replay")
# What a replay leaves to its parent: no Driver decides anything in it.
NOT_IN_A_REPLAY = ("hints", "phase_models")

# The command for a run id: a checked launch, resolved once the id is known.
Start = Callable[[str], Awaitable[LaunchRun]]


@dataclass(frozen=True)
class Launched:
    """A launch's answer: the run, and whether an earlier launch with the same
    idempotency key made it (answered 200, not 201)."""

    run: Run
    repeated: bool = False


async def launch(
    ports: LaunchPorts, account: str, body: LaunchRequest, key: str | None
) -> Launched:
    """Launch ``body`` for ``account``, once per idempotency ``key``."""
    start = checked_launch(ports, account, body, key)
    return await once(ports, account, key, body.model_dump(mode="json"), start)


async def fork(
    ports: LaunchPorts, account: str, run_id: str, body: ForkRequest, key: str | None
) -> Launched:
    """Rewind the caller's run to ``from_phase`` and carry on with ``description`` as
    guidance, in a new run; the body's key stands in for a missing header."""
    parent = await owned_run(ports, account, run_id)
    key = key or body.idempotency_key

    async def start(child_id: str) -> LaunchRun:
        return derived_run(
            child_id,
            account,
            parent,
            key,
            body.limits,
            mode="fork",
            fork={"description": body.description, "from_phase": body.from_phase},
            sut=_sut(body.sut),
            driver=body.driver or parent.get("driver"),
            compute=body.compute,
        )

    payload = {"fork_of": run_id, **body.model_dump(mode="json", exclude={"idempotency_key"})}
    return await once(ports, account, key, payload, start)


def derived_run(
    child_id: str,
    account: str,
    parent: RunRow,
    key: str | None,
    limits: dict[str, Any] | None,
    **fields: Any,
) -> LaunchRun:
    """The command for run ``child_id`` derived from ``parent`` (a fork, a rescore): the
    parent's limits unless ``limits`` are given, and its metadata; ``fields`` the rest."""
    return LaunchRun(
        command_id=f"launch:{child_id}",
        run_id=child_id,
        account=account,
        parent_run_id=parent["run_id"],
        limits=limits or json.loads(parent.get("limits") or "{}"),
        metadata=json.loads(parent.get("metadata") or "{}"),
        idempotency_key=key,
        requested_at=datetime.now(UTC),
        **fields,
    )


async def estimate_command(ports: LaunchPorts, account: str, body: LaunchRequest) -> LaunchRun:
    """The command ``body`` would launch, checked and resolved as a launch is; nothing
    is sent, and no run id is taken."""
    return await checked_launch(ports, account, body, None)(f"estimate:{uuid.uuid4()}")


async def once(
    ports: LaunchPorts, account: str, key: str | None, body: dict[str, Any], start: Start
) -> Launched:
    """Launch at most once per idempotency key: a repeat answers the first run."""
    fingerprint = body_fingerprint(body)
    if key:
        earlier = await ports.find_launch(account, key)
        if earlier is not None:
            return await _repeat(ports, earlier.run_id, earlier.body_sha256, fingerprint)
    await check_funds(ports, account)
    run_id = new_run_id()
    command = await start(run_id)
    if key:
        record = await ports.remember_launch(account, key, fingerprint, run_id)
        if record.run_id != run_id:  # lost a race with an identical request
            return await _repeat(ports, record.run_id, record.body_sha256, fingerprint)
    await ports.send(command)
    row = await ports.wait_for_run(run_id)
    return Launched(await ports.show(row or placeholder(command)))


async def _repeat(ports: LaunchPorts, run_id: str, stored: str, fingerprint: str) -> Launched:
    if stored != fingerprint:
        raise key_reused()
    row = await ports.run(run_id)
    if row is None:  # launched, not read yet
        return Launched(
            Run(id=run_id, object="run", status="running", display_status="running"), True
        )
    return Launched(await ports.show(row), True)


def check_modes(body: LaunchRequest) -> None:
    """Refuse a body that names no launch mode or several, or fields its mode does not take."""
    modes = [m for m in MODES if getattr(body, m) is not None]
    if body.bridged():
        _check_bridged(body, modes)
    if len(modes) > 1:
        raise Refused(
            400,
            "conflicting launch modes",
            f"send one of 'request', 'benchmark' or 'replay', not {' and '.join(modes)}",
            field=modes[0] if modes[0] != "benchmark" else modes[1],
            code="invalid_argument",
        )
    if not modes and not body.bridged():
        raise Refused(
            400,
            "nothing to run",
            "send 'request' (natural language), 'benchmark' (pinned) or 'replay'",
            field="request",
            code="invalid_argument",
        )
    if body.benchmark is None and (body.subset or body.impl):
        field = "subset" if body.subset else "impl"
        raise Refused(400, f"'{field}' needs 'benchmark'", field=field)
    if body.benchmark is not None and body.sut is None:
        raise Refused(400, "a pinned launch needs 'sut'", field="sut")
    for name in NOT_IN_A_REPLAY:
        if body.replay is not None and getattr(body, name) is not None:
            raise Refused(
                400,
                f"a replay takes no '{name}'",
                "a replay runs its parent's scorer: no Driver decides anything in it",
                field=name,
            )
    if body.phase_models and body.driver == "builtin":
        raise Refused(
            400,
            "the builtin Driver has no model",
            "phase_models applies to the LLM Driver ('litellm' or '<provider>://<model>')",
            field="phase_models",
        )


def _check_bridged(body: LaunchRequest, modes: list[str]) -> None:
    """A harness run names its task, not a benchmark or a parent, and needs a model; a
    Harbor run may instead pin an agentic subset (``benchmark`` + ``subset``)."""
    metadata = body.metadata.model_dump(exclude_none=True)
    if body.harness == "harbor" and "benchmark" in modes and "replay" not in modes:
        if body.impl is not None:
            raise Refused(
                400,
                "a harbor run takes no 'impl'",
                "each task's own tests score a Harbor run",
                field="impl",
            )
        check_pinned(metadata)  # the files are the subset's, checked once they are read
        return
    if "benchmark" in modes or "replay" in modes:
        field = "benchmark" if "benchmark" in modes else "replay"
        raise Refused(
            400,
            f"a {body.harness} run takes no '{field}'",
            f"the {body.harness} harness runs the task named in metadata.{body.harness}_harness",
            field=field,
        )
    # Refused here, before the funds and idempotency checks, not later.
    if body.harness == "harbor":
        # Checked again once the account's default backend is known (``harbor_launch``).
        check_harbor(metadata, body.compute)
    else:
        inspect_launch(metadata)
    if body.sut is None:
        raise Refused(400, f"a {body.harness} run needs 'sut'", field="sut")


def checked_launch(ports: LaunchPorts, account: str, body: LaunchRequest, key: str | None) -> Start:
    """Check a launch body now; the function that resolves it into the command for a
    run id (after the idempotency and funds checks)."""
    check_modes(body)

    async def start(run_id: str) -> LaunchRun:
        # The account's defaults fill what the body leaves out; a replay keeps
        # its parent's choices instead.
        defaults = {} if body.replay else await ports.defaults(account)
        common: dict[str, Any] = {
            "command_id": f"launch:{run_id}",
            "run_id": run_id,
            "account": account,
            "sut": _sut(body.sut),
            "limit": body.task_cap(),
            "trials": body.trials.model_dump() if body.trials else dict(DEFAULT_TRIALS),
            "metadata": body.metadata.model_dump(exclude_none=True),
            "idempotency_key": key,
            "requested_at": datetime.now(UTC),
            "driver": body.driver or defaults.get("default_driver"),
            "compute": body.compute or defaults.get("default_compute"),
            "limits": body.ceilings() or defaults.get("default_limits") or {},
            "hints": body.hint_list(),
            "phase_models": body.phase_models or {},
            "cache": body.cache_setting(),
            "telemetry": body.telemetry_setting(),
            "judges": await checked_judges(ports, account, body),
        }
        if body.bridged():
            return await bridged_command(ports, account, body, common)
        if body.request is not None:
            return LaunchRun(mode="natural_language", request=body.request, **common)
        if body.replay is not None:
            return await replay_command(ports, account, body.replay, common)
        return await pinned_command(ports, account, body, common)

    return start


async def resolve(
    registry: Registry, account: str, benchmark: str, subset: str | None, impl: str | None
) -> BenchmarkResolution:
    """The registry's benchmark, subset and impl for what a launch names; its refusal
    (a 404 naming the field) otherwise."""
    resolution = await registry.resolve(
        ResolveBenchmark(account=account, benchmark=benchmark, subset=subset, impl=impl)
    )
    raise_for(resolution.problem, code="not_found")
    assert resolution.benchmark_id and resolution.subset_id and resolution.subset_slug
    return resolution


async def pinned_command(
    registry: Registry, account: str, body: LaunchRequest, common: dict[str, Any]
) -> LaunchRun:
    """A pinned run: the benchmark, subset and impl the registry resolves. The
    subset's default trials stand in for none asked, and a built subset's task
    timeout bounds each task unless the launch's limit is narrower."""
    assert body.benchmark is not None
    resolution = await resolve(registry, account, body.benchmark, body.subset, body.impl)
    if resolution.agentic:
        raise Refused(
            400,
            "the subset is a Harbor dataset",
            f"subset {resolution.subset_slug!r} holds Harbor tasks: an agent runs them, "
            "launch it with harness 'harbor' and metadata.harbor_harness.agent",
            field="harness",
            code="agentic_subset_needs_harbor",
        )
    if not common.get("judges") and resolution.impl_id:
        await _refuse_unjudged(registry, resolution.impl_id)
    if body.trials is None and resolution.default_trials:
        common = {**common, "trials": resolution.default_trials}
    if resolution.task_timeout_s:
        limits = {level: dict(q) for level, q in common["limits"].items()}
        task = limits.setdefault("task", {})
        task["duration"] = min(resolution.task_timeout_s, task.get("duration", float("inf")))
        common = {**common, "limits": limits}
    return LaunchRun(
        mode="pinned",
        benchmark_id=resolution.benchmark_id,
        benchmark_name=resolution.benchmark_name or body.benchmark,
        subset_id=resolution.subset_id,
        subset_slug=resolution.subset_slug,
        impl_id=resolution.impl_id,
        **common,
    )


async def bridged_command(
    registry: Registry, account: str, body: LaunchRequest, common: dict[str, Any]
) -> LaunchRun:
    """An Inspect run: its task is the benchmark. A team's task file brings its own
    data (no Find, no registry pin); an inspect_evals task is fed a catalog subset.
    A Harbor run: its dataset is the benchmark, its files brought along."""
    if body.harness == "harbor" and body.benchmark is not None:
        return await pinned_harbor_command(registry, account, body, common)
    if body.harness == "harbor":
        return harbor_command(body, common)
    harness, metadata = inspect_launch(common["metadata"])
    common = common | {"metadata": metadata}
    task = metadata["inspect_harness"]["task"]
    catalog = harness.pop("catalog", None)
    if catalog is None:
        return LaunchRun(
            mode="natural_language",
            request=body.request or f"Inspect task {task}",
            benchmark_name=f"inspect:{task}",
            harness=harness,
            **common,
        )
    found = await resolve(registry, account, catalog["benchmark"], catalog["subset"], None)
    return LaunchRun(
        mode="pinned",
        request=body.request,
        benchmark_id=found.benchmark_id,
        benchmark_name=found.benchmark_name or catalog["benchmark"],
        subset_id=found.subset_id,
        subset_slug=found.subset_slug,
        harness=harness,
        **common,
    )


def harbor_command(body: LaunchRequest, common: dict[str, Any]) -> LaunchRun:
    """A Harbor run on the launch's compute (or the account's default): the dataset
    checked again with the backend known, nothing resolved by the registry."""
    harness, metadata = harbor_launch(common["metadata"], common["compute"])
    dataset, task = harness["dataset"], harness["task"]
    described = f"Harbor dataset {dataset}" + (f", task {task}" if task else "")
    return LaunchRun(
        mode="natural_language",
        request=body.request or described,
        benchmark_name=f"harbor:{dataset}",
        harness=harness,
        **(common | {"metadata": metadata}),
    )


async def pinned_harbor_command(
    registry: Registry, account: str, body: LaunchRequest, common: dict[str, Any]
) -> LaunchRun:
    """A Harbor run of an agentic subset: the registry's tasks laid out as the files a
    file launch sends, checked the same way, and carried in the harness (decision 0050);
    the run pins the subset, so its leaderboard and replays are the subset's."""
    assert body.benchmark is not None
    found = await resolve(registry, account, body.benchmark, body.subset, None)
    answer = await registry.subset(
        ReadSubset(account=account, subset_id=found.subset_id or "", rows_limit=MAX_TASKS)
    )
    raise_for(answer.problem, code="not_found")
    slug = found.subset_slug or ""
    metadata = with_stored_files(common["metadata"], slug, answer.rows)
    harness, kept = harbor_launch(metadata, common["compute"])
    task = harness["task"]
    return LaunchRun(
        mode="pinned",
        request=body.request or f"Harbor subset {slug}" + (f", task {task}" if task else ""),
        benchmark_id=found.benchmark_id,
        benchmark_name=found.benchmark_name or body.benchmark,
        subset_id=found.subset_id,
        subset_slug=slug,
        harness=harness,
        **(common | {"metadata": kept}),
    )


def placeholder(command: LaunchRun) -> RunRow:
    """The row a launched run will have, for an answer before the view shows it."""
    return {
        "run_id": command.run_id,
        "account": command.account,
        "status": "running",
        "phase": None,
        "benchmark_id": command.benchmark_id,
        "benchmark_name": command.benchmark_name,
        "subset_id": command.subset_id,
        "subset_slug": command.subset_slug,
        "impl_id": command.impl_id,
        "model": command.sut.model_dump_json() if command.sut else None,
        "metadata": json.dumps(command.metadata),
        "created_at": command.requested_at.isoformat(),
        "mode": command.mode,
        "request": command.request,
        "parent_run_id": command.parent_run_id,
    }


async def checked_judges(
    ports: LaunchPorts, account: str, body: LaunchRequest | RescoreRequest
) -> list[SutRef] | None:
    """The launch's (or rescore's) judges, each one a key reaches (else refused naming it)."""
    judges = [judge for judge in map(_sut, body.judge_list()) if judge is not None]
    if not judges:
        return None
    answer = await ports.provider_keys(CheckProviderKeys(account=account, suts=judges))
    raise_for(answer.problem)
    for index, why in sorted(answer.missing.items()):
        field = "judge.provider" if not isinstance(body.judge, list) else f"judge[{index}].provider"
        raise Refused(
            422, "the judge cannot be called", why, field=field, code="missing_credentials"
        )
    return judges


async def _refuse_unjudged(registry: Registry, impl_id: str) -> None:
    """Refuse a scorer that grades with a judge when the launch names none: every task
    would end ``infra:no_judge`` after paying for the model's answer."""
    found = await registry.impl(GetImpl(impl_id=impl_id))
    if found.code and uses_judge(found.code):
        raise Refused(
            422,
            "the scorer needs a judge",
            f"impl {impl_id} grades with a judge (it calls self.judge or bench_judge): "
            "name one with 'judge' ({model, provider}) or a panel as a list",
            field="judge",
            code="judge_required",
        )


def _sut(body: SutIn | None) -> SutRef | None:
    if body is None:
        return None
    return SutRef(
        model=body.model,
        provider=body.provider,
        api_base=str(body.api_base) if body.api_base else None,
    )
