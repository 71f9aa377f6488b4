"""What a replay takes from its parent's log at launch, in an in-memory store.

A replay of a run whose rolling subset has grown since runs on the current
snapshot: it records the parent's snapshot, inherits no dataset (its own Fetch
and Setup record the current rows) and still scores with the parent's scorer.
"""

import uuid
from datetime import UTC, datetime
from typing import Any

import pytest

from benchwright_orchestrator.application import RunsApplication
from benchwright_orchestrator.domain import Run
from benchwright_orchestrator.plan import plan_phases
from benchwright_shared.contracts import LaunchRun, SutRef

OLD, NEW = "sub_000000000001", "sub_000000000002"
IMPL = "bm_x:0123456789ab"
CODE = "class Task: ...\n"


@pytest.fixture
def app() -> RunsApplication:
    return RunsApplication(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def parent_run(app: RunsApplication, *, authored: bool) -> Run:
    """A finished run on ``OLD``: pinned with a registry impl, or with an authored scorer."""
    run = Run(
        run_id=str(uuid.uuid4()),
        account="acct",
        mode="natural_language" if authored else "pinned",
        benchmark_id="bm_x",
        benchmark_name="X",
        subset_id=OLD,
        subset_slug="daily",
        impl_id=None if authored else IMPL,
        sut={"model": "m", "provider": "p"},
        limit=None,
        metadata={},
        idempotency_key=None,
    )
    run.fetch_done(
        source=f"registry:{OLD}",
        content_sha256="a" * 64,
        total_tasks=2,
        bucket="bw-datasets",
        object_name=f"{OLD}.jsonl",
    )
    run.snapshot_created(phase="fetch", snapshot_id="snap-fetch", sandbox_id="s", size_bytes=1)
    if authored:
        run.analyze_done(
            kind="exact",
            schema={"input": "object"},
            schema_sha256="b" * 64,
            subsets=[OLD],
            fields={},
            candidates=[],
            evidence=[],
        )
    run.dataset_tasks(
        benchmark_id="bm_x",
        subset_id=OLD,
        total_tasks=2,
        selected_tasks=2,
        content_sha256="a" * 64,
        selection={"kind": "first_n", "limit": None},
    )
    run.setup_done(
        impl_id=None if authored else IMPL,
        impl_sha256=None if authored else "c" * 64,
        code=None if authored else CODE,
    )
    run.snapshot_created(phase="setup", snapshot_id="snap-setup", sandbox_id="s", size_bytes=1)
    run.model_proxy(model_id="m", litellm_config_yaml="model_list: []", proxy_url=None)
    if authored:
        run.atomize_done(
            impl_id="bm_x:authored0001",
            impl_sha256="d" * 64,
            invocation=1,
            kind="exact",
            code=CODE,
            check={},
            guidance=[],
        )
        run.snapshot_created(
            phase="atomize", snapshot_id="snap-atomize", sandbox_id="s", size_bytes=1
        )
    run.finish(status="ok", duration_ms=1, summary={})
    app.save(run)
    return run


def replay(app: RunsApplication, parent: Run, subset_id: str | None, **slice_: Any) -> Run:
    run, created = app.launch(
        LaunchRun(
            command_id="c",
            run_id=str(uuid.uuid4()),
            account="acct",
            mode="replay",
            parent_run_id=parent.run_id,
            subset_id=subset_id,
            sut=SutRef(model="other", provider="p"),
            replay={"indices": None, "task_ids": None, "only_failed": False, **slice_},
            requested_at=datetime.now(UTC),
        )
    )
    assert created
    return run


def inherited(app: RunsApplication, run: Run) -> list[str]:
    events, _, _ = app.run_events(run.run_id)
    return [e.type for e in events if e.data.get("inherited_from")]


def test_a_replay_on_the_parents_snapshot_inherits_its_dataset(app: RunsApplication) -> None:
    parent = parent_run(app, authored=False)
    run = replay(app, parent, None, indices=[1])
    assert not run.on_new_snapshot and run.subset_id == OLD
    assert inherited(app, run) == [
        "FetchArtifact", "SnapshotCreated", "DatasetTasksArtifact", "SetupArtifact",
        "SnapshotCreated",
    ]  # fmt: skip
    assert run.artifacts.selection == {"kind": "indices", "indices": [1], "reason": "replay slice"}
    assert run.scorer is not None and run.scorer["code"] == CODE
    # The same snapshot named explicitly is no newer snapshot.
    assert not replay(app, parent, OLD).on_new_snapshot


def test_a_replay_on_a_newer_snapshot_reinstalls_a_pinned_impl(app: RunsApplication) -> None:
    parent = parent_run(app, authored=False)
    run = replay(app, parent, NEW, indices=[2])
    assert run.on_new_snapshot and run.subset_id == NEW
    assert run.replay is not None and run.replay["from_subset_id"] == OLD
    assert run.replay["indices"] == [2]  # selected once the new rows are fetched
    # Nothing of the old rows: its own Fetch and Setup record the current ones, and
    # Setup installs the parent's impl again (the same code, by its registry id).
    assert inherited(app, run) == []
    assert run.dataset == {} and run.artifacts.selection is None and run.artifacts.snapshots == {}
    assert run.impl_id == IMPL and run.scorer is None
    assert plan_phases(run.mode, has_impl=True, new_snapshot=run.on_new_snapshot) == [
        "fetch", "setup", "attach", "materialize", "report",
    ]  # fmt: skip
    # The parent is untouched.
    again = app.get_run(parent.run_id)
    assert again.subset_id == OLD and again.version == parent.version


def test_a_replay_on_a_newer_snapshot_takes_an_authored_scorer_but_not_its_sandbox(
    app: RunsApplication,
) -> None:
    parent = parent_run(app, authored=True)
    run = replay(app, parent, NEW)
    assert run.on_new_snapshot and run.impl_id is None
    # The analysis carries over (a fork of this replay may rewind to Atomize) ...
    assert inherited(app, run) == ["AnalyzeArtifact"]
    assert run.artifacts.analysis is not None and run.artifacts.selection is None
    # ... and after its own Attach, the scorer's code, not the parent's post-Atomize
    # sandbox, which holds the parent's rows.
    run.snapshot_created(phase="setup", snapshot_id="mine", sandbox_id="t", size_bytes=1)
    app.inherit_scorer(run)
    app.save(run)
    assert inherited(app, run) == ["AnalyzeArtifact", "AtomizeArtifact"]
    assert run.scorer is not None and run.scorer["code"] == CODE
    assert run.impl_id == "bm_x:authored0001" and run.latest_snapshot() == "mine"


def test_a_plain_replay_still_takes_the_parents_post_atomize_sandbox(
    app: RunsApplication,
) -> None:
    parent = parent_run(app, authored=True)
    run = replay(app, parent, None)
    app.inherit_scorer(run)
    assert run.latest_snapshot() == "snap-atomize" and run.impl_id == "bm_x:authored0001"


def test_a_replay_of_a_harbor_run_runs_the_parents_tasks_and_agent(app: RunsApplication) -> None:
    harness = {
        "name": "harbor",
        "dataset": "daily",
        "files": {"t/task.toml": "", "t/instruction.md": "Do it.\n"},
        "agent": "oracle",
        "agent_args": {},
        "task": None,
    }
    parent, _ = app.launch(
        LaunchRun(
            command_id="p",
            run_id=str(uuid.uuid4()),
            account="acct",
            mode="pinned",
            benchmark_id="bm_x",
            subset_id=OLD,
            subset_slug="daily",
            harness=harness,
            sut=SutRef(model="m", provider="p"),
            requested_at=datetime.now(UTC),
        )
    )
    parent.dataset_tasks(
        benchmark_id="bm_x",
        subset_id=OLD,
        total_tasks=1,
        selected_tasks=1,
        content_sha256="a" * 64,
        selection={"kind": "all"},
    )
    parent.setup_done(impl_id=None, impl_sha256="e" * 64)
    app.save(parent)
    run = replay(app, parent, None)
    # No scorer to take: the harness is what scores, and the parent's Setup records
    # which of its tasks the replay runs.
    assert run.harness == harness and run.harness_name == "harbor"
    assert (run.subset_id, run.impl_id) == (OLD, None)
    assert inherited(app, run) == ["DatasetTasksArtifact", "SetupArtifact"]
