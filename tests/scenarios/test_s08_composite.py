"""Guide section 8, "Composite benchmarks across multiple sources": harvest failures
from source sweeps (8.2), scaffold a composite benchmark (8.3), register the
dispatching scorer exactly as printed (8.4), run it across the four kinds and break the
result down per kind (8.5), publish (8.6).

Adaptations. Models: every model is a fake OpenAI-compatible server under the guide's
name. 8.2's source panels are two models per source that answer nothing useful, on the
first two tasks of each source (``metadata["limit"] = 2``), so every task they ran is
universally hard. The built-in catalog has no MMLU Pro (no installed package ships its
rows), so that source has no panel: 8.2's harvest, run as printed, skips it the way its
code skips any source without panel runs. 8.5's qwen/qwen3-235b-a22b-thinking answers
each kind through the channel the scorer reads (a letter, ``tool_calls``, a number,
fenced code): right on the first task of each kind, wrong on the second. The
composite's rows (8.3 on) are built from the built-in catalog in 8.1's shape, two per
kind, so that 8.3-8.6 do not hinge on 8.2.
"""

import asyncio
import json
import re
import textwrap
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from benchwright import Benchwright
from benchwright_registry.catalog import builtin_catalog
from tests.scenarios.support import (
    RUN_TIMEOUT,
    Steps,
    bfcl_question_text,
    bfcl_reference_calls,
    catalog_rows,
    offthread,
    sut_of,
)
from tests.support.chat_oracle import ChatOracleServer, last_user_text

pytestmark = [pytest.mark.slow, pytest.mark.connected]

PER_KIND = 2
MODEL = "qwen/qwen3-235b-a22b-thinking"
SOURCE_PANEL = ["openai/gpt-4o-mini", "anthropic/claude-haiku-4-5"]
SWEEP_REQUESTS = {
    "MMLU Pro": "Run MMLU Pro (full) on ",
    "BFCL v4": "Run BFCL v4 parallel function calling on ",
    "GSM8K": "Run GSM8K on ",
    "HumanEval": "Run HumanEval on ",
}

# The built-in benchmarks: every source of the guide's but MMLU Pro.
CATALOG = {b.name for b in builtin_catalog()}
MISSING = [name for name in SWEEP_REQUESTS if name not in CATALOG]

SOURCES = [
    {"bm": "MMLU Pro", "kind": "multiple_choice"},
    {"bm": "BFCL v4", "kind": "function_call"},
    {"bm": "GSM8K", "kind": "math"},
    {"bm": "HumanEval", "kind": "code"},
]


def shape_input(kind: str, raw_input: Any) -> dict[str, Any]:
    """Normalize a source benchmark's input into the composite shape."""
    if kind == "multiple_choice":
        return {"kind": kind, "question": raw_input["question"], "choices": raw_input["choices"]}
    if kind == "function_call":
        return {
            "kind": kind,
            "question": raw_input["question"],
            "functions": raw_input["functions"],
        }
    if kind == "math":
        return {"kind": kind, "question": raw_input.get("question") or raw_input["problem"]}
    if kind == "code":
        return {"kind": kind, "prompt": raw_input["prompt"]}
    raise ValueError(kind)


def shape_expected(kind: str, raw_expected: Any, raw_input: Any) -> dict[str, Any]:
    if kind == "code":
        # HumanEval stores the test harness separately.
        return {"kind": kind, "test_code": raw_input["test"]}
    return {"kind": kind, "value": raw_expected}


# Section 8.4's scorer, exactly as the guide prints it.
CODE = textwrap.dedent('''
    import json, os, re, subprocess, tempfile, requests
    from bench_task import BenchTask

    def _chat(messages, **kwargs):
        """Single helper for every kind. Auth is injected server-side."""
        headers = {}
        key = os.environ.get("BW_MODEL_PROXY_KEY")
        if key: headers["Authorization"] = f"Bearer {key}"
        r = requests.post(
            f"{os.environ['BW_MODEL_PROXY_URL']}/v1/chat/completions",
            headers=headers,
            json={"model": os.environ["BW_MODEL_MODEL"],
                  "messages": messages, **kwargs},
            timeout=180,
        )
        r.raise_for_status()
        return r.json()["choices"][0]["message"]

    class Task(BenchTask):
        def extract(self, path, index):
            with open(path) as f:
                rows = [json.loads(line) for line in f]
            row = rows[index]
            return {
                "task_id":  row["task_id"],
                "input":    row["input"],
                "expected": row["expected"],
            }

        # ── solve: dispatch on kind ──────────────────────────────
        def solve(self, index, input):
            kind = input["kind"]
            if kind == "multiple_choice": return self._solve_mc(input)
            if kind == "function_call":   return self._solve_fc(input)
            if kind == "math":            return self._solve_math(input)
            if kind == "code":            return self._solve_code(input)
            raise ValueError(f"unknown kind: {kind}")

        def _solve_mc(self, inp):
            prompt = inp["question"] + "\\n\\n"
            for i, c in enumerate(inp["choices"]):
                prompt += f"{chr(65 + i)}. {c}\\n"
            prompt += "\\nAnswer with the single letter."
            msg = _chat([{"role": "user", "content": prompt}])
            m = re.search(r"\\b([A-E])\\b", msg.get("content", ""))
            return m.group(1) if m else ""

        def _solve_fc(self, inp):
            msg = _chat(
                [{"role": "user", "content": inp["question"]}],
                tools=inp["functions"], tool_choice="auto",
            )
            calls = msg.get("tool_calls", [])
            return json.dumps([
                {"name": c["function"]["name"],
                 "args": json.loads(c["function"]["arguments"])}
                for c in calls
            ])

        def _solve_math(self, inp):
            prompt = inp["question"] + "\\n\\nGive only the final numeric answer."
            msg = _chat([{"role": "user", "content": prompt}])
            text = (msg.get("content") or "").strip()
            m = re.search(r"-?\\d+(?:\\.\\d+)?", text.replace(",", ""))
            return m.group(0) if m else text

        def _solve_code(self, inp):
            msg = _chat([{"role": "user", "content": inp["prompt"]}])
            return msg.get("content", "")

        # ── score: dispatch on kind too ──────────────────────────
        def score(self, index, output, expected):
            kind = expected["kind"]
            if kind == "multiple_choice": return self._score_mc(output, expected)
            if kind == "function_call":   return self._score_fc(output, expected)
            if kind == "math":            return self._score_math(output, expected)
            if kind == "code":            return self._score_code(output, expected)
            return 0.0

        def _score_mc(self, output, expected):
            return 1.0 if output.strip().upper() == expected["value"].strip().upper() else 0.0

        def _score_fc(self, output, expected):
            try:
                got  = {(c["name"], json.dumps(c["args"], sort_keys=True))
                        for c in json.loads(output)}
                want = {(c["name"], json.dumps(c["args"], sort_keys=True))
                        for c in expected["value"]}
                return 1.0 if got == want else 0.0
            except Exception:
                return 0.0

        def _score_math(self, output, expected):
            try:
                return 1.0 if abs(float(output) - float(expected["value"])) < 1e-6 else 0.0
            except ValueError:
                return 0.0

        def _score_code(self, output, expected):
            # Strip fenced code blocks if the model wrapped them.
            m = re.search(r"```(?:python)?\\n(.+?)```", output, re.S)
            candidate = m.group(1) if m else output
            with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
                f.write(candidate + "\\n\\n" + expected["test_code"])
                path = f.name
            try:
                subprocess.run(["python3", path], check=True, timeout=30,
                               capture_output=True)
                return 1.0
            except Exception:
                return 0.0
''').strip()


# -- the composite's rows, in 8.1's shape ------------------------------------------------------
def composite_tasks() -> list[dict[str, Any]]:
    """Two rows per kind from the built-in catalog, shaped as section 8.1 documents."""
    tasks = []
    for row in catalog_rows("MMLU", "all")[:PER_KIND]:
        tasks.append(
            {
                "task_id": f"MMLU Pro::{row['task_id']}",
                "input": {
                    "kind": "multiple_choice",
                    "question": row["input"]["question"],
                    "choices": row["input"]["choices"],
                },
                "expected": {"kind": "multiple_choice", "value": row["expected"]},
                "source": {"benchmark": "MMLU", "subset": "all", "task_id": row["task_id"]},
            }
        )
    for row in catalog_rows("BFCL v4", "parallel")[:PER_KIND]:
        calls = bfcl_reference_calls(row["expected"])
        tasks.append(
            {
                "task_id": f"BFCL v4::{row['task_id']}",
                "input": {
                    "kind": "function_call",
                    "question": bfcl_question_text(row),
                    "functions": [
                        {"type": "function", "function": f} for f in row["input"]["functions"]
                    ],
                },
                "expected": {
                    "kind": "function_call",
                    "value": [{"name": c["name"], "args": c["arguments"]} for c in calls],
                },
                "source": {"benchmark": "BFCL", "subset": "parallel", "task_id": row["task_id"]},
            }
        )
    for row in catalog_rows("GSM8K", "test")[:PER_KIND]:
        tasks.append(
            {
                "task_id": f"GSM8K::{row['task_id']}",
                "input": {"kind": "math", "question": row["input"]["question"]},
                "expected": {"kind": "math", "value": row["expected"]},
                "source": {"benchmark": "GSM8K", "subset": "test", "task_id": row["task_id"]},
            }
        )
    for row in catalog_rows("HumanEval", "test")[:PER_KIND]:
        entry = row["input"]["entry_point"]
        tasks.append(
            {
                "task_id": f"HumanEval::{row['task_id']}",
                "input": {"kind": "code", "prompt": row["input"]["prompt"]},
                "expected": {
                    "kind": "code",
                    "test_code": row["input"]["test"] + f"\ncheck({entry})\n",
                },
                "source": {"benchmark": "HumanEval", "subset": "test", "task_id": row["task_id"]},
            }
        )
    return tasks


def composite_model(tasks: list[dict[str, Any]]) -> ChatOracleServer:
    """Right on the first row of each kind, wrong on the second, through the channel
    the dispatching scorer reads for that kind."""
    right: set[str] = set()
    seen: set[str] = set()
    for t in tasks:
        if t["input"]["kind"] not in seen:
            seen.add(t["input"]["kind"])
            right.add(t["task_id"])
    solutions = {
        r["input"]["prompt"]: r["input"]["prompt"] + r["expected"]["canonical_solution"]
        for r in catalog_rows("HumanEval", "test")[:PER_KIND]
    }

    def reply(body: dict[str, Any]) -> dict[str, Any]:
        prompt = last_user_text(body)
        for t in tasks:
            inp, want, correct = t["input"], t["expected"], t["task_id"] in right
            kind = inp["kind"]
            if kind == "code" and prompt == inp["prompt"]:
                code = solutions[inp["prompt"]] if correct else "def nothing():\n    pass\n"
                return {"content": f"Here it is:\n```python\n{code}```"}
            if kind == "code" or inp["question"] not in prompt:
                continue
            if kind == "multiple_choice":
                letter = want["value"] if correct else ("A" if want["value"] != "A" else "B")
                return {"content": f"{letter}"}
            if kind == "function_call":
                calls = [(c["name"], dict(c["args"])) for c in want["value"]]
                return {"tool_calls": calls if correct else calls[:1]}
            if kind == "math":
                value = want["value"] if correct else str(int(float(want["value"])) + 1)
                return {"content": value}
        return {"content": "I do not know."}

    return ChatOracleServer(reply)


@pytest.fixture(scope="module")
def gauntlet_rows() -> list[dict[str, Any]]:
    return composite_tasks()


@pytest.fixture(scope="module")
def thinking_model(gauntlet_rows: list[dict[str, Any]]) -> Iterator[ChatOracleServer]:
    server = composite_model(gauntlet_rows).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def clueless() -> Iterator[ChatOracleServer]:
    server = ChatOracleServer(lambda body: {"content": "I am not sure."}).start()
    yield server
    server.stop()


# -- 8.2 -------------------------------------------------------------------------------------------
def run_source_panels(bw: Benchwright, clueless: ChatOracleServer, workdir: Path) -> list[str]:
    """The §7 pattern against each source the catalog has: an anchor and a replay, ids in
    a manifest."""
    ids = []
    for source, request in SWEEP_REQUESTS.items():
        if source not in CATALOG:
            continue
        anchor = bw.runs.launch(
            request=request + SOURCE_PANEL[0],
            sut=sut_of(clueless, SOURCE_PANEL[0]),
            metadata={"sweep": "gauntlet-2026-04", "limit": PER_KIND},
        )
        bw.runs.wait(anchor.id, timeout=RUN_TIMEOUT)
        replay = bw.runs.launch(
            replay={"from_run": anchor.id}, sut=sut_of(clueless, SOURCE_PANEL[1])
        )
        bw.runs.wait(replay.id, timeout=RUN_TIMEOUT)
        ids += [anchor.id, replay.id]
    with open(workdir / "sweep-manifest.json", "w") as f:
        json.dump({"sweep": "gauntlet-2026-04", "runs": ids}, f)
    return ids


def harvest(bw: Benchwright, workdir: Path) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Section 8.2's harvest, as printed (the manifest read from ``workdir``)."""
    gauntlet_tasks = []
    per_source = {}

    with open(workdir / "sweep-manifest.json") as f:
        manifest = json.load(f)  # run ids per §7

    for src in SOURCES:
        # Panel discovery: run ids from the sweep manifest, narrowed to
        # this source benchmark. (Run ids are the correlation handle;
        # see the §16 note on metadata.)
        panel = [
            r
            for rid in manifest["runs"]
            for r in [bw.runs.get(rid)]
            if r.status == "ok" and r.benchmark_name == src["bm"]
        ]
        if not panel:
            print(f"  {src['bm']:<16} skipped (no panel runs)")
            continue

        # Bucket failures across the panel. A task is universally hard
        # when every model failed it.
        fail_counts: Counter[str] = Counter()
        payloads = {}
        subset_id = panel[0].get("subset_id")  # same subset across the panel
        for r in panel:
            tl = bw.runs.tasks(r.id, passed=False)
            for t in tl.data:
                fail_counts[t.task_id] += 1
                if t.task_id not in payloads:
                    p = tl.payload(t.id)
                    payloads[t.task_id] = {"input": p.input, "expected": p.expected}

        hard = [tid for tid, n in fail_counts.items() if n == len(panel)]
        per_source[src["bm"]] = len(hard)

        for tid in hard:
            p = payloads[tid]
            gauntlet_tasks.append(
                {
                    "task_id": f"{src['bm']}::{tid}",
                    "input": shape_input(src["kind"], p["input"]),
                    "expected": shape_expected(src["kind"], p["expected"], p["input"]),
                    "source": {
                        "benchmark": src["bm"],
                        "subset": subset_id,
                        "task_id": tid,
                    },
                }
            )
        print(f"  {src['bm']:<16} {len(hard)} universally-hard")

    print(f"\ntotal: {len(gauntlet_tasks)} tasks, {len(per_source)} source benchmarks")
    return gauntlet_tasks, per_source


async def test_8_2_source_panels(
    bw: Benchwright, steps: Steps, clueless: ChatOracleServer, workdir: Path
) -> None:
    """The source sweeps 8.2 assumes: each source's panel, ids kept in a manifest."""
    ids = await offthread(run_source_panels, bw, clueless, workdir)
    runs = [await offthread(bw.runs.get, rid) for rid in ids]
    assert [r.status for r in runs] == ["ok"] * len(ids), [(r.id, r.error) for r in runs]
    for r in runs:
        assert (await offthread(bw.runs.tasks, r.id)).summary.passed == 0
    steps["source_runs"] = runs


async def test_8_2_harvest_failures_across_source_sweeps(
    bw: Benchwright, steps: Steps, workdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    steps.need("source_runs")
    gauntlet_tasks, per_source = await offthread(harvest, bw, workdir)
    printed = capsys.readouterr().out
    print(printed)
    assert MISSING == ["MMLU Pro"]
    assert f"  {'MMLU Pro':<16} skipped (no panel runs)" in printed
    harvested = [src for src in SOURCES if src["bm"] in CATALOG]
    # Every source's panel failed every task it ran: all of them are universally hard.
    assert per_source == {src["bm"]: PER_KIND for src in harvested}
    assert len(gauntlet_tasks) == PER_KIND * len(harvested)
    kinds = Counter(t["input"]["kind"] for t in gauntlet_tasks)
    assert kinds == {src["kind"]: PER_KIND for src in harvested}
    # The rows are in 8.1's shape, read from the sources' own rows.
    by_kind = {t["input"]["kind"]: t for t in gauntlet_tasks}
    calls = by_kind["function_call"]
    assert isinstance(calls["input"]["question"], str) and calls["input"]["functions"]
    assert all("parameters" in f for f in calls["input"]["functions"])
    assert isinstance(calls["expected"]["value"], list) and calls["expected"]["value"]
    code = by_kind["code"]
    assert code["task_id"].startswith("HumanEval::HumanEval/")
    assert "def " in code["input"]["prompt"]
    assert "def check(candidate)" in code["expected"]["test_code"]
    math = [t["expected"]["value"] for t in gauntlet_tasks if t["input"]["kind"] == "math"]
    assert sorted(math) == sorted(r["expected"] for r in catalog_rows("GSM8K", "test")[:PER_KIND])
    for task in gauntlet_tasks:
        assert task["source"]["subset"] and task["source"]["benchmark"] in CATALOG


# -- 8.3 - 8.6 ------------------------------------------------------------------------------------
async def test_8_3_scaffold_the_composite(
    bw: Benchwright, steps: Steps, gauntlet_rows: list[dict[str, Any]]
) -> None:
    per_source = dict(Counter(t["task_id"].split("::", 1)[0] for t in gauntlet_rows))

    def scaffold() -> tuple[Any, Any]:
        bm = bw.benchmarks.create(
            name="Reasoning Gauntlet",
            description=(
                "Universally-hard tasks distilled from MMLU Pro, BFCL v4, "
                "GSM8K, and HumanEval. A single scorer dispatches on task kind "
                "so the aggregate pass rate is a cross-domain capability index."
            ),
            category="composite",
            tags=["curated", "hard", "multi-domain", "gauntlet"],
        )

        sub = bw.benchmarks.subsets.create(
            benchmark=bm.id,
            slug="v1-2026-04",
            name="Gauntlet v1 (April 2026)",
            description=(
                f"{sum(per_source.values())} tasks across "
                f"{len(per_source)} source benchmarks: "
                + ", ".join(f"{k}({v})" for k, v in per_source.items())
            ),
            tasks=gauntlet_rows,
        )
        return bm, sub

    bm, sub = await offthread(scaffold)
    assert sub.task_count == len(gauntlet_rows) and not sub.rolling  # frozen
    assert "4 source benchmarks" in sub.description
    stored = list(await offthread(lambda: list(bw.registry.subsets.iter_tasks(sub.id))))
    assert [r["task_id"] for r in stored] == [t["task_id"] for t in gauntlet_rows]
    assert stored[0]["input"]["kind"] == "multiple_choice"
    steps.update(bm=bm, sub=sub)


async def test_8_4_the_dispatching_scorer(bw: Benchwright, steps: Steps) -> None:
    bm, sub = steps.need("bm", "sub")
    impl = await offthread(
        bw.impls.create,
        benchmark=bm.id,
        subset=sub.id,
        label="dispatching scorer v1",
        language="python",
        code=CODE,
        description="Routes solve + score on task.kind: MC, function-call, math, code.",
    )
    assert impl.id.startswith(f"{bm.id}:") and impl.label == "dispatching scorer v1"
    assert await offthread(bw.registry.impls.code, impl.id) == CODE
    steps["impl"] = impl


async def test_8_5_run_it_and_break_down_per_kind(
    bw: Benchwright, steps: Steps, thinking_model: ChatOracleServer
) -> None:
    bm, sub, impl = steps.need("bm", "sub", "impl")

    def run_and_break_down() -> tuple[Any, Any, dict[str, list[int]]]:
        # Pin and launch. Same single run, many domains.
        run = bw.runs.launch(
            benchmark=bm.id,
            subset=sub.id,
            impl=impl.id,
            sut=sut_of(thinking_model, MODEL),
            limits={"run": {"cost": 30.0}},
        )
        done = bw.runs.wait(run.id, timeout=RUN_TIMEOUT)
        assert done.status == "ok", (done.phase, done.halt_reason, done.error)

        # Overall score.
        t = bw.runs.tasks(run.id)
        print(f"aggregate: {t.summary.pass_rate:.1%}  ({t.summary.passed}/{t.summary.total})")

        # Per-kind breakdown: the namespaced task_id carries the source benchmark.
        kind_of = {s["bm"]: s["kind"] for s in SOURCES}
        by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # [passed, total]
        for row in t.data:
            kind = kind_of[row.task_id.split("::", 1)[0]]
            by_kind[kind][1] += 1
            if row.score >= 1.0:
                by_kind[kind][0] += 1

        print()
        for kind, (passed, total) in sorted(by_kind.items()):
            pct = passed / total if total else 0
            print(f"  {kind:<17} {pct:>6.1%}  {passed}/{total}")
        return bw.runs.get(run.id), t, dict(by_kind)

    run, t, by_kind = await offthread(run_and_break_down)
    assert run.status == "ok", (run.phase, run.halt_reason, run.error)
    assert run.impl_id == impl.id
    errors = [(r.task_id, r.error_type) for r in t.data if r.error_type]
    assert not errors, f"the dispatching scorer errored: {errors}"
    assert (t.summary.total, t.summary.passed) == (4 * PER_KIND, 4)
    assert by_kind == {src["kind"]: [1, PER_KIND] for src in SOURCES}
    steps["run"] = run


async def test_8_6_publish_and_the_leaderboard(bw: Benchwright, steps: Steps) -> None:
    """The guide: "The leaderboard at .../registry/{bm.id}/{sub.slug} surfaces the aggregate pass
    rate and the per-kind breakdown together"."""
    bm, sub, run = steps.need("bm", "sub", "run")
    await offthread(bw.runs.update, run.id, visibility="public")
    for _ in range(100):
        board = await offthread(bw.registry.subsets.leaderboard, sub.id)
        if board.data:
            break
        await asyncio.sleep(0.1)
    assert (await offthread(bw.registry.benchmarks.get, bm.id)).visibility == "public"
    assert [r.run_id for r in board.data] == [run.id]
    row = board.data[0]
    assert row.pass_rate == pytest.approx(0.5)
    breakdown = {k: v for k, v in row.model_dump().items() if re.search("kind|breakdown", k)}
    assert breakdown, f"no per-kind breakdown on the leaderboard row: {row.model_dump()}"
