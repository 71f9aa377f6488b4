"""A product under test as a Harbor run's agent (``agent: "product"``, a product-sandbox run).

Before any task sandbox, ``probe_products`` makes one ``template_probe`` sandbox per
distinct task environment and looks there for what the product needs (its command's
program, ``requires``, its working directory, and the ``python3`` the driver runs on).
What it found is a ``TemplateProbed`` event; anything missing refuses the run
(``product_probe_failed``) before a task sandbox starts.

Each attempt then runs ``agents/product_driver.py`` in the task's sandbox, one command
that starts the product (pointed at the run's proxy), waits for its own boot (bounded
by ``ready_timeout_s``), POSTs the task's instruction to it and waits for the reply
(bounded by the task's agent timeout), then stops it. Its steps go into the run's log
as the attempt's tool results (``product_boot``, ``product_request``). A product that
never became ready, or exited while booting, ends the attempt ``boot_failed`` and the
trial is an error row naming the product (``product:not_ready``, ``product:exited``,
``product:not_started``), distinct from a failed task; otherwise the task's verifier
decides, as for every agent.
"""

import functools
import json
import shlex
from collections.abc import Mapping
from importlib import resources
from typing import Any

from pydantic import ValidationError

from benchwright_orchestrator.agents.loop import AttemptEnd, AttemptRef
from benchwright_orchestrator.phases.harbor_attempts import (
    AGENT_LOGS,
    HarborAttempts,
    attempt_ids,
    record_ended,
    record_started,
    sandbox_dirs,
)
from benchwright_orchestrator.phases.sandbox_life import create_held, kill_held
from benchwright_orchestrator.phases.task_sandbox import WorkspaceTaskSandbox
from benchwright_orchestrator.ports import PhaseError
from benchwright_shared.agentic import AgenticTask, EnvironmentPlan, ProductAgentArgs
from benchwright_shared.contracts import SandboxFile
from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentToolResult,
    AttemptEndReason,
    cap_text,
)
from benchwright_shared.hashing import canonical_json, sha256_hex

__all__ = ["DRIVER_PYTHON", "driver_source", "probe_products", "product_args", "run_product"]

# The driver's interpreter: the probe checks the environment has it.
DRIVER_PYTHON = "python3"
PRODUCT_LOG = f"{AGENT_LOGS}/product.log"
PRODUCT_REPLY = f"{AGENT_LOGS}/product-reply.txt"
# A task.toml that gives no agent timeout: how long the product may take to reply.
DEFAULT_REQUEST_TIMEOUT_S = 600.0
# Beyond boot and request: the driver's start, the product's stop (SIGTERM, SIGKILL).
DRIVER_SLACK_S = 30.0
PROBE_TIMEOUT_S = 60.0
# Each executable: "exe<TAB>name<TAB>where" (empty: not found); then the base.
PROBE_SCRIPT = r"""
cwd="$1"; shift
for name in "$@"; do
  case "$name" in
    */*) if [ -f "$name" ] && [ -x "$name" ]; then found="$name"; else found=""; fi ;;
    *) found=$(command -v -- "$name" 2>/dev/null || true) ;;
  esac
  printf 'exe\t%s\t%s\n' "$name" "$found"
done
if [ -d "$cwd" ]; then printf 'cwd\t1\n'; else printf 'cwd\t0\n'; fi
printf 'os\t%s\n' "$(uname -srm 2>/dev/null)"
printf 'python\t%s\n' "$(python3 -V 2>/dev/null)"
"""


@functools.cache
def driver_source() -> str:
    """``agents/product_driver.py``, read once, when a product run first needs it."""
    return (
        resources.files("benchwright_orchestrator.agents").joinpath("product_driver.py").read_text()
    )


def product_args(harbor: HarborAttempts) -> ProductAgentArgs:
    try:
        return ProductAgentArgs.model_validate(harbor.agent_args)
    except ValidationError as exc:  # the gateway checked them: an older or forged launch
        raise PhaseError("product_args_invalid", str(exc.errors()[0]["msg"])) from None


def _shown(args: ProductAgentArgs) -> str:
    return shlex.join(args.command)[:300]


# -- the template probe ---------------------------------------------------------------
def _environment_key(plan: EnvironmentPlan) -> str:
    files = {path: sha256_hex(content) for path, content in plan.files.items()}
    return sha256_hex(
        canonical_json(
            {
                "base": plan.base,
                "workdir": plan.workdir,
                "env": dict(plan.env),
                "files": files,
                "directories": list(plan.directories),
            }
        )
    )


async def probe_products(harbor: HarborAttempts, indices: list[int]) -> None:
    """Probe each distinct environment of the tasks at ``indices`` for the product's
    needs; ``PhaseError`` (``product_probe_failed``) naming what is missing, and where."""
    args = product_args(harbor)
    groups: dict[str, list[AgenticTask]] = {}
    for index in sorted(set(indices)):
        task = harbor.tasks[index]
        groups.setdefault(_environment_key(harbor.plans[task.name]), []).append(task)
    for tasks in groups.values():
        problems = await _probe(harbor, args, tasks)
        if problems:
            names = ", ".join(t.name for t in tasks)
            raise PhaseError(
                "product_probe_failed",
                f"the product {_shown(args)} cannot start in the environment of tasks "
                f"{names}: {'; '.join(problems)}",
            )


async def _probe(
    harbor: HarborAttempts, args: ProductAgentArgs, tasks: list[AgenticTask]
) -> list[str]:
    run, work = harbor.ctx.run, harbor.ctx.work
    plan = harbor.plans[tasks[0].name]
    files = [SandboxFile(path=p, content=c.decode()) for p, c in sorted(plan.files.items())]
    cwd = args.cwd or plan.workdir
    wanted = list(dict.fromkeys([*args.executables, DRIVER_PYTHON]))
    sandbox_id = await create_held(
        work,
        work.create_agentic_sandbox(
            files,
            sandbox_dirs(plan),
            role="template_probe",
            image=tasks[0].config.environment.docker_image,
            build=harbor.builds.get(tasks[0].name),
        ),
    )
    try:
        box = WorkspaceTaskSandbox(work, sandbox_id, env=dict(plan.env))
        made = await box.exec(["mkdir", "-p", *plan.directories], timeout_s=PROBE_TIMEOUT_S)
        ran = await box.exec(
            ["sh", "-c", PROBE_SCRIPT, "probe", cwd, *wanted], timeout_s=PROBE_TIMEOUT_S
        )
    except TimeoutError:
        raise PhaseError(
            "product_probe_failed",
            f"the probe of tasks {', '.join(t.name for t in tasks)} overran its "
            f"{PROBE_TIMEOUT_S:g} s",
        ) from None
    finally:
        await kill_held(work, sandbox_id, reason="probe_finished")
    found = _probe_report(ran.stdout)
    found |= {"cwd": cwd, "base": plan.base}
    problems = [
        f"{name!r} is not there (PATH {plan.env.get('PATH') or 'the default'})"
        + (" (the driver runs on it)" if name == DRIVER_PYTHON else "")
        for name in wanted
        if not found["executables"].get(name)
    ]
    if made.exit_code != 0 or not found["cwd_exists"]:
        problems.append(f"its working directory {cwd} does not exist")
    if ran.exit_code != 0:
        problems.append(f"the probe failed ({ran.exit_code}): {ran.stderr[-300:]}")
    run.template_probed(
        sandbox_id=sandbox_id,
        tasks=[t.name for t in tasks],
        ok=not problems,
        found=found,
        problems=problems,
        duration_ms=made.duration_ms + ran.duration_ms,
    )
    await harbor.ctx.save()
    return problems


def _probe_report(stdout: str) -> dict[str, Any]:
    found: dict[str, Any] = {"executables": {}, "cwd_exists": False}
    for line in stdout.splitlines():
        kind, _, rest = line.partition("\t")
        if kind == "exe":
            name, _, where = rest.partition("\t")
            found["executables"][name] = where or None
        elif kind == "cwd":
            found["cwd_exists"] = rest == "1"
        elif kind in ("os", "python"):
            found[kind] = rest or None
    return found


# -- one attempt ----------------------------------------------------------------------
async def run_product(
    harbor: HarborAttempts, task: AgenticTask, box: WorkspaceTaskSandbox, ref: AttemptRef
) -> AttemptEnd | None:
    """Boot the product in the attempt's sandbox, drive it with the task, stop it; what
    its model calls cost, as the proxy stamped them."""
    args = product_args(harbor)
    plan = harbor.plans[task.name]
    await record_started(harbor, task, ref, tools=["product_boot", "product_request"])
    request_timeout_s = task.config.agent.timeout_sec or DEFAULT_REQUEST_TIMEOUT_S
    config = {
        "command": args.command,
        "cwd": args.cwd or plan.workdir,
        "env": args.env,
        "ready_url": args.ready_url,
        "ready_timeout_s": args.ready_timeout_s,
        "drive_url": args.drive_url,
        "body": args.body,
        "instruction": task.instruction,
        "task": task.name,
        # The proxy meters and caps each of the product's calls against its task and trial.
        "index": ref.index,
        "trial": ref.trial,
        "request_timeout_s": request_timeout_s,
        "log_path": PRODUCT_LOG,
        "reply_path": PRODUCT_REPLY,
    }
    model = harbor.model
    done = await harbor.ctx.work.exec_in(
        box.sandbox_id,
        [DRIVER_PYTHON, "-I", "-c", driver_source()],
        stdin=canonical_json(config),
        cwd=plan.workdir,
        env={
            **box.env,
            # The sandbox routes this one address to the proxy; the driver hands it on.
            "BW_MODEL_PROXY_URL": model.proxy_url,
            "BW_MODEL_PROXY_KEY": model.proxy_key,
            "BW_MODEL_MODEL": model.model_id,
        },
        timeout_s=args.ready_timeout_s + request_timeout_s + DRIVER_SLACK_S,
        network=box.network,
    )
    report = _driver_report(done.stdout)
    if report is None:
        if done.timed_out:
            await record_ended(harbor, ref, "wall_time", done.duration_ms, "the driver overran")
            return None
        raise PhaseError(
            "product:driver_failed",
            f"the product driver exited {done.exit_code}: {(done.stderr or done.stdout)[-500:]}",
        )
    await _record_boot(harbor, ref, args, report)
    if report["boot"] != "ready":
        detail = _boot_failure(args, report)
        await record_ended(harbor, ref, "boot_failed", int(report.get("boot_ms", 0)), detail)
        raise PhaseError(f"product:{report['boot']}", detail)
    await _record_request(harbor, ref, args, report)
    reason: AttemptEndReason = "wall_time" if report.get("timed_out") else "done"
    usage = report.get("usage") or {}
    spent = AttemptEnd(
        reason=reason,
        turns=int(usage.get("calls", 0)),
        input_tokens=int(usage.get("input_tokens", 0)),
        output_tokens=int(usage.get("output_tokens", 0)),
        cost_micros=int(usage["cost_micros"]) if "cost_micros" in usage else None,
    )
    await harbor.trajectory.record(
        AgentAttemptEnded(
            **attempt_ids(ref),
            reason=reason,
            turns=spent.turns,
            tokens=spent.tokens,
            input_tokens=spent.input_tokens,
            output_tokens=spent.output_tokens,
            cost_micros=spent.cost_micros,
            duration_ms=done.duration_ms,
        )
    )
    return spent


def _driver_report(stdout: str) -> dict[str, Any] | None:
    lines = stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if lines else None
    except ValueError:
        return None
    return report if isinstance(report, dict) and "boot" in report else None


def _boot_failure(args: ProductAgentArgs, report: Mapping[str, Any]) -> str:
    product = f"the product {_shown(args)}"
    boot = report["boot"]
    if boot == "not_started":
        said = f"{product} could not start: {report.get('detail')}"
    elif boot == "exited":
        said = f"{product} exited with code {report.get('exit_code')} during its boot"
    else:
        said = f"{product} did not answer {args.ready_url} within {args.ready_timeout_s:g} s"
    log = str(report.get("log_tail") or "").strip()
    return said + (f"; its output ends: {log[-800:]}" if log else "")


async def _record_boot(
    harbor: HarborAttempts, ref: AttemptRef, args: ProductAgentArgs, report: Mapping[str, Any]
) -> None:
    ready = report["boot"] == "ready"
    said = f"ready at {args.ready_url}" if ready else _boot_failure(args, report)
    log = str(report.get("log_tail") or "")
    shown, cut, chars = cap_text(f"{said}\n[{PRODUCT_LOG}]\n{log}" if log else said)
    await harbor.trajectory.record(
        AgentToolResult(
            **attempt_ids(ref),
            turn=0,
            call_id="boot",
            name="product_boot",
            exit_code=report.get("exit_code"),
            is_error=not ready,
            output=shown,
            truncated=cut,
            output_chars=chars,
            duration_ms=int(report.get("boot_ms", 0)),
        )
    )


async def _record_request(
    harbor: HarborAttempts, ref: AttemptRef, args: ProductAgentArgs, report: Mapping[str, Any]
) -> None:
    status = report.get("status")
    if report.get("timed_out"):
        head = f"POST {args.drive_url}: no reply in time"
    elif status is None:
        head = f"POST {args.drive_url}: failed"
    else:
        head = f"POST {args.drive_url}: HTTP {status}"
    reply = str(report.get("reply") or "")
    _, cut, _ = cap_text(reply)
    chars = int(report.get("reply_chars", len(reply)))
    shown, _, _ = cap_text(f"{head}\n{reply}")
    await harbor.trajectory.record(
        AgentToolResult(
            **attempt_ids(ref),
            turn=0,
            call_id="request",
            name="product_request",
            exit_code=None,
            is_error=status is None or not 200 <= int(status) < 300,
            output=shown,
            truncated=cut or chars > len(reply),
            output_chars=chars,
            duration_ms=int(report.get("request_ms", 0)),
        )
    )
