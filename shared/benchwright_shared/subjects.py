"""Every JetStream stream and subject, in one place.

Subjects name producer, entity, event and version. Commands and events are
durable (JetStream); queries are NATS request/reply to the owning service.
"""

from typing import Final

# Streams ---------------------------------------------------------------------
COMMANDS_STREAM: Final = "BW_COMMANDS"
COMMANDS_SUBJECTS: Final = ("bw.cmd.>",)
EVENTS_STREAM: Final = "BW_EVENTS"
EVENTS_SUBJECTS: Final = ("bw.evt.>",)
RUNS_STREAM: Final = "BW_RUNS"
RUNS_SUBJECTS: Final = ("bw.run.v1.>",)

# Object store bucket holding subset rows as content-addressed JSON lines.
DATASETS_BUCKET: Final = "bw-datasets"
# Object store bucket holding sandbox snapshots (content-addressed tar.gz), so any
# sandbox-manager copy can restore what another one captured.
SNAPSHOTS_BUCKET: Final = "bw-snapshots"
# Object store bucket holding files a run's sandbox handed out (an Inspect harness's
# .eval logs), content-addressed under the run's id; the run log points at them.
ARTIFACTS_BUCKET: Final = "bw-artifacts"

# Commands --------------------------------------------------------------------
LAUNCH_RUN: Final = "bw.cmd.orchestrator.launch_run.v1"
HALT_RUN: Final = "bw.cmd.orchestrator.halt_run.v1"
RESOLVE_RUN_HALT: Final = "bw.cmd.orchestrator.resolve_halt.v1"
DELETE_RUN: Final = "bw.cmd.orchestrator.delete_run.v1"
UPDATE_RUN: Final = "bw.cmd.orchestrator.update_run.v1"
LABEL_TASK: Final = "bw.cmd.orchestrator.label_task.v1"
CREATE_SANDBOX: Final = "bw.cmd.sandbox.create.v1"
RUN_TASKS: Final = "bw.cmd.sandbox.run_tasks.v1"
KILL_SANDBOX: Final = "bw.cmd.sandbox.kill.v1"
EXEC_IN_SANDBOX: Final = "bw.cmd.sandbox.exec.v1"
SNAPSHOT_SANDBOX: Final = "bw.cmd.sandbox.snapshot.v1"
ATTACH_MODEL: Final = "bw.cmd.proxy.attach_model.v1"
DETACH_MODEL: Final = "bw.cmd.proxy.detach_model.v1"

# Events ----------------------------------------------------------------------
SANDBOX_EVENTS: Final = "bw.evt.sandbox.>"
SANDBOX_CREATED: Final = "bw.evt.sandbox.created.v1"
SANDBOX_KILLED: Final = "bw.evt.sandbox.killed.v1"
SANDBOX_COMMAND_FAILED: Final = "bw.evt.sandbox.command_failed.v1"
SANDBOX_TASK_RESULTS: Final = "bw.evt.sandbox.task_results.v1"
SANDBOX_TASKS_FINISHED: Final = "bw.evt.sandbox.tasks_finished.v1"
SANDBOX_SWEEP_PROGRESS: Final = "bw.evt.sandbox.sweep_progress.v1"
SANDBOX_EXEC_FINISHED: Final = "bw.evt.sandbox.exec_finished.v1"
SANDBOX_SNAPSHOTTED: Final = "bw.evt.sandbox.snapshotted.v1"
PROXY_EVENTS: Final = "bw.evt.proxy.>"
MODEL_ATTACHED: Final = "bw.evt.proxy.model_attached.v1"
MODEL_USAGE_RECORDED: Final = "bw.evt.proxy.model_usage.v1"
DRIVER_USAGE_RECORDED: Final = "bw.evt.orchestrator.driver_usage.v1"
# An account's spend crossed an alert threshold, or an auto-refill was declined
# (relayed from billing's store; the gateway's webhooks deliver it as ``billing.alert``).
BILLING_ALERT_RAISED: Final = "bw.evt.billing.alert_raised.v1"

# A run's sweep results: one subject per run and kind (``task_results``,
# ``progress``, ``tasks_finished``), so the orchestrator driving the run reads them from the
# stream in the order they were published, including what came while nobody listened.
SWEEP_PREFIX: Final = "bw.evt.sandbox.sweep.v1"


def sweep_subject(run_id: str, kind: str) -> str:
    return f"{SWEEP_PREFIX}.{run_id}.{kind}"


# Plain NATS, no stream: which tasks a sweep has begun, for pages watching the run.
# Nothing keeps it; a watcher that misses a message shows a task late, never wrong.
LIVE_PREFIX: Final = "bw.live.v1"


def live_subject(run_id: str) -> str:
    return f"{LIVE_PREFIX}.{run_id}.started"


def sweep_filter(run_id: str) -> str:
    return f"{SWEEP_PREFIX}.{run_id}.>"


# Commands for an existing sandbox go to the sandbox-manager copy that holds it
# (``SandboxCreated.owner``): ``bw.cmd.sandbox.copy.<copy id>.<verb>.v1``.
SANDBOX_COPY_PREFIX: Final = "bw.cmd.sandbox.copy"


def sandbox_copy_subject(copy_id: str, verb: str) -> str:
    return f"{SANDBOX_COPY_PREFIX}.{copy_id}.{verb}.v1"


# Commands about a run that another orchestrator copy drives are forwarded to it:
# ``bw.cmd.orchestrator.copy.<copy id>.<verb>.v1`` (decision 0025).
ORCHESTRATOR_COPY_PREFIX: Final = "bw.cmd.orchestrator.copy"


def orchestrator_copy_subject(copy_id: str, verb: str) -> str:
    return f"{ORCHESTRATOR_COPY_PREFIX}.{copy_id}.{verb}.v1"


# The run event log: one subject per run, relayed from the orchestrator's store.
RUN_LOG_PREFIX: Final = "bw.run.v1"
RUN_LOG_ALL: Final = "bw.run.v1.*"


def run_log_subject(run_id: str) -> str:
    """The subject a run's event log is relayed on."""
    return f"{RUN_LOG_PREFIX}.{run_id}"


# Queries (request/reply) -----------------------------------------------------
RESOLVE_BENCHMARK: Final = "bw.q.registry.resolve_benchmark.v1"
GET_SUBSET_ROWS: Final = "bw.q.registry.subset_rows.v1"
GET_IMPL: Final = "bw.q.registry.impl.v1"
LIST_CATALOG: Final = "bw.q.registry.catalog.v1"
# Request/reply only: a secret's value never rests on a stream.
PUT_SECRET: Final = "bw.q.proxy.secrets.put.v1"
READ_SECRETS: Final = "bw.q.proxy.secrets.read.v1"
DELETE_SECRET: Final = "bw.q.proxy.secrets.delete.v1"
UPDATE_HOST_POLICY: Final = "bw.q.proxy.host_policy.update.v1"
READ_HOST_POLICY: Final = "bw.q.proxy.host_policy.read.v1"
READ_BLOCKED_HOSTS: Final = "bw.q.proxy.blocked_hosts.read.v1"
# What model calls of given sizes would cost, priced as the proxy bills (an estimate).
PRICE_MODEL_CALLS: Final = "bw.q.proxy.price_calls.v1"
# Which of some models no key reaches (a launch's judges, checked before the run starts).
CHECK_PROVIDER_KEYS: Final = "bw.q.proxy.check_keys.v1"
GET_RUN_EVENTS: Final = "bw.q.orchestrator.run_events.v1"


def rebuild_subject(service: str) -> str:
    """Admin request: drop and rebuild one of ``service``'s projections."""
    return f"bw.q.{service}.rebuild_projection.v1"


def parked_subject(service: str) -> str:
    """Admin request: the messages one of ``service``'s projections set aside."""
    return f"bw.q.{service}.parked_messages.v1"


# Registry authoring (request/reply: the author waits for the id or the refusal).
# Task rows travel through the datasets bucket under UPLOADS_PREFIX, not in the
# message: a thousand rows can exceed a NATS message's size limit.
UPLOADS_PREFIX: Final = "uploads/"
CREATE_BENCHMARK: Final = "bw.q.registry.benchmarks.create.v1"
UPDATE_BENCHMARK: Final = "bw.q.registry.benchmarks.update.v1"
READ_BENCHMARK: Final = "bw.q.registry.benchmarks.read.v1"
LIST_BENCHMARKS: Final = "bw.q.registry.benchmarks.list.v1"
DELETE_BENCHMARK: Final = "bw.q.registry.benchmarks.delete.v1"
CREATE_SUBSET: Final = "bw.q.registry.subsets.create.v1"
UPDATE_SUBSET: Final = "bw.q.registry.subsets.update.v1"
APPEND_TASKS: Final = "bw.q.registry.subsets.append.v1"
READ_SUBSET: Final = "bw.q.registry.subsets.read.v1"
DELETE_SUBSET: Final = "bw.q.registry.subsets.delete.v1"
CREATE_IMPL: Final = "bw.q.registry.impls.create.v1"
UPDATE_IMPL: Final = "bw.q.registry.impls.update.v1"
READ_IMPL: Final = "bw.q.registry.impls.read.v1"
DELETE_IMPL: Final = "bw.q.registry.impls.delete.v1"
# BUILT subsets (decision 0020): the recipe a generated task_impl.py carries, and
# sample edits that fork a new subset.
CREATE_BUILT_SUBSET: Final = "bw.q.registry.build.subsets.create.v1"
READ_RECIPE: Final = "bw.q.registry.build.recipe.read.v1"
UPDATE_RECIPE: Final = "bw.q.registry.build.recipe.update.v1"
UPDATE_SAMPLES: Final = "bw.q.registry.build.samples.update.v1"

# Billing (request/reply): balances, controls, top-ups, transactions, exports.
READ_BALANCE: Final = "bw.q.billing.balance.read.v1"
UPDATE_BILLING_CONTROLS: Final = "bw.q.billing.controls.update.v1"
CREATE_TOPUP: Final = "bw.q.billing.topups.create.v1"
READ_TOPUP: Final = "bw.q.billing.topups.read.v1"
LIST_TRANSACTIONS: Final = "bw.q.billing.transactions.list.v1"
READ_USAGE_TREND: Final = "bw.q.billing.usage_trend.v1"
EXPORT_BILLING: Final = "bw.q.billing.export.v1"
LIST_BILLING_ALERTS: Final = "bw.q.billing.alerts.list.v1"

# Registry reads over runs (request/reply): leaderboards, listings, comparisons,
# task ranges, impls frozen from a run, and the phase-cache index the orchestrator asks.
READ_LEADERBOARD: Final = "bw.q.registry.subsets.leaderboard.v1"
LIST_REGISTRY_RUNS: Final = "bw.q.registry.runs.list.v1"
COMPARE_IMPL: Final = "bw.q.registry.impls.compare.v1"
READ_TASK_RANGE: Final = "bw.q.registry.benchmarks.range.v1"
CREATE_IMPL_FROM_RUN: Final = "bw.q.registry.impls.from_run.v1"
FIND_PHASE_CELL: Final = "bw.q.registry.phase_cell.v1"
