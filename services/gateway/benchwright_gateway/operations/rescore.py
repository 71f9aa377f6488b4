"""Rescoring: a finished run's recorded outputs scored again by another scorer of the
same subset (or the same one with another judge), in a new run derived from it; the
model under test is not called (decision 0062)."""

import json

from benchwright_gateway.operations.launch import Launched, checked_judges, derived_run, once
from benchwright_gateway.operations.runs import owned_run
from benchwright_gateway.ports import LaunchPorts, RunRow
from benchwright_gateway.requests import RescoreRequest
from benchwright_shared.contracts import LaunchRun, ResolveBenchmark
from benchwright_shared.refusal import Refused


async def rescore(
    ports: LaunchPorts, account: str, run_id: str, body: RescoreRequest, key: str | None
) -> Launched:
    """Score the caller's finished run ``run_id`` again with ``body.impl``, once per
    idempotency ``key`` (the body's stands in for a missing header)."""
    parent = await owned_run(ports, account, run_id)
    _check_rescorable(parent)
    if await ports.recorded_outputs(run_id) == 0:
        raise Refused(
            422,
            "nothing to rescore",
            f"run {run_id} recorded no output for any task: there is nothing to score again",
            field="run_id",
            code="no_recorded_outputs",
        )
    impl_id = await _impl_of_subset(ports, account, parent, body.impl)
    judges = await checked_judges(ports, account, body)
    key = key or body.idempotency_key

    async def start(child_id: str) -> LaunchRun:
        return derived_run(
            child_id,
            account,
            parent,
            key,
            body.limits,
            mode="rescore",
            impl_id=impl_id,
            # None: the parent's judges (the orchestrator takes them from its run).
            judges=judges,
            # The parent's model, dataset, selection, trials and backend come with it
            # (the orchestrator reads them from the parent's log).
            driver=parent.get("driver"),
        )

    payload = {"rescore_of": run_id, **body.model_dump(mode="json", exclude={"idempotency_key"})}
    return await once(ports, account, key, payload, start)


def _check_rescorable(parent: RunRow) -> None:
    """A rescore needs a run that finished ``ok`` and was scored by a scorer of ours."""
    run_id = parent["run_id"]
    if parent.get("status") != "ok":
        raise Refused(
            409,
            "run not finished",
            f"run {run_id} is {parent.get('status')!r}: only a run that finished 'ok' "
            "can be rescored",
            field="run_id",
            code="rescore_source_not_finished",
        )
    metadata = json.loads(parent.get("metadata") or "{}")
    harness = next((h for h in ("inspect_harness", "harbor_harness") if h in metadata), None)
    if harness is not None or not parent.get("benchmark_id") or not parent.get("subset_id"):
        why = (
            f"a third-party harness ({harness.split('_')[0]}) scored it"
            if harness
            else "it pins no benchmark subset"
        )
        raise Refused(
            422,
            "run cannot be rescored",
            f"run {run_id} cannot be rescored by an impl: {why}",
            field="run_id",
            code="not_rescorable",
        )


async def _impl_of_subset(ports: LaunchPorts, account: str, parent: RunRow, impl: str) -> str:
    """The id of ``impl`` as a scorer of the parent's subset; 422 naming ``impl`` when it
    is not one of that subset's."""
    subset = parent.get("subset_slug") or parent["subset_id"]
    found = await ports.resolve(
        ResolveBenchmark(
            account=account, benchmark=parent["benchmark_id"], subset=subset, impl=impl
        )
    )
    if found.problem is not None or not found.impl_id:
        detail = found.problem.detail if found.problem else None
        raise Refused(
            422,
            "impl not of this subset",
            f"{impl!r} is not a scorer of the subset run {parent['run_id']} ran "
            f"({subset})" + (f": {detail}" if detail else ""),
            field="impl",
            code="impl_not_in_subset",
        )
    return found.impl_id
