"""Platform throughput against an instant model, beside a plain-asyncio baseline.

Starts the whole platform in this process (``run_embedded``: its own nats-server,
SQLite stores, all six services) on free ports and a temporary data directory,
points pinned GSM8K runs at a fake OpenAI-compatible server that answers at
once, and reports tasks/second:

* platform, end to end: from ``POST /v1/runs`` until ``GET /v1/runs/{id}``
  shows a terminal status (the gateway projection has caught up);
* platform, Materialize only: the ``duration_ms`` of the run's
  ``PhaseCompleted(materialize)`` event (sandbox subprocess, scorer, proxy,
  result batches, run-log saves);
* baseline: an ``httpx.AsyncClient`` loop making the same number of chat
  completions, with the same prompts and the same concurrency, straight to the
  same fake server.

It also reports CPU seconds per task (``getrusage``) for this process (all
services, the proxy and the fake model), the work sandboxes and the baseline:
on a shared machine they drift much less than wall-clock rates.

GSM8K's test subset has 1,319 rows and the orchestrator caps ``metadata.limit``
at the subset size (``min(total, limit)`` in ``RunPipeline._fetch``), so more
tasks than that are run as consecutive runs whose figures are added up; the
cap is checked from each run's ``DatasetTasksArtifact`` rather than assumed.

    .venv/bin/python bench/throughput.py                 # 2,000 tasks
    .venv/bin/python bench/throughput.py --tasks 200 --json

Not a pytest test: it takes a minute or two and prints figures, it asserts nothing
beyond "every task was scored and every call reached the fake".
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import logging
import os
import platform
import resource
import shutil
import socket
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx

from benchwright_runtime.cli import run_embedded
from benchwright_shared.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
FAKE_SERVER = ROOT / "tests/support/fake_openai.py"
BENCH_TASK = ROOT / "services/sandbox-manager/benchwright_sandbox_manager/runtime/bench_task.py"
MATH_SCORER = ROOT / "shared/benchwright_shared/scorers/math.py"


def load_file(name: str, path: Path) -> ModuleType:
    """Import a module from a file without growing ``sys.path``.

    A longer ``sys.path`` would make every failed import slower, and httpcore
    retries one (``import sniffio``) several times per request: the figures
    would drift with the bench's own set-up.
    """
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


BENCHMARK = "GSM8K"
POLL_S = 0.2
RUN_TIMEOUT_S = 240.0
STARTUP_TIMEOUT_S = 60.0
READY_FILE = "bench-ready"


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds (user + system) of this process, and of its waited-for children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def gsm8k_prompts(n: int) -> list[str]:
    """The prompts the GSM8K scorer sends for rows 0..n-1 (wrapping past 1,319)."""
    from benchwright_registry.catalog import load_gsm8k_test

    # The scorer imports ``bench_task``, which only the sandbox has on its path.
    if "bench_task" not in sys.modules:
        load_file("bench_task", BENCH_TASK)
    build_prompt = load_file("bw_bench_math_scorer", MATH_SCORER).build_prompt

    rows = load_gsm8k_test()
    return [build_prompt(rows[i % len(rows)]["input"]["question"]) for i in range(n)]


# -- baseline -------------------------------------------------------------------------
async def baseline(base_url: str, prompts: list[str], concurrency: int) -> tuple[float, float]:
    """(wall s, CPU s of this process) for ``len(prompts)`` chat completions."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    queue: asyncio.Queue[str] = asyncio.Queue()
    for p in prompts:
        queue.put_nowait(p)
    failures = 0

    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60) as client:

        async def worker() -> None:
            nonlocal failures
            while True:
                try:
                    prompt = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                body = {
                    "model": "fake",
                    "messages": [{"role": "user", "content": prompt}],
                    "max_tokens": 256,
                    "temperature": 0,
                    "stop": ["\nQuestion:"],
                }
                response = await client.post("/chat/completions", json=body)
                reply = response.json()
                if response.status_code != 200 or not reply["choices"][0]["message"]["content"]:
                    failures += 1

        cpu0, _ = cpu_seconds()
        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
        cpu = cpu_seconds()[0] - cpu0
    if failures:
        raise RuntimeError(f"baseline: {failures} calls failed")
    return elapsed, cpu


# -- platform -------------------------------------------------------------------------
@dataclass
class RunFigures:
    run_id: str
    requested: int
    selected: int
    subset_total: int
    status: str
    wall_s: float
    phases_ms: dict[str, int] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


async def wait_until_up(data_dir: Path, platform_task: asyncio.Task[None]) -> dict[str, str]:
    """The saved admin credentials, once every service has started.

    ``credentials.json`` may be written before the gateway listens, so the
    ready file (written by ``run_embedded`` after all services started) is
    what says "up"; the gateway's ``/healthz`` confirms it.
    """
    ready, path = data_dir / READY_FILE, data_dir / "credentials.json"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if platform_task.done():
            platform_task.result()  # surfaces the start-up error
            raise RuntimeError("the platform stopped during start-up")
        if ready.exists() and path.exists():
            with contextlib.suppress(ValueError, httpx.HTTPError):
                creds: dict[str, str] = json.loads(path.read_text())
                async with httpx.AsyncClient(base_url=creds["base_url"], timeout=5) as client:
                    if (await client.get("/healthz")).status_code == 200 and creds.get("token"):
                        return creds
        await asyncio.sleep(0.05)
    raise TimeoutError(f"the platform was not up within {STARTUP_TIMEOUT_S:.0f}s")


async def run_once(client: httpx.AsyncClient, fake_url: str, limit: int) -> RunFigures:
    body = {
        "benchmark": BENCHMARK,
        "sut": {"model": "fake", "provider": "openai_compatible", "api_base": fake_url},
        "metadata": {"limit": limit},
    }
    started = time.perf_counter()
    response = await client.post("/v1/runs", json=body)
    response.raise_for_status()
    run_id = response.json()["id"]
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        run = (await client.get(f"/v1/runs/{run_id}")).raise_for_status().json()
        if run["status"] != "running":
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} still running after {RUN_TIMEOUT_S:.0f}s")
        await asyncio.sleep(POLL_S)
    wall = time.perf_counter() - started

    events = (
        (
            await client.get(
                f"/v1/runs/{run_id}/events",
                params={"types": "PhaseCompleted,DatasetTasksArtifact", "limit": 5000},
            )
        )
        .raise_for_status()
        .json()["data"]
    )
    phases = {
        e["data"]["phase"]: int(e["data"]["duration_ms"])
        for e in events
        if e["type"] == "PhaseCompleted"
    }
    dataset: dict[str, Any] = next(
        (e["data"] for e in events if e["type"] == "DatasetTasksArtifact"), {}
    )
    tasks = (await client.get(f"/v1/runs/{run_id}/tasks", params={"limit": 1})).raise_for_status()
    return RunFigures(
        run_id=run_id,
        requested=limit,
        selected=int(dataset.get("selected_tasks", 0)),
        subset_total=int(dataset.get("total_tasks", 0)),
        status=run["status"],
        wall_s=wall,
        phases_ms=phases,
        summary=tasks.json()["summary"],
    )


@dataclass
class PlatformFigures:
    runs: list[RunFigures]
    startup_s: float
    cpu_s: float  # this process: all six services, the proxy and the fake model
    sandbox_cpu_s: float  # the work sandboxes (waited-for children)


async def platform_runs(settings: Settings, fake_url: str, n_tasks: int) -> PlatformFigures:
    """Runs until ``n_tasks`` tasks were scored."""
    stop = asyncio.Event()
    t0 = time.perf_counter()
    platform_task = asyncio.create_task(
        run_embedded(settings, ready_file=settings.data_dir / READY_FILE, stop=stop, quiet=True)
    )
    runs: list[RunFigures] = []
    try:
        creds = await wait_until_up(settings.data_dir, platform_task)
        startup = time.perf_counter() - t0
        cpu0, kids0 = cpu_seconds()
        headers = {"Authorization": f"Bearer {creds['token']}"}
        async with httpx.AsyncClient(
            base_url=creds["base_url"], headers=headers, timeout=60
        ) as client:
            remaining = n_tasks
            while remaining > 0:
                figures = await run_once(client, fake_url, remaining)
                runs.append(figures)
                if figures.status != "ok" or figures.selected == 0:
                    raise RuntimeError(f"run {figures.run_id} ended {figures.status}: {figures}")
                remaining -= figures.selected
        cpu1, kids1 = cpu_seconds()
    finally:
        stop.set()
        await platform_task
    return PlatformFigures(runs, startup, cpu1 - cpu0, kids1 - kids0)


# -- report ---------------------------------------------------------------------------
def rate(tasks: int, seconds: float) -> float:
    return tasks / seconds if seconds > 0 else float("nan")


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    load_at_start = round(os.getloadavg()[0], 2)
    FakeOpenAIServer = load_file("bw_fake_openai", FAKE_SERVER).FakeOpenAIServer
    prompts = await asyncio.to_thread(gsm8k_prompts, args.tasks)
    fake = FakeOpenAIServer().start()
    data_dir = Path(tempfile.mkdtemp(prefix="bw-bench-"))
    try:
        # The baseline goes first, while nothing else runs in this process.
        await baseline(fake.base_url, prompts[:200], args.concurrency)  # warm-up
        baseline_s, baseline_cpu_s = await baseline(fake.base_url, prompts, args.concurrency)

        settings = Settings(
            data_dir=data_dir,
            gateway_port=free_port(),
            proxy_port=free_port(),
            task_concurrency=args.concurrency,
            nats_url=None,
            database_url=None,
        )
        calls_before_platform = fake.state["calls"]
        measured = await platform_runs(settings, fake.base_url, args.tasks)
        platform_calls = fake.state["calls"] - calls_before_platform
    finally:
        fake.stop()
        if not args.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)

    runs = measured.runs
    tasks = sum(r.selected for r in runs)
    scored = sum(int(r.summary.get("total") or 0) for r in runs)
    errored = sum(int(r.summary.get("errored") or 0) for r in runs)
    if scored != tasks or platform_calls != tasks or errored:
        raise RuntimeError(
            f"{tasks} tasks selected, {scored} scored, {errored} errored, "
            f"{platform_calls} calls reached the fake"
        )
    e2e_s = sum(r.wall_s for r in runs)
    mat_s = sum(r.phases_ms.get("materialize", 0) for r in runs) / 1000
    phases: dict[str, int] = {}
    for r in runs:
        for name, ms in r.phases_ms.items():
            phases[name] = phases.get(name, 0) + ms
    base_rate = rate(args.tasks, baseline_s)
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "loadavg_1m_at_start": load_at_start,
        },
        "benchmark": BENCHMARK,
        "concurrency": args.concurrency,
        "tasks": tasks,
        "platform_startup_s": round(measured.startup_s, 3),
        "platform_e2e_s": round(e2e_s, 3),
        "platform_e2e_tasks_per_s": round(rate(tasks, e2e_s), 2),
        "platform_materialize_s": round(mat_s, 3),
        "platform_materialize_tasks_per_s": round(rate(tasks, mat_s), 2),
        "baseline_tasks": args.tasks,
        "baseline_s": round(baseline_s, 3),
        "baseline_tasks_per_s": round(base_rate, 2),
        "ratio_baseline_over_e2e": round(base_rate / rate(tasks, e2e_s), 2),
        "ratio_baseline_over_materialize": round(base_rate / rate(tasks, mat_s), 2),
        "platform_cpu_ms_per_task": round(1000 * measured.cpu_s / tasks, 1),
        "sandbox_cpu_ms_per_task": round(1000 * measured.sandbox_cpu_s / tasks, 1),
        "baseline_cpu_ms_per_task": round(1000 * baseline_cpu_s / args.tasks, 1),
        "phases_ms": phases,
        "runs": [asdict(r) for r in runs],
    }


def print_table(result: dict[str, Any]) -> None:
    rows = [
        (
            "platform, end to end",
            result["tasks"],
            result["platform_e2e_s"],
            result["platform_e2e_tasks_per_s"],
            result["ratio_baseline_over_e2e"],
        ),
        (
            "platform, Materialize only",
            result["tasks"],
            result["platform_materialize_s"],
            result["platform_materialize_tasks_per_s"],
            result["ratio_baseline_over_materialize"],
        ),
        (
            "baseline (httpx, direct)",
            result["baseline_tasks"],
            result["baseline_s"],
            result["baseline_tasks_per_s"],
            1.0,
        ),
    ]
    print(
        f"{result['benchmark']} against an instant fake model, concurrency "
        f"{result['concurrency']}, {result['machine']['cpus']} CPUs, {result['date']}"
    )
    print(f"{'':28} {'tasks':>6} {'wall s':>8} {'tasks/s':>8} {'baseline/x':>10}")
    for name, tasks, wall, tps, ratio in rows:
        print(f"{name:28} {tasks:>6} {wall:>8.2f} {tps:>8.1f} {ratio:>10.1f}")
    runs = result["runs"]
    print(
        f"runs: {len(runs)} ("
        + " + ".join(f"{r['selected']} of limit {r['requested']}" for r in runs)
        + f"; subset has {runs[0]['subset_total']} rows)"
    )
    print(
        "phase totals (ms): "
        + ", ".join(f"{k} {v}" for k, v in result["phases_ms"].items())
        + f"; platform start-up {result['platform_startup_s']:.1f} s (not counted)"
    )
    p50 = [r["summary"].get("duration_ms_p50") for r in runs]
    p95 = [r["summary"].get("duration_ms_p95") for r in runs]
    print(f"per-task duration in the sandbox (ms): p50 {p50}, p95 {p95}")
    print(
        f"CPU per task: platform process {result['platform_cpu_ms_per_task']} ms "
        f"(+ sandbox {result['sandbox_cpu_ms_per_task']} ms), baseline process "
        f"{result['baseline_cpu_ms_per_task']} ms; load average at start "
        f"{result['machine']['loadavg_1m_at_start']}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=2000, help="tasks to run (default 2000)")
    parser.add_argument(
        "--concurrency",
        type=int,
        default=Settings.model_fields["task_concurrency"].default,
        help="tasks at once, for the platform (task_concurrency) and the baseline (default: "
        "the platform's default)",
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--keep-data", action="store_true", help="keep the temp data dir")
    args = parser.parse_args()
    if args.tasks < 1 or args.concurrency < 1:
        parser.error("--tasks and --concurrency must be at least 1")
    logging.basicConfig(level=os.environ.get("BW_LOG_LEVEL", "WARNING"))
    result = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
