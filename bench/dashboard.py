"""Server time of the dashboard's pages for a 10,000-task run, beside the API's.

The gateway runs in this process on a private nats-server, with responders that
answer its two questions to other services at once (the run's cost, the run's
phase entries), as billing and the orchestrator do from their stores. Its ``runs``
view is filled with two runs of ``--tasks`` tasks each, every task with a 300
character output: one finished, one running with half its tasks settled. Each
request goes through the ASGI app in-process, so the time measured is the
server's (routing, authorization, the view's SQL, rendering), no network.

Figures, each the median and p95 of ``--samples`` requests:

* the run page (``GET /runs/{id}``: header, cost, phases, the outcome vector in
  the page, the first page of 50 task rows), finished and running, and a deep
  page of its task table with a search;
* the outcome vector (``GET /runs/{id}/outcomes``) and one live-stream poll
  (reading the vector again and diffing it, what ``/runs/{id}/live`` does after a
  batch of 200 results), with the bytes it sends;
* baselines in the same run: the API's ``GET /v1/runs/{id}`` and a 1,000-row page
  of ``GET /v1/runs/{id}/tasks``, and the old HTML report of every task
  (``GET /v1/runs/{id}/report``).

It exits 1 when the run page's median is 1 s or more (the target in
``docs/performance.md``).

    .venv/bin/python bench/dashboard.py               # 10,000 tasks, 20 samples, ~1 min
    .venv/bin/python bench/dashboard.py --tasks 2000 --samples 5 --json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from faststream.nats import NatsBroker
from nats.aio.msg import Msg

from benchwright_gateway.app import GatewayService
from benchwright_gateway.web import live
from benchwright_runtime.nats_server import EmbeddedNats
from benchwright_shared import subjects
from benchwright_shared.contracts import GetRunEvents, RunCost, RunEventsPage
from benchwright_shared.settings import Settings

DONE, RUNNING = "d0000000-0000-0000-0000-000000000000", "r0000000-0000-0000-0000-000000000000"
ACCOUNT, PASSWORD = "acct_bench", "a long enough password"
OUTPUT = "The answer is 42. " * 16 + "<b>not markup</b>"
TARGET_S = 1.0
BATCH = 200


def run_log(run_id: str, tasks: int, settled: int, finished: bool) -> list[dict[str, Any]]:
    def message(seq: int, kind: str, **data: Any) -> dict[str, Any]:
        return {"run_id": run_id, "seq": seq, "type": kind, "ts": "2026-12-01T00:00:00Z",
                "data": data}  # fmt: skip

    log = [
        message(0, "RunLaunched", account=ACCOUNT, benchmark_id="bm_1", benchmark_name="MMLU",
                subset_id="sub_1", subset_slug="all",
                sut={"model": "m", "provider": "openai_compatible"}),
        message(1, "DatasetTasksArtifact", selected_tasks=tasks, content_sha256="x"),
        message(2, "PhaseStarted", phase="materialize"),
    ]  # fmt: skip
    for index in range(settled):
        outcome = ("pass", "fail", "pass", "err")[index % 4]
        seq = 10 + 2 * index
        log.append(
            message(
                seq,
                "MaterializeTaskResult",
                task_id=f"task-{index}",
                index=index,
                trial=0,
                output=OUTPUT,
                duration_ms=900,
                error_type="ScorerError" if outcome == "err" else None,
            )
        )
        log.append(message(seq + 1, "MaterializeTaskAggregated", task_id=f"task-{index}",
                           index=index, outcome=outcome,
                           score=1.0 if outcome == "pass" else 0.0))  # fmt: skip
    if finished:
        log.append(message(10 + 2 * tasks, "PipelineFinished", status="ok",
                           summary={"total": tasks, "passed": tasks // 2}))  # fmt: skip
    return log


async def answer_questions(broker: NatsBroker) -> None:
    """Billing's and the orchestrator's answers, at once, as from their stores."""

    async def cost(msg: Msg) -> None:
        run_id = json.loads(msg.data)["run_id"]
        await msg.respond(RunCost(run_id=run_id, model_micros=1_234_567).model_dump_json().encode())

    async def events(msg: Msg) -> None:
        query = GetRunEvents.model_validate_json(msg.data)
        phases = [
            {"run_id": query.run_id, "seq": i, "type": kind, "ts": "2026-12-01T00:00:00Z",
             "data": {"phase": phase, "duration_ms": 1200}}
            for i, (kind, phase) in enumerate(
                [("PhaseStarted", "fetch"), ("PhaseCompleted", "fetch"),
                 ("PhaseStarted", "setup"), ("PhaseCompleted", "setup"),
                 ("PhaseStarted", "materialize")]
            )
        ]  # fmt: skip
        await msg.respond(RunEventsPage(events=phases).model_dump_json().encode())  # type: ignore[arg-type]

    await broker.connection.subscribe("bw.q.billing.run_cost.v1", cb=cost)
    await broker.connection.subscribe(subjects.GET_RUN_EVENTS, cb=events)


async def timed(fn: Callable[[], Awaitable[int]], samples: int) -> dict[str, Any]:
    """Median and p95 of ``fn``'s wall time (ms) and the size it reports (bytes)."""
    times: list[float] = []
    size = 0
    await fn()  # warm: templates compiled, statements prepared
    for _ in range(samples):
        start = time.perf_counter()
        size = await fn()
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
    return {"median_ms": round(statistics.median(times), 2), "p95_ms": round(p95, 2),
            "bytes": size}  # fmt: skip


async def measure(tasks: int, samples: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        data_dir = Path(folder)
        nats = EmbeddedNats(data_dir)
        await nats.start()
        service = GatewayService(Settings(data_dir=data_dir, nats_url=nats.url))
        broker = NatsBroker(nats.url, logger=None)
        await broker.connect()
        service.ctx.broker = broker
        try:
            await answer_questions(broker)
            began = time.perf_counter()
            position = 0
            for run_id, settled, finished in ((DONE, tasks, True), (RUNNING, tasks // 2, False)):
                log = run_log(run_id, tasks, settled, finished)
                for start in range(0, len(log), 2000):
                    chunk = log[start : start + 2000]
                    service.views.store.apply_many(
                        "runs", [(position + i + 1, m) for i, m in enumerate(chunk)]
                    )
                    position += len(chunk)
            seeded_s = time.perf_counter() - began
            service.app.create_login("bench", PASSWORD, account=ACCOUNT)
            session, _ = service.app.open_session("bench", PASSWORD)
            async with httpx.AsyncClient(
                transport=httpx.ASGITransport(app=service.http), base_url="http://bench",
                cookies={"bw_session": session},
                headers={"Authorization": f"Bearer {session}"}, timeout=120,
            ) as client:  # fmt: skip

                def get(path: str, **params: Any) -> Callable[[], Awaitable[int]]:
                    async def call() -> int:
                        response = await client.get(path, params=params)
                        assert response.status_code == 200, (path, response.status_code)
                        return len(response.content)

                    return call

                async def poll() -> int:
                    # What the live stream does when a batch lands: read, diff, send.
                    _, before = await service.ctx.read(live.snapshot(RUNNING))
                    after = before.replace(".", "p", BATCH)
                    return len(json.dumps(live.changed_cells(before, after)))

                figures = {
                    "run page (finished)": await timed(get(f"/runs/{DONE}"), samples),
                    "run page (running)": await timed(get(f"/runs/{RUNNING}"), samples),
                    "run page, task page 150, searched": await timed(
                        get(f"/runs/{DONE}", page=150, q="task-"), samples
                    ),
                    "outcome vector": await timed(get(f"/runs/{DONE}/outcomes"), samples),
                    f"live poll ({BATCH} cells changed)": await timed(poll, samples),
                    "runs list": await timed(get("/runs"), samples),
                    "baseline: GET /v1/runs/{id}": await timed(get(f"/v1/runs/{DONE}"), samples),
                    "baseline: GET /v1/runs/{id}/tasks?limit=1000": await timed(
                        get(f"/v1/runs/{DONE}/tasks", limit=1000), samples
                    ),
                    "baseline: GET /v1/runs/{id}/report (all tasks)": await timed(
                        get(f"/v1/runs/{DONE}/report"), max(3, samples // 4)
                    ),
                }
        finally:
            await broker.stop()
            service.views.close()
            service.app.close()
            nats.stop()
    return {"tasks": tasks, "samples": samples, "seeded_s": round(seeded_s, 1), "figures": figures}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(measure(args.tasks, args.samples))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{result['tasks']:,} tasks a run, {result['samples']} samples "
              f"(views filled in {result['seeded_s']} s)")  # fmt: skip
        print(f"{'request':<52}{'median ms':>10}{'p95 ms':>10}{'bytes':>12}")
        for name, figure in result["figures"].items():
            print(f"{name:<52}{figure['median_ms']:>10}{figure['p95_ms']:>10}"
                  f"{figure['bytes']:>12,}")  # fmt: skip
    page = result["figures"]["run page (finished)"]["median_ms"] / 1000
    return 0 if page < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
