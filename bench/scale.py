"""Throughput as the platform grows by copies: the same workload, three shapes, one run.

The workload: ``--tasks`` GSM8K tasks (2,000) as ``--runs`` concurrent pinned runs
against an instant fake OpenAI-compatible model, each run sweeping with
``task_concurrency`` 8. Three shapes of the platform, one after the other:

* ``embedded``: ``benchwright up`` (every service in one process, SQLite, its own
  nats-server), in a subprocess;
* ``processes``: one ``benchwright serve`` process per service, PostgreSQL, a
  private nats-server;
* ``copies``: the same, with two copies of the hot services (orchestrator,
  sandbox-manager, proxy; a TCP balancer in front of the proxy copies).

For each: tasks per second from the first launch to the last run's terminal
status, and the sum over runs of Materialize's own duration. Also a direct
``httpx`` loop against the same fake model (the ceiling of what the fake serves
here). The figures go to docs/performance.md.

    .venv/bin/python bench/scale.py                      # needs PostgreSQL (BW_TEST_DATABASE_URL)
    .venv/bin/python bench/scale.py --tasks 400 --json

Prints figures; asserts only that every task was scored and none errored.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import free_port, reset_postgres  # noqa: E402
from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402
from tests.system.deployment import SERVICES, Balancer, Deployment, PrivateNats  # noqa: E402

HOT = ("orchestrator", "sandbox-manager", "proxy")
ANSWER = "Let me think. The answer is 42."


def busy_cpu_s() -> float:
    """CPU seconds the whole machine has spent busy (all processes, all cores)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return (sum(fields) - idle) / os.sysconf("SC_CLK_TCK")


def launch_body(model: FakeOpenAIServer, tasks: int, n: int) -> dict[str, Any]:
    return {
        "benchmark": "GSM8K",
        "sut": {"model": f"fake-{n}", "provider": "openai_compatible", "api_base": model.base_url},
        "metadata": {"limit": tasks},
    }


async def drive(
    base_url: str, token: str, model: FakeOpenAIServer, tasks: int, runs: int
) -> dict[str, Any]:
    """Launch ``runs`` runs of ``tasks // runs`` tasks at once; wait for all of them."""
    per_run = tasks // runs
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=60) as client:
        for _ in range(300):  # the registry loads its catalog on start
            with contextlib.suppress(httpx.TransportError):
                probe = await client.get("/v1/benchmarks", params={"limit": 1})
                if probe.status_code == 200 and probe.json()["data"]:
                    break
            await asyncio.sleep(0.2)
        calls_before = model.state["calls"]
        cpu_before = busy_cpu_s()
        started = time.monotonic()
        ids = []
        for n in range(runs):
            launched = await client.post("/v1/runs", json=launch_body(model, per_run, n))
            launched.raise_for_status()
            ids.append(launched.json()["id"])
        done: dict[str, dict[str, Any]] = {}
        while len(done) < len(ids):
            for run_id in ids:
                if run_id in done:
                    continue
                with contextlib.suppress(httpx.TransportError):
                    run = (await client.get(f"/v1/runs/{run_id}")).json()
                    if run.get("status") in ("ok", "error"):
                        done[run_id] = run
            await asyncio.sleep(0.2)
        wall = time.monotonic() - started
        cpu = busy_cpu_s() - cpu_before
        materialize_ms = 0
        scored = errored = 0
        for run_id, run in done.items():
            summary = run.get("summary") or {}
            scored += int(summary.get("total") or 0)
            errored += int(summary.get("errored") or 0)
            page = (
                await client.get(
                    f"/v1/runs/{run_id}/events", params={"types": "PhaseCompleted", "limit": 100}
                )
            ).json()
            materialize_ms += sum(
                e["data"]["duration_ms"]
                for e in page["data"]
                if e["data"]["phase"] == "materialize"
            )
    assert scored == per_run * runs and errored == 0, (scored, errored)
    calls = model.state["calls"] - calls_before
    assert calls == per_run * runs, calls
    return {
        "tasks": scored,
        "wall_s": round(wall, 2),
        "tasks_per_s": round(scored / wall, 1),
        "materialize_s": round(materialize_ms / 1000, 2),
        # How many of the machine's cores were busy, on average, during the workload.
        "cores_busy": round(cpu / wall, 2),
        "cpu_ms_per_task": round(cpu * 1000 / scored, 1),
    }


async def embedded(root: Path, model: FakeOpenAIServer, tasks: int, runs: int) -> dict[str, Any]:
    data = root / "embedded"
    ready = root / "embedded.ready"
    env = {
        **os.environ,
        "BW_DATA_DIR": str(data),
        "BW_GATEWAY_PORT": str(free_port()),
        "BW_PROXY_PORT": str(free_port()),
        "BW_READY_FILE": str(ready),
        "BW_TASK_CONCURRENCY": "8",
    }
    for name in ("BW_NATS_URL", "BW_DATABASE_URL"):
        env.pop(name, None)
    log = (root / "embedded.log").open("wb")
    proc = subprocess.Popen(  # noqa: ASYNC220 - started once, waited on below
        [str(ROOT / ".venv/bin/benchwright"), "up"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        while not ready.exists():
            if proc.poll() is not None:
                raise RuntimeError("benchwright up exited")
            await asyncio.sleep(0.1)
        creds = json.loads((data / "credentials.json").read_text())
        return await drive(creds["base_url"], creds["token"], model, tasks, runs)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)


async def processes(
    root: Path, db_url: str, model: FakeOpenAIServer, tasks: int, runs: int, copies: int
) -> dict[str, Any]:
    reset_postgres(db_url)
    nats = PrivateNats(root / f"nats-{copies}")
    nats.start()
    await nats.ready()
    deployment = Deployment(root / f"processes-{copies}", nats.url, db_url)
    deployment.root.mkdir(parents=True)
    balancer = await Balancer(deployment.proxy_ports[:copies]).start()
    deployment.env.update(
        {
            "BW_TASK_CONCURRENCY": "8",
            "BW_PROXY_PUBLIC_URL": balancer.url,
            "BW_INJECTOR_CA_DIR": str(root / f"ca-{copies}"),
            "BW_VAULT_KEY": Fernet.generate_key().decode(),
        }
    )
    try:
        for service in SERVICES:
            for index in range(copies if service in HOT else 1):
                deployment.start(service, index)
        creds = await deployment.credentials()
        return await drive(creds["base_url"], creds["token"], model, tasks, runs)
    finally:
        deployment.stop_all()
        await balancer.stop()
        nats.stop()


async def baseline(model: FakeOpenAIServer, tasks: int, concurrency: int) -> dict[str, Any]:
    """The same number of chat completions straight to the fake, ``concurrency`` at a time."""
    queue: asyncio.Queue[int] = asyncio.Queue()
    for i in range(tasks):
        queue.put_nowait(i)
    body = {"model": "fake", "messages": [{"role": "user", "content": "What is 6 x 7?"}]}

    async def worker(client: httpx.AsyncClient) -> None:
        while not queue.empty():
            queue.get_nowait()
            (await client.post("/chat/completions", json=body)).raise_for_status()

    async with httpx.AsyncClient(base_url=model.base_url, timeout=30) as client:
        cpu_before = busy_cpu_s()
        started = time.monotonic()
        await asyncio.gather(*(worker(client) for _ in range(concurrency)))
        wall = time.monotonic() - started
        cpu = busy_cpu_s() - cpu_before
    return {
        "tasks": tasks,
        "wall_s": round(wall, 2),
        "tasks_per_s": round(tasks / wall, 1),
        "cores_busy": round(cpu / wall, 2),
        "cpu_ms_per_task": round(cpu * 1000 / tasks, 1),
    }


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    db_url = os.environ.get("BW_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test")
    model = FakeOpenAIServer(lambda prompt: ANSWER).start()
    results: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bw-scale-") as tmp:
            root = Path(tmp)
            results["baseline (httpx, direct)"] = await baseline(model, args.tasks, 8 * args.runs)
            results["embedded (one process)"] = await embedded(root, model, args.tasks, args.runs)
            results["processes (one per service)"] = await processes(
                root, db_url, model, args.tasks, args.runs, copies=1
            )
            results["copies (2 x orchestrator, sandbox-manager, proxy)"] = await processes(
                root, db_url, model, args.tasks, args.runs, copies=2
            )
    finally:
        model.stop()
    if args.json:
        print(json.dumps(results, indent=2))
        return
    one = results["processes (one per service)"]["tasks_per_s"]
    print(
        f"\n{args.tasks} tasks as {args.runs} concurrent runs, instant model, {os.cpu_count()} CPUs"
    )
    print(
        f"{'shape':52} {'tasks':>6} {'wall s':>7} {'tasks/s':>8} {'vs 1 copy':>9} "
        f"{'cores busy':>10} {'CPU ms/task':>11}"
    )
    for name, r in results.items():
        ratio = f"{r['tasks_per_s'] / one:.2f}x" if not name.startswith("baseline") else "-"
        print(
            f"{name:52} {r['tasks']:>6} {r['wall_s']:>7} {r['tasks_per_s']:>8} {ratio:>9} "
            f"{r['cores_busy']:>10} {r['cpu_ms_per_task']:>11}"
        )


if __name__ == "__main__":
    asyncio.run(main())
