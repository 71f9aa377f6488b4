"""Starting and steering runs: launch (natural language, pinned, replay), fork,
resume, review answers and deletion.

The gateway checks what it can answer from its own read models (the caller
owns the parent run, the slice names real tasks, the run is in a state that
takes this command) and sends one command to the orchestrator; everything
else happens in the run's pipeline and shows in its log. A replay of a run on a
rolling subset that grew since is the exception: the registry says which
snapshot is current, and the replay runs on it.
"""

import json
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Response

from benchwright_gateway import projections as views
from benchwright_gateway.api import estimate as estimate_api
from benchwright_gateway.api.auth import Principal
from benchwright_gateway.api.harness import inspect_launch
from benchwright_gateway.api.idempotency import key_reused
from benchwright_gateway.api.lookup import load_run, show, wait_for_row
from benchwright_gateway.api.models import ForkRequest, LaunchRequest, RunPatch, SutIn
from benchwright_gateway.api.settings import account_defaults
from benchwright_gateway.context import GatewayContext
from benchwright_gateway.domain import body_fingerprint
from benchwright_gateway.render import run_etag
from benchwright_shared.bus import ask, send_command
from benchwright_shared.contracts import (
    BenchmarkResolution,
    DeleteRun,
    GetSubsetRows,
    LaunchRun,
    ResolveBenchmark,
    ResolveRunHalt,
    SubsetRows,
    SutRef,
    UpdateRun,
)
from benchwright_shared.contracts.billing import BalanceView, ReadBalance
from benchwright_shared.contracts.registry import ReadSubset, RegistryAnswer
from benchwright_shared.ids import new_run_id
from benchwright_shared.refusal import Refused
from benchwright_shared.scoring import DEFAULT_TRIALS
from benchwright_shared.visibility import publish_problem

QUERY_TIMEOUT_S = 10.0
ROWS_PER_QUERY = 200  # the most GetSubsetRows answers at once
REVIEW_HALTS = ("agent_review", "restart_cap_exceeded")


def _sut(body: SutIn | None) -> SutRef | None:
    if body is None:
        return None
    return SutRef(
        model=body.model,
        provider=body.provider,
        api_base=str(body.api_base) if body.api_base else None,
    )


def build_router(ctx: GatewayContext, principal: Callable[..., Awaitable[Principal]]) -> APIRouter:
    router = APIRouter(prefix="/v1/runs", tags=["runs"])
    Caller = Annotated[Principal, Depends(principal)]

    async def once(
        caller: Principal,
        key: str | None,
        body: dict[str, Any],
        response: Response,
        start: Callable[[str], Awaitable[LaunchRun]],
    ) -> dict[str, Any]:
        """Launch at most once per idempotency key: a repeat returns the first run."""
        fingerprint = body_fingerprint(body)
        if key:
            earlier = await ctx.call(ctx.app.find_launch, caller.account, key)
            if earlier is not None:
                return await repeat(earlier.run_id, earlier.body_sha256, fingerprint, response)
        await check_funds(caller)
        run_id = new_run_id()
        command = await start(run_id)
        if key:
            record = await ctx.call(
                ctx.app.remember_launch, caller.account, key, fingerprint, run_id
            )
            if record.run_id != run_id:  # lost a race with an identical request
                return await repeat(record.run_id, record.body_sha256, fingerprint, response)
        await send_command(ctx.bus(), command)
        row = await wait_for_row(ctx, run_id)
        return await show(ctx, row or placeholder(command))

    async def check_funds(caller: Principal) -> None:
        """Where billing is enforced, a launch needs the floor and an account not stopped."""
        if not ctx.settings.billing_enforce:
            return
        view = await ask(ctx.bus(), ReadBalance(account=caller.account), BalanceView)
        short = view.balance.amount_cents < view.launch_floor.amount_cents
        if short or view.stop_reason:
            raise Refused(
                402,
                "insufficient balance",
                f"launching needs a balance of at least {view.launch_floor.amount_cents} cents "
                f"(you have {view.balance.amount_cents}"
                + (f"; {view.stop_reason}" if view.stop_reason else "")
                + "); top up with POST /v1/billing/topups",
                code="insufficient_balance",
            )

    async def repeat(
        run_id: str, stored: str, fingerprint: str, response: Response
    ) -> dict[str, Any]:
        if stored != fingerprint:
            raise key_reused()
        response.status_code = 200
        row = await ctx.read(views.get_run, run_id)
        if row is None:
            return {"id": run_id, "object": "run", "status": "running", "display_status": "running"}
        return await show(ctx, row)

    @router.post("", status_code=201)
    async def launch(
        body: LaunchRequest,
        caller: Caller,
        response: Response,
        idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
    ) -> dict[str, Any]:
        caller.require("runs:write")
        start = checked_launch(caller, body, idempotency_key)
        return await once(caller, idempotency_key, body.model_dump(mode="json"), response, start)

    @router.post("/estimate")
    async def estimate(body: LaunchRequest, caller: Caller) -> dict[str, Any]:
        """What the launch ``body`` would cost, before it runs (nothing is launched):
        its model calls and tokens as a range, priced as the proxy bills them."""
        caller.require("runs:read")
        command = await checked_launch(caller, body, None)(f"estimate:{uuid.uuid4()}")
        return await estimate_api.estimate(ctx, caller, command)

    def checked_launch(
        caller: Principal, body: LaunchRequest, idempotency_key: str | None
    ) -> Callable[[str], Awaitable[LaunchRun]]:
        """Check a launch body; the function that turns it into the command for a run id."""
        modes = [m for m in ("request", "benchmark", "replay") if getattr(body, m) is not None]
        if body.bridged():
            check_bridged(body, modes)
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
        for name in ("hints", "phase_models"):
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

        async def start(run_id: str) -> LaunchRun:
            # The account's defaults fill what the body leaves out; a replay keeps
            # its parent's choices instead.
            defaults = {} if body.replay else await account_defaults(ctx, caller.account)
            common: dict[str, Any] = {
                "command_id": f"launch:{run_id}",
                "run_id": run_id,
                "account": caller.account,
                "sut": _sut(body.sut),
                "limit": body.task_cap(),
                "trials": body.trials.model_dump() if body.trials else dict(DEFAULT_TRIALS),
                "metadata": body.metadata.model_dump(exclude_none=True),
                "idempotency_key": idempotency_key,
                "requested_at": datetime.now(UTC),
                "driver": body.driver or defaults.get("default_driver"),
                "compute": body.compute or defaults.get("default_compute"),
                "limits": body.ceilings() or defaults.get("default_limits") or {},
                "hints": body.hint_list(),
                "phase_models": body.phase_models or {},
                "cache": body.cache_setting(),
                "telemetry": body.telemetry_setting(),
            }
            if body.bridged():
                return await bridged_command(caller, body, common)
            if body.request is not None:
                return LaunchRun(mode="natural_language", request=body.request, **common)
            if body.replay is not None:
                return await replay_command(caller, body, common)
            return await pinned_command(caller, body, common)

        return start

    def check_bridged(body: LaunchRequest, modes: list[str]) -> None:
        """A harness run names its task, not a benchmark or a parent, and needs a model."""
        if "benchmark" in modes or "replay" in modes:
            field = "benchmark" if "benchmark" in modes else "replay"
            raise Refused(
                400,
                f"a {body.harness} run takes no '{field}'",
                f"the {body.harness} harness runs the task named in "
                f"metadata.{body.harness}_harness",
                field=field,
            )
        inspect_launch(body.metadata.model_dump(exclude_none=True))  # refused here, not later
        if body.sut is None:
            raise Refused(400, f"a {body.harness} run needs 'sut'", field="sut")

    async def resolve(
        caller: Principal, benchmark: str, subset: str | None, impl: str | None
    ) -> BenchmarkResolution:
        resolution = await ask(
            ctx.bus(),
            ResolveBenchmark(account=caller.account, benchmark=benchmark, subset=subset, impl=impl),
            BenchmarkResolution,
            timeout=QUERY_TIMEOUT_S,
        )
        if resolution.problem:
            p = resolution.problem
            code = str((p.extra or {}).get("code") or "not_found")
            raise Refused(p.status, p.title, p.detail, field=p.field, code=code)
        assert resolution.benchmark_id and resolution.subset_id and resolution.subset_slug
        return resolution

    async def bridged_command(
        caller: Principal, body: LaunchRequest, common: dict[str, Any]
    ) -> LaunchRun:
        """An Inspect run: its task is the benchmark. A team's task file brings its own
        data (no Find, no registry pin); an inspect_evals task is fed a catalog subset."""
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
        found = await resolve(caller, catalog["benchmark"], catalog["subset"], None)
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

    async def pinned_command(
        caller: Principal, body: LaunchRequest, common: dict[str, Any]
    ) -> LaunchRun:
        assert body.benchmark is not None
        resolution = await resolve(caller, body.benchmark, body.subset, body.impl)
        if body.trials is None and resolution.default_trials:
            common = {**common, "trials": resolution.default_trials}  # the subset's default
        if resolution.task_timeout_s:
            # A BUILT subset's run_timeout bounds each task; a narrower launch limit wins.
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

    async def replay_command(
        caller: Principal, body: LaunchRequest, common: dict[str, Any]
    ) -> LaunchRun:
        assert body.replay is not None
        replay = body.replay
        try:
            parent = await load_run(ctx, caller, replay.from_run)
        except Refused:
            raise Refused(
                404, "run not found", f"no run {replay.from_run!r}", field="replay.from_run"
            ) from None
        if not parent.get("impl_id"):
            raise Refused(
                409,
                "nothing to replay yet",
                f"run {replay.from_run} has no scorer on record yet; wait for its Atomize",
                field="replay.from_run",
                code="replay_source_not_ready",
            )
        snapshot = await current_snapshot(caller, parent.get("subset_id"))
        indices = await slice_indices(
            replay.from_run, replay.task_ids, replay.only_failed, snapshot
        )
        return LaunchRun(
            mode="replay",
            parent_run_id=replay.from_run,
            # None: the parent's snapshot, inherited with the rest of its dataset.
            subset_id=snapshot,
            replay={
                "indices": indices,
                "task_ids": replay.task_ids,
                "only_failed": replay.only_failed,
            },
            **common,
        )

    async def current_snapshot(caller: Principal, pinned: str | None) -> str | None:
        """The snapshot a replay runs on when the parent's is no longer its rolling
        subset's current one; None when the parent's rows are still the rows to run
        (a frozen subset, a built-in, or one the caller can no longer read)."""
        if not pinned:
            return None
        answer = await ask(
            ctx.bus(),
            ReadSubset(account=caller.account, subset_id=pinned),
            RegistryAnswer,
            timeout=QUERY_TIMEOUT_S,
        )
        view = answer.subset
        if answer.problem or view is None or not view.rolling or view.snapshot_id == pinned:
            return None
        return view.snapshot_id

    async def slice_indices(
        run_id: str, task_ids: list[str] | None, only_failed: bool, snapshot: str | None
    ) -> list[int] | None:
        """The row indices a replay slice names, checked against the parent's tasks, or,
        on a newer ``snapshot`` of its rolling subset, against that snapshot's rows.
        ``only_failed`` keeps the rows the parent failed."""
        if task_ids is None and not only_failed:
            return None
        outcomes: dict[int, tuple[str, str]] = await ctx.read(views.latest_outcomes, run_id)
        by_task = {task_id: index for index, (task_id, _) in outcomes.items()}
        chosen = set(outcomes)
        if task_ids is not None:
            missing = {t for t in task_ids if t not in by_task}
            if missing and snapshot:
                # Appends never renumber rows: the parent's indices hold on the new snapshot.
                by_task.update(await row_indices(snapshot, missing))
            unknown = [t for t in task_ids if t not in by_task]
            if unknown:
                raise Refused(
                    400,
                    "unknown task ids",
                    (f"subset {snapshot}" if snapshot else f"run {run_id}")
                    + f" has no tasks {', '.join(unknown[:5])}"
                    + (f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else ""),
                    field="replay.task_ids",
                    code="invalid_argument",
                )
            chosen = {by_task[t] for t in task_ids}
        if only_failed:
            chosen = {i for i in chosen if i in outcomes and outcomes[i][1] != "pass"}
        return sorted(chosen)

    async def row_indices(snapshot: str, wanted: set[str]) -> dict[str, int]:
        """Where the ``wanted`` task ids sit in ``snapshot``'s rows (those it has)."""
        found: dict[str, int] = {}
        offset = 0
        while wanted - found.keys():
            page = await ask(
                ctx.bus(),
                GetSubsetRows(subset_id=snapshot, offset=offset, limit=ROWS_PER_QUERY),
                SubsetRows,
                timeout=QUERY_TIMEOUT_S,
            )
            if page.problem or not page.rows:
                break
            for index, row in enumerate(page.rows, start=offset):
                task_id = str(row.get("task_id", index))  # as the runtime names a row
                if task_id in wanted:
                    found.setdefault(task_id, index)
            offset += len(page.rows)
            if offset >= page.total:
                break
        return found

    @router.post("/{run_id}/fork", status_code=201)
    async def fork(
        run_id: str,
        body: ForkRequest,
        caller: Caller,
        response: Response,
        idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
    ) -> dict[str, Any]:
        """Rewind a run to ``from_phase`` and carry on with ``description`` as guidance."""
        caller.require("runs:write")
        parent = await load_run(ctx, caller, run_id)
        key = idempotency_key or body.idempotency_key

        async def start(child_id: str) -> LaunchRun:
            return LaunchRun(
                command_id=f"launch:{child_id}",
                run_id=child_id,
                account=caller.account,
                mode="fork",
                parent_run_id=run_id,
                fork={"description": body.description, "from_phase": body.from_phase},
                sut=_sut(body.sut),
                driver=body.driver or parent.get("driver"),
                compute=body.compute,
                limits=body.limits or json.loads(parent.get("limits") or "{}"),
                metadata=json.loads(parent.get("metadata") or "{}"),
                idempotency_key=key,
                requested_at=datetime.now(UTC),
            )

        payload = {"fork_of": run_id, **body.model_dump(mode="json", exclude={"idempotency_key"})}
        return await once(caller, key, payload, response, start)

    @router.post("/{run_id}/resume", status_code=202)
    async def resume(run_id: str, caller: Caller) -> dict[str, Any]:
        """Carry on a run an operator paused. Any other halt answers 409 ``not_paused``."""
        caller.require("runs:write")
        row = await load_run(ctx, caller, run_id)
        reason = row.get("halt_reason") or ""
        if row["status"] != "running" or not reason.startswith("operator_pause"):
            raise Refused(
                409,
                "run is not paused",
                f"run {run_id} is {row['status']}"
                + (f", halted with {reason!r}" if reason else "")
                + "; only an operator_pause halt can be resumed"
                + (
                    "; answer a review with PATCH review_resolution"
                    if reason.startswith(REVIEW_HALTS)
                    else ""
                ),
                field="run_id",
                code="not_paused",
            )
        return await show(ctx, await unpark(caller, row, "resume", None))

    @router.patch("/{run_id}")
    async def update(
        run_id: str,
        body: RunPatch,
        caller: Caller,
        if_match: Annotated[str | None, Header(max_length=100)] = None,
    ) -> dict[str, Any]:
        """Publish or hide a run (``visibility``), answer the review it waits on
        (``review_resolution``: the Driver's guidance), and merge ``metadata``.

        ``If-Match`` (the run's ``etag``) refuses the change with 412 when the run
        moved on since the caller read it.
        """
        caller.require("runs:write")
        row = await load_run(ctx, caller, run_id)
        if if_match is not None and if_match.strip('"') != run_etag(row):
            raise Refused(
                412,
                "run changed",
                f"the run is at {run_etag(row)}, not {if_match}; read it again",
                field="If-Match",
                code="precondition_failed",
            )
        if body.review_resolution is not None:
            row = await answer_review(caller, row, body.review_resolution)
        if body.visibility is not None or body.metadata:
            row = await change(caller, row, body)
        return await show(ctx, row)

    async def change(caller: Principal, row: dict[str, Any], body: RunPatch) -> dict[str, Any]:
        run_id = row["run_id"]
        if body.visibility == "public":
            problem = publish_problem(row["status"], row.get("benchmark_id"))
            if problem:
                raise Refused(
                    409,
                    "run cannot be public",
                    f"run {run_id} cannot be public: {problem}",
                    field="visibility",
                    code="not_publishable",
                )
        command = UpdateRun(
            command_id=f"update:{run_id}:{row.get('last_seq')}:{uuid.uuid4().hex[:8]}",
            run_id=run_id,
            account=caller.account,
            visibility=body.visibility,
            metadata=body.metadata,
        )
        await send_command(ctx.bus(), command)

        def applied(r: dict[str, Any] | None) -> bool:
            if r is None:
                return False
            shown = json.loads(r.get("metadata") or "{}")
            wanted = {k: v for k, v in (body.metadata or {}).items() if v is not None}
            return (body.visibility is None or r.get("visibility") == body.visibility) and all(
                shown.get(k) == v for k, v in wanted.items()
            )

        return await wait_for_row(ctx, run_id, until=applied) or row

    async def answer_review(
        caller: Principal, row: dict[str, Any], resolution: str
    ) -> dict[str, Any]:
        run_id = row["run_id"]
        reason = row.get("halt_reason") or ""
        if row["status"] != "running" or not reason.startswith(REVIEW_HALTS):
            raise Refused(
                409,
                "run is not waiting for review",
                f"run {run_id} is {row['status']}"
                + (f", halted with {reason!r}" if reason else ""),
                field="review_resolution",
                code="not_waiting",
            )
        return await unpark(caller, row, "review_resolution", resolution)

    async def unpark(
        caller: Principal, row: dict[str, Any], action: str, resolution: str | None
    ) -> dict[str, Any]:
        run_id = row["run_id"]
        await send_command(
            ctx.bus(),
            ResolveRunHalt(
                command_id=f"unpark:{run_id}:{row.get('last_seq')}",
                run_id=run_id,
                account=caller.account,
                action=action,  # type: ignore[arg-type]
                resolution=resolution,
            ),
        )
        fresh = await wait_for_row(ctx, run_id, until=lambda r: r is not None and not r["halted"])
        return fresh or row

    @router.delete("/{run_id}")
    async def delete(run_id: str, caller: Caller) -> dict[str, Any]:
        """Irreversible: stop the run if it works, and remove it from every listing."""
        caller.require("runs:write")
        await load_run(ctx, caller, run_id)
        await send_command(
            ctx.bus(),
            DeleteRun(command_id=f"delete:{run_id}", run_id=run_id, account=caller.account),
        )
        await wait_for_row(ctx, run_id, until=lambda r: r is None, tries=600)
        return {"id": run_id, "object": "run", "deleted": True}

    def placeholder(command: LaunchRun) -> dict[str, Any]:
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

    return router
