"""The model proxy's added latency per call, beside a direct call to the same model.

The target (issue 4): the proxy adds under 2 ms per call, median, over a direct
call. This script starts, in this process:

* the fake OpenAI-compatible server (``tests/support/fake_openai.py``, instant
  answers, streaming mode on) on its own thread and event loop;
* the proxy service's model endpoint (``benchwright_proxy.app.build`` then
  ``ProxyRuntime.serve_http``: the same uvicorn app ``benchwright up`` serves,
  with its bindings store in a temporary data directory) on a free port, on a
  second thread and event loop;

binds a run to the fake through the runtime (``ProxyRuntime.bind``, what
``AttachModel`` does, minus the reply on the bus) and, from the main thread,
makes N sequential chat completions each way over two keep-alive
``httpx.AsyncClient``s, interleaved call by call (direct, proxy, direct, ...)
so that both see the same machine: (a) straight to the fake, (b) through the
proxy with the run's key. After a warm-up it reports median, p95 and p99 of
each, and the added latency as the difference of the medians (and the median
of the per-pair differences). A second, smaller series does the same for
streamed calls (``"stream": true``): time to the first event and to the end.

Exits 1 when the median added latency of a plain call is 2 ms or more.

    .venv/bin/python bench/proxy_latency.py                  # 2,000 calls each way, ~15 s
    .venv/bin/python bench/proxy_latency.py --calls 500 --stream-calls 0 --json

Not a pytest test; it asserts nothing beyond "every call answered 200 and the
proxy metered each one".
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
import threading
import time
import uuid
from collections.abc import Coroutine
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import httpx

from benchwright_proxy.app import ProxyService, build
from benchwright_shared.contracts import SutRef
from benchwright_shared.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
FAKE_SERVER = ROOT / "tests/support/fake_openai.py"
TARGET_MS = 2.0
T = TypeVar("T")

# About the size of a GSM8K prompt as the builtin scorer sends it.
PROMPT = (
    "Solve the problem. End your reply with 'The answer is <number>.'\n\n"
    "Question: Janet's ducks lay 16 eggs per day. She eats three for breakfast every "
    "morning and bakes muffins for her friends every day with four. She sells the "
    "remainder at the farmers' market daily for $2 per fresh duck egg. How much in "
    "dollars does she make every day at the farmers' market?\nAnswer:"
)
BODY: dict[str, Any] = {
    "model": "fake",
    "messages": [{"role": "user", "content": PROMPT}],
    "max_tokens": 256,
    "temperature": 0,
    "stop": ["\nQuestion:"],
}


def load_file(name: str, path: Path) -> ModuleType:
    """Import a module from a file without growing ``sys.path`` (see bench/throughput.py)."""
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def stats_ms(values_s: list[float]) -> dict[str, float]:
    """median, p95, p99 (nearest rank), mean and max, in milliseconds."""
    if not values_s:
        return {"n": 0, "median": math.nan, "p95": math.nan, "p99": math.nan}
    ordered = sorted(v * 1000 for v in values_s)

    def rank(q: float) -> float:
        return ordered[max(1, math.ceil(q * len(ordered))) - 1]

    mid = len(ordered) // 2
    median = ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2
    return {
        "n": len(ordered),
        "median": round(median, 3),
        "p95": round(rank(0.95), 3),
        "p99": round(rank(0.99), 3),
        "mean": round(sum(ordered) / len(ordered), 3),
        "max": round(ordered[-1], 3),
    }


class ProxyThread:
    """The proxy's endpoint on its own thread and event loop, as beside a sandbox."""

    def __init__(self, data_dir: Path) -> None:
        self.settings = Settings(data_dir=data_dir, proxy_port=0, nats_url=None, database_url=None)
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="proxy", daemon=True)
        self.thread.start()
        self.service: ProxyService = self.run(self._build())
        self.url = self.run(self.service.runtime.serve_http())

    async def _build(self) -> ProxyService:
        return build(self.settings)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def bind(self, sut: SutRef) -> str:
        _, key = self.run(self.service.runtime.bind(str(uuid.uuid4()), "acct_bench", sut))
        return key

    def metered_calls(self) -> tuple[int, int]:
        """(calls, failed) the proxy metered since the last look."""

        async def drain() -> tuple[int, int]:
            usage = self.service.runtime.meter.drain()
            return sum(u.calls for u in usage), sum(u.failed_calls for u in usage)

        return self.run(drain())

    def stop(self) -> None:
        self.run(self.service.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


async def plain_call(client: httpx.AsyncClient) -> float:
    started = time.perf_counter()
    response = await client.post("/chat/completions", json=BODY)
    elapsed = time.perf_counter() - started
    if response.status_code != 200 or not response.json()["choices"][0]["message"]["content"]:
        raise RuntimeError(f"call failed: {response.status_code} {response.text[:200]}")
    return elapsed


async def streamed_call(client: httpx.AsyncClient) -> tuple[float, float]:
    """(seconds to the first event, seconds to the end of the stream)."""
    started = time.perf_counter()
    first = math.nan
    async with client.stream("POST", "/chat/completions", json={**BODY, "stream": True}) as r:
        if r.status_code != 200:
            raise RuntimeError(f"stream failed: {r.status_code}")
        body = b""
        async for data in r.aiter_raw():
            if math.isnan(first):
                first = time.perf_counter() - started
            body += data
    total = time.perf_counter() - started
    if not body.endswith(b"data: [DONE]\n\n"):
        raise RuntimeError(f"stream did not end with [DONE]: {body[-200:]!r}")
    return first, total


async def measure(
    direct_url: str, proxy_url: str, key: str, calls: int, stream_calls: int, warmup: int
) -> dict[str, list[float]]:
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    series: dict[str, list[float]] = {
        name: []
        for name in (
            "direct",
            "proxy",
            "stream_first_direct",
            "stream_first_proxy",
            "stream_total_direct",
            "stream_total_proxy",
        )
    }
    async with (
        httpx.AsyncClient(base_url=direct_url, limits=limits, timeout=30) as direct,
        httpx.AsyncClient(
            base_url=proxy_url + "/v1",
            limits=limits,
            timeout=30,
            headers={"Authorization": f"Bearer {key}"},
        ) as proxied,
    ):
        for _ in range(warmup):
            await plain_call(direct)
            await plain_call(proxied)
        for i in range(calls):
            # Alternate which goes first, so that neither always follows the other.
            pair = (direct, proxied) if i % 2 == 0 else (proxied, direct)
            for client in pair:
                series["direct" if client is direct else "proxy"].append(await plain_call(client))
        for i in range(stream_calls):
            pair = (direct, proxied) if i % 2 == 0 else (proxied, direct)
            for client in pair:
                name = "direct" if client is direct else "proxy"
                first, total = await streamed_call(client)
                series[f"stream_first_{name}"].append(first)
                series[f"stream_total_{name}"].append(total)
    return series


def added(proxy: list[float], direct: list[float]) -> dict[str, float]:
    p, d = stats_ms(proxy), stats_ms(direct)
    pairs = stats_ms([a - b for a, b in zip(proxy, direct, strict=True)])
    return {
        "median_ms": round(p["median"] - d["median"], 3),
        "p95_ms": round(p["p95"] - d["p95"], 3),
        "median_of_pair_differences_ms": pairs["median"],
    }


def main_async(args: argparse.Namespace) -> dict[str, Any]:
    load_at_start = round(os.getloadavg()[0], 2)
    fake_module = load_file("bw_fake_openai", FAKE_SERVER)
    fake = fake_module.FakeOpenAIServer(streaming=True).start()
    data_dir = Path(tempfile.mkdtemp(prefix="bw-bench-proxy-"))
    proxy: ProxyThread | None = None
    try:
        proxy = ProxyThread(data_dir)
        key = proxy.bind(SutRef(model="fake", provider="openai_compatible", api_base=fake.base_url))
        series = asyncio.run(
            measure(fake.base_url, proxy.url, key, args.calls, args.stream_calls, args.warmup)
        )
        metered, failed = proxy.metered_calls()
    finally:
        if proxy is not None:
            proxy.stop()
        fake.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    expected = args.warmup + args.calls + args.stream_calls
    if metered != expected or failed:
        raise RuntimeError(f"the proxy metered {metered} calls ({failed} failed), not {expected}")
    plain_added = added(series["proxy"], series["direct"])
    result: dict[str, Any] = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "loadavg_1m_at_start": load_at_start,
            "loadavg_1m_at_end": round(os.getloadavg()[0], 2),
        },
        "calls": args.calls,
        "warmup": args.warmup,
        "direct_ms": stats_ms(series["direct"]),
        "proxy_ms": stats_ms(series["proxy"]),
        "added": plain_added,
        "target_ms": TARGET_MS,
        "meets_target": plain_added["median_ms"] < TARGET_MS,
        "metered_calls": metered,
    }
    if args.stream_calls:
        result["stream"] = {
            "calls": args.stream_calls,
            "first_event_direct_ms": stats_ms(series["stream_first_direct"]),
            "first_event_proxy_ms": stats_ms(series["stream_first_proxy"]),
            "total_direct_ms": stats_ms(series["stream_total_direct"]),
            "total_proxy_ms": stats_ms(series["stream_total_proxy"]),
            "added_first_event": added(series["stream_first_proxy"], series["stream_first_direct"]),
            "added_total": added(series["stream_total_proxy"], series["stream_total_direct"]),
        }
    return result


def print_table(result: dict[str, Any]) -> None:
    m = result["machine"]
    print(
        f"model proxy latency: {result['calls']} sequential keep-alive calls each way "
        f"(+{result['warmup']} warm-up), {m['cpus']} CPUs, load {m['loadavg_1m_at_start']} "
        f"-> {m['loadavg_1m_at_end']}, {result['date']}"
    )
    print(f"{'ms':44} {'median':>8} {'p95':>8} {'p99':>8} {'mean':>8}")

    def row(name: str, st: dict[str, float]) -> None:
        print(
            f"{name:44} {st['median']:>8.3f} {st['p95']:>8.3f} {st['p99']:>8.3f} {st['mean']:>8.3f}"
        )

    row("(a) direct to the fake", result["direct_ms"])
    row("(b) through the proxy", result["proxy_ms"])
    a = result["added"]
    print(
        f"added by the proxy: median {a['median_ms']:.3f} ms, p95 {a['p95_ms']:.3f} ms "
        f"(median of per-pair differences {a['median_of_pair_differences_ms']:.3f} ms)"
    )
    if "stream" in result:
        s = result["stream"]
        print(f"streamed calls ({s['calls']} each way), 9 events per answer:")
        row("  first event, direct", s["first_event_direct_ms"])
        row("  first event, through the proxy", s["first_event_proxy_ms"])
        row("  whole stream, direct", s["total_direct_ms"])
        row("  whole stream, through the proxy", s["total_proxy_ms"])
        print(
            f"  added: first event {s['added_first_event']['median_ms']:.3f} ms, "
            f"whole stream {s['added_total']['median_ms']:.3f} ms (medians)"
        )
    verdict = "MEETS" if result["meets_target"] else "MISSES"
    print(
        f"{verdict} the target: median added {a['median_ms']:.3f} ms "
        f"(target < {result['target_ms']:.1f} ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls each way (default 2000)")
    parser.add_argument(
        "--stream-calls", type=int, default=500, help="streamed calls each way (default 500)"
    )
    parser.add_argument("--warmup", type=int, default=200, help="warm-up calls (default 200)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    if args.calls < 1 or args.stream_calls < 0 or args.warmup < 0:
        parser.error("--calls must be at least 1, --stream-calls and --warmup at least 0")
    logging.basicConfig(level=os.environ.get("BW_LOG_LEVEL", "WARNING"))
    result = main_async(args)
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print_table(result)
    if not result["meets_target"]:
        print(
            f"FAIL: median added latency {result['added']['median_ms']:.3f} ms "
            f">= {TARGET_MS:.1f} ms",
            file=sys.stderr,
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
