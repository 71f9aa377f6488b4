"""The ``litellm`` Driver: an LLM with tools decides Find, Analyze and Atomize.

Each phase is one conversation. The model sees the phase's goal and the
run's context, and works through tools: it reads the catalog and the
dataset, writes files and runs commands in the work sandbox, scores sample
replies with a scorer it wrote, and ends the phase by calling the phase's
closing tool (or asks for the phase to restart, or for a person). Its words
are logged as ``AgentTextEvent``, its tool use as ``ToolCallEvent`` and
``ToolResultEvent``.

Its key is the orchestrator's own (``BW_DRIVER_API_KEY``); it never holds,
and has no tool that could reach, the model-under-test's credentials.
``BW_DRIVER_API_BASE`` points it at any OpenAI-compatible server directly;
otherwise LiteLLM routes ``<provider>://<model>`` (imported lazily, offline).
"""

import json
import os
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from benchwright_orchestrator.driver.base import (
    Analysis,
    DriverError,
    DriverTools,
    DriverUsage,
    RequestReview,
    Resolution,
    RestartPhase,
    RowSample,
    Scorer,
)
from benchwright_shared.money import dollars_to_micros
from benchwright_shared.settings import Settings

MAX_TURNS = 24
LITELLM_PREFIXES = {"openrouter": "openrouter", "together": "together_ai", "openai": "openai"}

SYSTEM = (
    "You are the Driver of one Benchwright benchmark run. You make the run's judgement "
    "calls with the tools you are given, one phase at a time, and end each phase by "
    "calling its closing tool. Be brief in prose. If the phase cannot succeed as things "
    "stand, call restart_phase with the reason; if only a person can decide, call "
    "request_human_review. You cannot reach the model under test or its credentials."
)

SCORER_CONTRACT = (
    "A scorer is task_impl.py defining `class Task(BenchTask)` (`from bench_task import "
    "BenchTask`; standard library only). Rows are JSON objects with task_id, input and "
    "expected. Implement `solve(self, index, input) -> str` (call the model with "
    "`self.complete(prompt, max_tokens=..., temperature=0)` or `self.chat(messages, ...)`) "
    "and `score(self, index, output, expected) -> float | dict` returning a score in [0, 1] "
    "(or a dict with 'score' and per-trial metadata such as 'parsed')."
)


def _tool(name: str, description: str, **properties: Any) -> dict[str, Any]:
    required = [k for k, v in properties.items() if not v.pop("optional", False)]
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


STR = {"type": "string"}
COMMON_TOOLS = [
    _tool(
        "restart_phase",
        "Start this phase over (at most two restarts per run).",
        reason=dict(STR),
    ),
    _tool(
        "request_human_review",
        "Park the run until a person answers your question.",
        reason=dict(STR),
    ),
]
DATA_TOOLS = [
    _tool(
        "read_rows",
        "Read dataset rows by index.",
        indices={"type": "array", "items": {"type": "integer"}},
    ),
    _tool(
        "run_command",
        "Run a command in the work sandbox (cwd holds tasks.jsonl).",
        argv={"type": "array", "items": {"type": "string"}},
    ),
]
PHASE_TOOLS: dict[str, list[dict[str, Any]]] = {
    "find": [
        _tool("list_catalog", "List the benchmarks and subsets that can be run."),
        _tool(
            "resolve_benchmark",
            "Close Find: the benchmark and subset the request means, how many tasks, and "
            "the model under test if the request names one.",
            benchmark_id=dict(STR),
            subset_id=dict(STR),
            scope={
                "type": "object",
                "description": "{kind: all|first_n|per_category, n: int}",
                "optional": True,
            },
            model={"type": "string", "optional": True},
            provider={"type": "string", "optional": True},
            substituted_for={
                "type": "string",
                "description": "the benchmark the request named, when the catalog lacks it "
                "and the request allows a substitute",
                "optional": True,
            },
        ),
    ],
    "analyze": [
        *DATA_TOOLS,
        _tool(
            "record_analysis",
            "Close Analyze: the dataset's kind (multiple_choice, math, function_call, code, "
            "exact_match, or another word), its schema and which fields matter.",
            kind=dict(STR),
            schema={"type": "object"},
            fields={"type": "object", "optional": True},
        ),
    ],
    "atomize": [
        *DATA_TOOLS,
        _tool("write_file", "Write a file in the work sandbox.", path=dict(STR), content=dict(STR)),
        _tool(
            "score_sample",
            "Score given model replies with a scorer file, without calling the model.",
            path=dict(STR),
            outputs={
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {"index": {"type": "integer"}, "output": dict(STR)},
                },
            },
        ),
        _tool(
            "submit_scorer",
            "Close Atomize with the scorer file you proved.",
            path=dict(STR),
            kind=dict(STR),
        ),
    ],
}


class LiteLLMDriver:
    name = "litellm"

    def __init__(
        self,
        model: str,
        settings: Settings,
        note: str | None = None,
        phase_models: Mapping[str, str] | None = None,
    ) -> None:
        self.model: str | None = model
        # A launch's ``phase_models``: another model for some of the phases.
        self.phase_models = dict(phase_models or {})
        self.note = note
        self.settings = settings
        self._usage = DriverUsage()
        self._files: dict[str, str] = {}

    def usage(self) -> DriverUsage:
        return self._usage

    def _count(self, usage: dict[str, Any] | None, micros: int) -> None:
        self._usage.calls += 1
        self._usage.prompt_tokens += int((usage or {}).get("prompt_tokens") or 0)
        self._usage.completion_tokens += int((usage or {}).get("completion_tokens") or 0)
        self._usage.cost_micros += micros

    # -- talking to the Driver's model ------------------------------------------------
    async def _complete(
        self, model: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        provider, _, name = model.partition("://")
        key = self.settings.driver_api_key
        body = {"messages": messages, "tools": tools, "temperature": 0}
        if self.settings.driver_api_base:
            async with httpx.AsyncClient(timeout=120) as http:
                response = await http.post(
                    self.settings.driver_api_base.rstrip("/") + "/chat/completions",
                    json={"model": name or provider, **body},
                    headers={"Authorization": f"Bearer {key}"} if key else {},
                )
            if response.status_code >= 400:
                raise DriverError("driver_model_error", response.text[:500])
            reply: dict[str, Any] = response.json()
            # A self-hosted endpoint has no price list: tokens are counted, cost is zero.
            self._count(reply.get("usage"), 0)
            return reply
        os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        route = f"{LITELLM_PREFIXES.get(provider, provider)}/{name}"
        try:
            result = await litellm.acompletion(model=route, api_key=key, num_retries=2, **body)
        except Exception as exc:
            raise DriverError("driver_model_error", f"{type(exc).__name__}: {exc}"[:500]) from None
        dumped: dict[str, Any] = result.model_dump()
        try:
            prompt, completion = litellm.cost_per_token(
                model=route,
                prompt_tokens=result.usage.prompt_tokens,
                completion_tokens=result.usage.completion_tokens,
            )
            micros = dollars_to_micros(prompt + completion)
        except Exception:
            micros = 0  # a model without a known price: tokens still count
        self._count(dumped.get("usage"), micros)
        return dumped

    async def _converse(
        self,
        phase: str,
        task: str,
        tools: DriverTools,
        close: Callable[[str, dict[str, Any]], Awaitable[Any]],
    ) -> Any:
        """Run one phase's conversation until its closing tool answers."""
        specs = PHASE_TOOLS[phase] + COMMON_TOOLS
        closing = specs[len(PHASE_TOOLS[phase]) - 1]["function"]["name"]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": task},
        ]
        for _ in range(MAX_TURNS):
            reply = await self._complete(
                self.phase_models.get(phase, self.model or ""), messages, specs
            )
            message = reply["choices"][0]["message"]
            messages.append(
                {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
            )
            if message.get("content"):
                tools.say(str(message["content"]))
            calls = message.get("tool_calls") or []
            if not calls:
                messages.append(
                    {"role": "user", "content": f"Use the tools; end the phase with {closing}."}
                )
                continue
            for call in calls:
                name = call["function"]["name"]
                try:
                    arguments = json.loads(call["function"].get("arguments") or "{}")
                except json.JSONDecodeError:
                    arguments = {}
                if name in ("restart_phase", "request_human_review"):
                    reason = str(arguments.get("reason") or "the Driver asked")
                    await tools.log_call(name, arguments, reason)
                    if name == "restart_phase":
                        raise RestartPhase(reason)
                    raise RequestReview(reason)
                if name == closing:
                    result = await close(name, arguments)
                    accepted = result is not None
                    answer = "accepted" if accepted else "not accepted: check the arguments"
                    await tools.log_call(name, arguments, answer, is_error=not accepted)
                    if accepted:
                        return result
                else:
                    answer = await self._use(name, arguments, tools)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": answer})
        raise DriverError("driver_gave_up", f"{phase} did not close within {MAX_TURNS} turns")

    async def _use(self, name: str, arguments: dict[str, Any], tools: DriverTools) -> str:
        """Carry out one working tool call; errors go back to the model as text."""
        try:
            if name == "list_catalog":
                listing = await tools.list_catalog()
                return json.dumps(
                    [
                        {
                            "benchmark_id": b.benchmark_id,
                            "name": b.name,
                            "aliases": b.aliases,
                            "subsets": [
                                {"subset_id": s.subset_id, "slug": s.slug, "tasks": s.task_count}
                                for s in b.subsets
                            ],
                        }
                        for b in listing.benchmarks
                    ]
                )
            if name == "read_rows":
                rows = await tools.read_rows([int(i) for i in arguments.get("indices", [])][:20])
                return json.dumps(rows)[:20_000]
            if name == "run_command":
                return json.dumps(await tools.run_command([str(a) for a in arguments["argv"]]))
            if name == "write_file":
                path, content = str(arguments["path"]), str(arguments["content"])
                await tools.write_file(path, content)
                self._files[path] = content
                return f"wrote {path}"
            if name == "score_sample":
                code = self._files.get(str(arguments.get("path", "task_impl.py")))
                if code is None:
                    return "write the scorer with write_file first"
                outputs = [(int(o["index"]), str(o["output"])) for o in arguments["outputs"]]
                return json.dumps(await tools.score_outputs(code, outputs))
        except (KeyError, TypeError, ValueError) as exc:
            return f"bad arguments for {name}: {exc}"
        except Exception as exc:  # a failed tool is information for the Driver, not a crash
            return f"{name} failed: {exc}"
        return f"unknown tool {name}"

    # -- the phases -------------------------------------------------------------------
    async def find(self, request: str, tools: DriverTools) -> Resolution:
        listing = await tools.list_catalog()

        async def close(_: str, a: dict[str, Any]) -> Resolution | None:
            for bench in listing.benchmarks:
                if bench.benchmark_id != a.get("benchmark_id"):
                    continue
                for subset in bench.subsets:
                    if a.get("subset_id") in (subset.subset_id, subset.slug):
                        model, provider = a.get("model"), a.get("provider")
                        return Resolution(
                            benchmark_id=bench.benchmark_id,
                            benchmark_name=bench.name,
                            subset_id=subset.subset_id,
                            subset_slug=subset.slug,
                            scope=dict(a.get("scope") or {"kind": "all"}),
                            sut={"model": model, "provider": provider}
                            if model and provider
                            else None,
                            notes=[f"the Driver resolved {request!r}"],
                            substituted_for=a.get("substituted_for") or None,
                        )
            return None

        task = (
            f"Phase Find. The request: {request!r}. Find the benchmark and subset it means "
            "in the catalog, the scope (all tasks, the first n, or n per category) and the "
            "model under test if named, then call resolve_benchmark. Never run another "
            "benchmark than the one named (MMLU is not MMLU Pro): if the catalog lacks it, "
            "call request_human_review saying so and naming the nearest ones, unless the "
            "request allows a substitute; then pass what it named as substituted_for."
        )
        found: Resolution = await self._converse("find", task, tools, close)
        return found

    async def analyze(self, sample: RowSample, tools: DriverTools) -> Analysis:
        async def close(_: str, a: dict[str, Any]) -> Analysis | None:
            if not a.get("kind") or not isinstance(a.get("schema"), dict):
                return None
            kind = str(a["kind"])
            return Analysis(
                kind=kind,
                schema=dict(a["schema"]),
                fields=dict(a.get("fields") or {}),
                candidates=[kind],
                evidence=["the Driver's analysis"],
            )

        task = (
            f"Phase Analyze. The dataset has {sample.total} rows. Sample rows "
            f"(indices {sample.indices}):\n{json.dumps(sample.rows)[:12_000]}\n"
            "Decide its kind and schema, then call record_analysis."
        )
        found: Analysis = await self._converse("analyze", task, tools, close)
        return found

    async def atomize(
        self,
        analysis: Analysis,
        sample: RowSample,
        *,
        attempt: int,
        guidance: list[str],
        tools: DriverTools,
    ) -> Scorer:
        async def close(_: str, a: dict[str, Any]) -> Scorer | None:
            code = self._files.get(str(a.get("path", "task_impl.py")))
            if code is None:
                return None
            return Scorer(kind=str(a.get("kind") or analysis.kind), code=code, check={})

        notes = "\n".join(f"- {g}" for g in guidance) or "(none)"
        task = (
            f"Phase Atomize, attempt {attempt}. Write task_impl.py for this {analysis.kind} "
            f"dataset (schema {json.dumps(analysis.schema)}).\n{SCORER_CONTRACT}\n"
            f"Sample rows (indices {sample.indices}):\n{json.dumps(sample.rows)[:8_000]}\n"
            f"Guidance from people:\n{notes}\n"
            "Prove it with score_sample on reference answers before submit_scorer."
        )
        found: Scorer = await self._converse("atomize", task, tools, close)
        return found
