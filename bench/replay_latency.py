"""Time from launching a replay to its first task result, beside two baselines.

The target (issue): "a replay of a known benchmark reaches its first task result
in under a second after launch". This script starts the whole platform in this
process (``run_embedded``: its own nats-server, SQLite stores, all six services)
on free ports and a temporary data directory, the same way ``bench/throughput.py``
does, and points it at the fake OpenAI-compatible server that answers at once.

1. An anchor run: ``{"request": "Run GSM8K, first 20 tasks", "driver": "builtin",
   "sut": <the fake>}``, waited for until it is terminal; it must end ``ok``.
2. N replays of it (``{"replay": {"from_run": <anchor>}}``), one after the
   other, each waited for to its end so that no figure includes queueing:

   * client side: from just before ``POST /v1/runs`` to the arrival of the first
     ``MaterializeTaskResult`` on ``GET /v1/runs/{id}/stream`` (SSE, opened as
     soon as the POST returns; the stream replays the log from its start, so
     nothing is missed);
   * server side: ``ts(first MaterializeTaskResult) - ts(RunLaunched)`` from the
     run's own log;
   * the breakdown between, from the log's timestamps (the same clock as the
     client's ``time.time()``: everything runs on this machine).

3. Baselines, measured N times in the same process, to read the figures against
   a noisy shared machine: one trivial authenticated API call
   (``GET /v1/runs/{anchor}``) and one chat completion sent straight to the fake.

Exits 1 when the median client-side latency is 1 s or more.

    .venv/bin/python bench/replay_latency.py               # 20 replays, ~15 s
    .venv/bin/python bench/replay_latency.py --replays 50 --json

Not a pytest test; it asserts nothing beyond "the anchor and every replay ended
ok with all their tasks scored".
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import logging
import math
import os
import platform
import shutil
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


def _load_throughput() -> ModuleType:
    """``bench/throughput.py`` as a module, by file path (see its ``load_file``:
    a longer ``sys.path`` would slow every failed import and skew the figures)."""
    name = "bw_bench_throughput"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "bench/throughput.py")
    if spec is None or spec.loader is None:
        raise ImportError("cannot load bench/throughput.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


tp = _load_throughput()

ANCHOR_REQUEST = "Run GSM8K, first 20 tasks"
FIRST_RESULT = "MaterializeTaskResult"
TERMINAL_EVENT = "PipelineFinished"
TARGET_S = 1.0
RUN_TIMEOUT_S = 240.0
POLL_S = 0.1


# -- helpers --------------------------------------------------------------------------
def parse_ts(value: str) -> float:
    """An event's ``ts`` (ISO 8601) as POSIX seconds."""
    ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=UTC)
    return ts.timestamp()


def stats(values: list[float]) -> dict[str, float]:
    """median, p95 (nearest rank) and max, in the values' unit."""
    if not values:
        return {"n": 0, "median": math.nan, "p95": math.nan, "max": math.nan}
    ordered = sorted(values)
    rank = max(1, math.ceil(0.95 * len(ordered)))
    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return {
        "n": len(ordered),
        "median": round(median, 4),
        "p95": round(ordered[rank - 1], 4),
        "max": round(ordered[-1], 4),
    }


async def wait_terminal(client: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while True:
        run: dict[str, Any] = (await client.get(f"/v1/runs/{run_id}")).raise_for_status().json()
        if run["status"] in ("ok", "error"):
            return run
        if time.monotonic() > deadline:
            raise TimeoutError(f"run {run_id} still {run['status']} after {RUN_TIMEOUT_S:.0f}s")
        await asyncio.sleep(POLL_S)


# -- one replay -----------------------------------------------------------------------
@dataclass
class ReplayFigures:
    run_id: str
    status: str
    tasks: int
    # client side, seconds
    latency_s: float  # t0 (before POST) -> first MaterializeTaskResult on the stream
    post_s: float  # t0 -> POST /v1/runs returned
    first_sse_event_s: float  # t0 -> first event of any type on the stream
    total_s: float  # t0 -> PipelineFinished on the stream
    # server side, seconds, from the log's timestamps
    server_s: float  # ts(RunLaunched) -> ts(first MaterializeTaskResult)
    # segments that add up to latency_s (ms); see SEGMENTS
    segments_ms: dict[str, float] = field(default_factory=dict)
    # the first result's own duration in the sandbox (ms), as the scorer measured it
    first_task_duration_ms: int = 0
    timeline_ms: list[tuple[str, str, float]] = field(default_factory=list)


# (name, from, to): points are "t0" (client, before POST), "t1" (client, the first
# result arrived) or "<EventType>[:phase]" (the first such event's ts in the log).
SEGMENTS: list[tuple[str, str, str]] = [
    ("POST -> RunLaunched (gateway, LaunchRun, run created)", "t0", "RunLaunched"),
    ("RunLaunched -> attach started (inherit, save, start)", "RunLaunched", "PhaseStarted:attach"),
    ("attach (AttachModel -> ModelAttached)", "PhaseStarted:attach", "PhaseCompleted:attach"),
    ("attach done -> materialize started", "PhaseCompleted:attach", "PhaseStarted:materialize"),
    ("materialize started -> SandboxCreated", "PhaseStarted:materialize", "SandboxCreated"),
    ("SandboxCreated -> first result (RunTasks, runner, batch)", "SandboxCreated", FIRST_RESULT),
    ("first result in the log -> on the client's stream", FIRST_RESULT, "t1"),
]


def points_of(events: list[dict[str, Any]]) -> dict[str, float]:
    """The first ts of each event type, and of each ``type:phase`` for phase events."""
    points: dict[str, float] = {}
    for e in events:
        ts = parse_ts(e["ts"])
        points.setdefault(e["type"], ts)
        phase = (e.get("data") or {}).get("phase")
        if phase:
            points.setdefault(f"{e['type']}:{phase}", ts)
    return points


async def replay_once(client: httpx.AsyncClient, anchor_id: str) -> ReplayFigures:
    t0_wall = time.time()
    t0 = time.perf_counter()
    response = await client.post("/v1/runs", json={"replay": {"from_run": anchor_id}})
    t_post = time.perf_counter()
    if response.status_code != 201:
        raise RuntimeError(f"replay launch answered {response.status_code}: {response.text}")
    run_id = response.json()["id"]

    events: list[dict[str, Any]] = []
    t_first_event = t1 = t_end = math.nan
    timeout = httpx.Timeout(RUN_TIMEOUT_S, connect=10)
    async with client.stream("GET", f"/v1/runs/{run_id}/stream", timeout=timeout) as stream:
        stream.raise_for_status()
        async for line in stream.aiter_lines():
            if not line.startswith("data:"):
                continue  # "event:", "id:", ": ping" and blank separators
            now = time.perf_counter()
            event = json.loads(line[5:].strip())
            events.append(event)
            if math.isnan(t_first_event):
                t_first_event = now
            if event["type"] == FIRST_RESULT and math.isnan(t1):
                t1 = now
            if event["type"] == TERMINAL_EVENT:
                t_end = now
                break
    if math.isnan(t1):
        raise RuntimeError(f"replay {run_id}: no {FIRST_RESULT} on its stream")
    seqs = [int(e["seq"]) for e in events]
    if seqs != list(range(len(seqs))):
        raise RuntimeError(f"replay {run_id}: the stream skipped or repeated events: {seqs}")

    run = await wait_terminal(client, run_id)
    points = points_of(events)
    points["t0"] = t0_wall
    points["t1"] = t0_wall + (t1 - t0)
    segments = {
        name: round(1000 * (points[b] - points[a]), 1)
        for name, a, b in SEGMENTS
        if a in points and b in points
    }
    launched = points["RunLaunched"]
    first = next(e for e in events if e["type"] == FIRST_RESULT)
    timeline = []
    for e in events:
        phase = (e.get("data") or {}).get("phase") or ""
        timeline.append((e["type"], phase, round(1000 * (parse_ts(e["ts"]) - launched), 1)))
        if e is first:
            break
    return ReplayFigures(
        run_id=run_id,
        status=run["status"],
        tasks=int((run.get("summary") or {}).get("total") or 0),
        latency_s=t1 - t0,
        post_s=t_post - t0,
        first_sse_event_s=t_first_event - t0,
        total_s=t_end - t0,
        server_s=points[FIRST_RESULT] - launched,
        segments_ms=segments,
        first_task_duration_ms=int((first.get("data") or {}).get("duration_ms") or 0),
        timeline_ms=timeline,
    )


# -- baselines ------------------------------------------------------------------------
async def api_round_trips(client: httpx.AsyncClient, run_id: str, n: int) -> list[float]:
    await client.get(f"/v1/runs/{run_id}")  # warm-up
    out = []
    for _ in range(n):
        t = time.perf_counter()
        (await client.get(f"/v1/runs/{run_id}")).raise_for_status()
        out.append(time.perf_counter() - t)
    return out


async def chat_round_trips(base_url: str, n: int) -> list[float]:
    body = {
        "model": "fake",
        "messages": [{"role": "user", "content": "Question: 1 + 1?\nAnswer:"}],
        "max_tokens": 256,
        "temperature": 0,
    }
    out = []
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as direct:
        await direct.post("/chat/completions", json=body)  # warm-up
        for _ in range(n):
            t = time.perf_counter()
            (await direct.post("/chat/completions", json=body)).raise_for_status()
            out.append(time.perf_counter() - t)
    return out


# -- the session ----------------------------------------------------------------------
@dataclass
class Session:
    startup_s: float
    anchor_id: str
    anchor_s: float
    anchor_tasks: int
    replays: list[ReplayFigures]
    api_s: list[float]
    chat_s: list[float]


async def session(settings: Settings, fake_url: str, n: int) -> Session:
    stop = asyncio.Event()
    t0 = time.perf_counter()
    platform_task = asyncio.create_task(
        run_embedded(settings, ready_file=settings.data_dir / tp.READY_FILE, stop=stop, quiet=True)
    )
    try:
        creds = await tp.wait_until_up(settings.data_dir, platform_task)
        startup = time.perf_counter() - t0
        headers = {"Authorization": f"Bearer {creds['token']}"}
        async with httpx.AsyncClient(
            base_url=creds["base_url"], headers=headers, timeout=60
        ) as client:
            body = {
                "request": ANCHOR_REQUEST,
                "driver": "builtin",
                "sut": {"model": "fake", "provider": "openai_compatible", "api_base": fake_url},
            }
            started = time.perf_counter()
            response = await client.post("/v1/runs", json=body)
            if response.status_code != 201:
                raise RuntimeError(
                    f"anchor launch answered {response.status_code}: {response.text}"
                )
            anchor_id = response.json()["id"]
            anchor = await wait_terminal(client, anchor_id)
            anchor_s = time.perf_counter() - started
            if anchor["status"] != "ok":
                raise RuntimeError(
                    f"anchor run {anchor_id} ended {anchor['status']}: {anchor.get('error')}"
                )
            anchor_tasks = int((anchor.get("summary") or {}).get("total") or 0)

            replays: list[ReplayFigures] = []
            for i in range(n):
                figures = await replay_once(client, anchor_id)
                if figures.status != "ok" or figures.tasks != anchor_tasks:
                    raise RuntimeError(
                        f"replay {i + 1} ({figures.run_id}) ended {figures.status} with "
                        f"{figures.tasks} of {anchor_tasks} tasks"
                    )
                replays.append(figures)

            api = await api_round_trips(client, anchor_id, n)
        chat = await chat_round_trips(fake_url, n)
    finally:
        stop.set()
        await platform_task
    return Session(startup, anchor_id, anchor_s, anchor_tasks, replays, api, chat)


async def main_async(args: argparse.Namespace) -> dict[str, Any]:
    load_at_start = round(os.getloadavg()[0], 2)
    FakeOpenAIServer = tp.load_file("bw_fake_openai", tp.FAKE_SERVER).FakeOpenAIServer
    fake = FakeOpenAIServer().start()
    data_dir = Path(tempfile.mkdtemp(prefix="bw-bench-replay-"))
    try:
        settings = Settings(
            data_dir=data_dir,
            gateway_port=tp.free_port(),
            proxy_port=tp.free_port(),
            nats_url=None,
            database_url=None,
        )
        s = await session(settings, fake.base_url, args.replays)
    finally:
        fake.stop()
        if not args.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)
    load_at_end = round(os.getloadavg()[0], 2)

    replays = s.replays
    segment_stats = {
        name: stats([r.segments_ms[name] for r in replays if name in r.segments_ms])
        for name, _, _ in SEGMENTS
    }
    latency = stats([r.latency_s for r in replays])
    median_replay = sorted(replays, key=lambda r: r.latency_s)[len(replays) // 2]
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "loadavg_1m_at_start": load_at_start,
            "loadavg_1m_at_end": load_at_end,
        },
        "target_s": TARGET_S,
        "meets_target": latency["median"] < TARGET_S,
        "replays": len(replays),
        "platform_startup_s": round(s.startup_s, 3),
        "anchor": {
            "run_id": s.anchor_id,
            "request": ANCHOR_REQUEST,
            "tasks": s.anchor_tasks,
            "wall_s": round(s.anchor_s, 3),
        },
        "latency_s": latency,
        "server_s": stats([r.server_s for r in replays]),
        "post_s": stats([r.post_s for r in replays]),
        "first_sse_event_s": stats([r.first_sse_event_s for r in replays]),
        "replay_total_s": stats([r.total_s for r in replays]),
        "first_task_duration_ms": stats([float(r.first_task_duration_ms) for r in replays]),
        "segments_ms": segment_stats,
        "baseline_api_get_s": stats(s.api_s),
        "baseline_chat_direct_s": stats(s.chat_s),
        "median_replay_timeline_ms": median_replay.timeline_ms,
        "runs": [{k: v for k, v in asdict(r).items() if k != "timeline_ms"} for r in replays],
    }


def print_table(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(
        f"replay of {result['anchor']['run_id']} ({result['anchor']['tasks']} GSM8K tasks, "
        f"anchor took {result['anchor']['wall_s']:.1f} s) x {result['replays']}, "
        f"{m['cpus']} CPUs, load {m['loadavg_1m_at_start']} -> {m['loadavg_1m_at_end']}, "
        f"{result['date']}"
    )
    print(f"{'':62} {'median':>8} {'p95':>8} {'max':>8}")

    def row(name: str, st: dict[str, float], scale: float = 1000.0) -> None:
        print(
            f"{name:62} {st['median'] * scale:>8.1f} {st['p95'] * scale:>8.1f} "
            f"{st['max'] * scale:>8.1f}"
        )

    print("ms")
    row("launch -> first task result, client (POST -> SSE)", result["latency_s"])
    row("RunLaunched -> first MaterializeTaskResult, server (log ts)", result["server_s"])
    row("  POST /v1/runs returned", result["post_s"])
    row("  first event of any kind on the stream", result["first_sse_event_s"])
    row("launch -> PipelineFinished on the stream", result["replay_total_s"])
    print("breakdown (log ts; each row's median, so they need not add up exactly)")
    for name, st in result["segments_ms"].items():
        row("  " + name, st, 1.0)
    row("  (the first task's own duration in the sandbox)", result["first_task_duration_ms"], 1.0)
    print("baselines")
    row("  GET /v1/runs/{anchor} (authenticated API round trip)", result["baseline_api_get_s"])
    row("  one chat completion straight to the fake", result["baseline_chat_direct_s"])
    median = result["latency_s"]["median"]
    verdict = "MEETS" if result["meets_target"] else "MISSES"
    print(
        f"{verdict} the target: median launch -> first result {median:.3f} s "
        f"(target < {result['target_s']:.1f} s); platform start-up "
        f"{result['platform_startup_s']:.1f} s not counted"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--replays", type=int, default=20, help="replays to time (default 20)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--keep-data", action="store_true", help="keep the temp data dir")
    args = parser.parse_args()
    if args.replays < 1:
        parser.error("--replays must be at least 1")
    logging.basicConfig(level=os.environ.get("BW_LOG_LEVEL", "WARNING"))
    result = asyncio.run(main_async(args))
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    if not result["meets_target"]:
        print(
            f"FAIL: median launch -> first task result {result['latency_s']['median']:.3f} s "
            f">= {TARGET_S:.1f} s",
            file=sys.stderr,
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
