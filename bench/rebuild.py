"""How fast a read model is rebuilt from its stream, beside reading the stream alone.

Starts the embedded platform in this process (its own nats-server; SQLite, or
PostgreSQL with ``--postgres``), runs one real pinned run against an instant
fake model, then publishes copies of that run's log under new run ids until the
run-log stream holds ``--events`` events (realistic events: the gateway's ``runs``
view applies every one). Once the view has caught up it times:

* ``rebuild``: ``POST /v1/admin/projections/runs/rebuild`` (drop the view, replay
  the stream, compare digests), events per second;
* ``read only``: the same stream read and decoded by the replay a rebuild uses
  (``benchwright_shared.tail.replay``), no database: the ceiling of a rebuild here;
* ``read only (pull)``: the same with the pull consumer the live feeds use.

    .venv/bin/python bench/rebuild.py                  # 20,000 events
    .venv/bin/python bench/rebuild.py --events 50000 --postgres --json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import nats

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchwright_runtime.cli import run_embedded  # noqa: E402
from benchwright_shared import subjects  # noqa: E402
from benchwright_shared.settings import Settings  # noqa: E402
from benchwright_shared.tail import StreamTail, replay  # noqa: E402
from tests.conftest import free_port, reset_postgres  # noqa: E402
from tests.support.fake_openai import FakeOpenAIServer  # noqa: E402


async def template_run(client: httpx.AsyncClient, model: FakeOpenAIServer) -> list[dict[str, Any]]:
    body = {
        "benchmark": "GSM8K",
        "sut": {"model": "fake", "provider": "openai_compatible", "api_base": model.base_url},
        "metadata": {"limit": 50},
    }
    for _ in range(300):
        response = await client.post("/v1/runs", json=body)
        if response.status_code == 201:
            break
        await asyncio.sleep(0.2)
    run_id = response.json()["id"]
    for _ in range(3000):
        if (await client.get(f"/v1/runs/{run_id}")).json()["status"] != "running":
            break
        await asyncio.sleep(0.2)
    page = (await client.get(f"/v1/runs/{run_id}/events", params={"limit": 5000})).json()
    events: list[dict[str, Any]] = page["data"]
    return events


async def publish_copies(
    url: str, template: list[dict[str, Any]], events: int
) -> tuple[int, str | None]:
    nc = await nats.connect(url)
    js = nc.jetstream()
    info = await js.stream_info(subjects.RUNS_STREAM)
    have = int(info.state.messages)
    copies = max(0, (events - have) // len(template))
    futures = []
    run_id = None
    for _ in range(copies):
        run_id = str(uuid.uuid4())
        for event in template:
            clone = {**event, "run_id": run_id}
            futures.append(
                await js.publish_async(
                    subjects.run_log_subject(run_id),
                    json.dumps(clone).encode(),
                    stream=subjects.RUNS_STREAM,
                    headers={"Nats-Msg-Id": f"bench:{run_id}:{event['seq']}"},
                )
            )
        if len(futures) > 2000:
            await asyncio.gather(*futures)
            futures = []
    await asyncio.gather(*futures)
    last = int((await js.stream_info(subjects.RUNS_STREAM)).state.last_seq)
    await nc.close()
    return last, run_id


async def settled(client: httpx.AsyncClient, run_id: str | None, timeout: float = 600) -> None:
    """Until the live view holds the last copy (the feed applies in order: all before it too)."""
    deadline = time.monotonic() + timeout
    while run_id is not None and time.monotonic() < deadline:
        answer = await client.get(f"/v1/runs/{run_id}")
        if answer.status_code == 200 and answer.json()["status"] != "running":
            return
        await asyncio.sleep(0.2)


async def quiet(max_wait_s: float = 300) -> None:
    """Until this process (the platform) is idle: the other read models (the registry's
    follow the same stream) have caught up too, and do not compete with the rebuild."""
    deadline = time.monotonic() + max_wait_s
    while time.monotonic() < deadline:
        before = time.process_time()
        await asyncio.sleep(1.0)
        if time.process_time() - before < 0.05:
            return


async def read_only(url: str, *, pull: bool) -> tuple[int, float]:
    """The stream read and decoded, nothing applied: by the replay a rebuild uses, or
    (``pull``) by the pull consumer the live feeds use."""
    nc = await nats.connect(url)
    js = nc.jetstream()
    last = int((await js.stream_info(subjects.RUNS_STREAM)).state.last_seq)
    started = time.monotonic()
    count = 0
    if pull:
        tail = StreamTail(js, subjects.RUNS_STREAM, subjects.RUN_LOG_ALL)
        while tail.next_seq <= last:
            for msg in await tail.fetch(timeout=1.0, batch=1024):
                json.loads(msg.data)
                count += 1
        await tail.close()
    else:
        async for msgs in replay(
            js, subjects.RUNS_STREAM, subjects.RUN_LOG_ALL, start_seq=1, last_seq=last
        ):
            for msg in msgs:
                json.loads(msg.data)
                count += 1
    elapsed = time.monotonic() - started
    await nc.close()
    return count, elapsed


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    database_url = None
    if args.postgres:
        database_url = os.environ.get(
            "BW_TEST_DATABASE_URL", "postgresql://postgres@127.0.0.1:5432/test"
        )
        reset_postgres(database_url)
    model = FakeOpenAIServer(lambda prompt: "The answer is 42.").start()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bw-rebuild-") as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            database_url=database_url,
            gateway_port=free_port(),
            proxy_port=free_port(),
        )
        stop = asyncio.Event()
        platform = asyncio.create_task(run_embedded(settings, stop=stop, quiet=True))
        creds_path = Path(tmp) / "credentials.json"
        for _ in range(1200):
            if creds_path.exists():
                break
            await asyncio.sleep(0.1)
        creds = json.loads(creds_path.read_text())
        nats_url = (Path(tmp) / "nats" / "nats-server.conf").read_text().split('"')[1]
        nats_url = f"nats://{nats_url}"
        headers = {"Authorization": f"Bearer {creds['token']}"}
        try:
            async with httpx.AsyncClient(
                base_url=creds["base_url"], headers=headers, timeout=600
            ) as client:
                template = await template_run(client, model)
                last, last_run = await publish_copies(nats_url, template, args.events)
                # The live view catches up first: the rebuild starts from a settled view.
                await settled(client, last_run)
                await quiet()
                started = time.monotonic()
                answer = (await client.post("/v1/admin/projections/runs/rebuild")).json()
                rebuild_s = time.monotonic() - started
            count, read_s = await read_only(nats_url, pull=False)
            pull_count, pull_s = await read_only(nats_url, pull=True)
        finally:
            stop.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(platform, 60)
            model.stop()
    results = {
        "store": "postgresql" if args.postgres else "sqlite",
        "events": last,
        "rebuild": {
            "seconds": round(rebuild_s, 2),
            "events_per_s": round(last / rebuild_s),
            "digest_unchanged": answer.get("digest") == answer.get("before_digest"),
        },
        "read only": {
            "seconds": round(read_s, 2),
            "events_per_s": round(count / read_s),
            "events": count,
        },
        "read only (pull)": {
            "seconds": round(pull_s, 2),
            "events_per_s": round(pull_count / pull_s),
            "events": pull_count,
        },
    }
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"\nrebuilding the gateway's runs view from {last:,} run-log events ({results['store']})")
    for name in ("rebuild", "read only", "read only (pull)"):
        r = results[name]
        print(f"  {name:17} {r['seconds']:>7} s  {r['events_per_s']:>8,} events/s")
    print(f"  digest unchanged by the rebuild: {results['rebuild']['digest_unchanged']}")
    print(
        f"  events read: replay {results['read only']['events']:,}, "
        f"pull {results['read only (pull)']['events']:,}"
    )


if __name__ == "__main__":
    asyncio.run(main())
