"""A run as an Inspect AI ``.eval`` log, written a page of samples at a time.

An ``.eval`` file is a zip of JSON members: ``samples/<id>_epoch_<n>.json`` (one
``EvalSample`` each), ``_journal/summaries/<n>.json`` (a batch of sample summaries,
what the viewer lists) and ``header.json`` (the log without its samples: spec,
results, stats). Inspect's own pydantic models make every member, so what its
reader (``inspect_ai.log.read_eval_log``) and ``inspect view`` open is what they
would have written; only the zip is ours, because it streams: members are written
as each page of tasks arrives, and their bytes leave at once (a zip on an
unseekable sink carries its sizes after each member, and the central directory at
the end).

Members are DEFLATE-compressed: the stdlib writes them, and Inspect reads them
(it writes zstd itself, which only a monkey-patched ``zipfile`` can).

A Benchwright task becomes one sample per trial (epoch = trial + 1) with two
scores: ``pass`` (``C``/``I``, what accuracy counts) and ``score`` (the scorer's
value in [0, 1]). An errored trial has no scores and an ``error``, as in Inspect.

An agent's trial (``SampleSource.conversation``, its latest attempt) becomes the
conversation the model had: the system prompt, the instruction, each turn's
assistant message with its ``tool_calls`` and a ``tool`` message per result, and
a ``ModelEvent`` per turn and a ``ToolEvent`` per call, as Inspect records its own
agents (so ``inspect view`` shows the transcript). The events hold the texts as
the run's log does, each cut at 8,192 characters.

Importing Inspect takes seconds: the gateway imports this module on the first
``inspect`` export only.
"""

import json
import zipfile
from collections.abc import AsyncIterator
from typing import Any, Literal

from inspect_ai.event import Event, ModelEvent, ToolEvent
from inspect_ai.log import (
    EvalConfig,
    EvalDataset,
    EvalError,
    EvalLog,
    EvalMetric,
    EvalResults,
    EvalSample,
    EvalScore,
    EvalSpec,
    EvalStats,
)
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    GenerateConfig,
    ModelOutput,
    ModelUsage,
)
from inspect_ai.scorer import CORRECT, INCORRECT, Score
from inspect_ai.tool import ToolCall, ToolCallError, ToolInfo
from pydantic import BaseModel, ConfigDict

from benchwright_gateway.trajectories import TrialLog, moment
from benchwright_shared.contracts.agent_events import AgentToolResult
from benchwright_shared.run_log import LogEntry

# A run's status as the log's: a run still going is a log still being written.
LogStatus = Literal["started", "success", "cancelled", "error"]
LOG_STATUS: dict[str, LogStatus] = {
    "ok": "success",
    "error": "error",
    "halted": "cancelled",
    "running": "started",
}
PASS_SCORER = "pass"
SCORE_SCORER = "score"


class SampleSource(BaseModel):
    """What one sample is made of: a task row (or one trial of it) and its document,
    and what the agent did in it, for an agent run."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    task_id: str
    index: int
    trial: int
    outcome: str | None
    score: float | None
    output: str | None
    error_type: str | None
    error: str | None
    duration_ms: int | None
    score_meta: dict[str, Any]
    cost: dict[str, Any] | None
    input: Any
    expected: Any
    conversation: TrialLog | None = None


class _Sink:
    """Collects what the zip writes; having no ``tell``, it makes ``zipfile`` stream."""

    def __init__(self) -> None:
        self.chunks: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.chunks.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass

    def take(self) -> bytes:
        data, self.chunks = b"".join(self.chunks), []
        return data


def file_name(run: dict[str, Any]) -> str:
    """Named as Inspect names its logs (``inspect log list`` reads task and id from it)."""
    created = str(run.get("created_at") or "").replace(":", "-")
    return f"{created}_{task_name(run)}_{run['id']}.eval"


def task_name(run: dict[str, Any]) -> str:
    name = (run.get("benchmark") or {}).get("name") or "benchmark"
    slug = (run.get("subset") or {}).get("slug") or ""
    return "_".join(f"{name} {slug}".lower().replace("/", " ").replace("-", " ").split())


async def write_eval_log(
    run: dict[str, Any], pages: AsyncIterator[list[SampleSource]]
) -> AsyncIterator[bytes]:
    """The ``.eval`` zip's bytes, a page of samples at a time, the header last."""
    sink = _Sink()
    model = _model_name(run)
    with zipfile.ZipFile(sink, mode="w", compression=zipfile.ZIP_DEFLATED) as archive:
        batch = 0
        async for page in pages:
            batch += 1
            summaries = []
            for source in page:
                sample = _sample(source, model)
                name = f"samples/{sample.id}_epoch_{sample.epoch}.json"
                archive.writestr(name, sample.model_dump_json())
                summaries.append(sample.summary().model_dump(mode="json"))
            archive.writestr(f"_journal/summaries/{batch}.json", json.dumps(summaries))
            yield sink.take()
        archive.writestr("header.json", header(run).model_dump_json())
    yield sink.take()


def header(run: dict[str, Any]) -> EvalLog:
    """The log without samples: what ran, on what, and how it scored."""
    summary = run.get("summary") or {}
    model = _model_name(run)
    trials = int(((run.get("trials") or {}).get("plan") or {}).get("k") or 1)
    total = int(summary.get("total") or 0)
    judged = int(summary.get("passed") or 0) + int(summary.get("failed") or 0)
    subset = run.get("subset") or {}
    error = run.get("error") or {}
    created = str(run.get("created_at") or "")
    spent = (run.get("cost") or {}).get("model") or {}
    return EvalLog(
        status=LOG_STATUS.get(str(run.get("status")), "started"),
        eval=EvalSpec(
            created=created,
            task=f"benchwright/{task_name(run)}",
            task_id=run["id"],
            run_id=run["id"],
            task_version=0,
            model=model,
            dataset=EvalDataset(
                name=subset.get("slug") or task_name(run),
                location=f"benchwright:{subset.get('id')}",
                samples=run.get("selected_tasks") or total,
            ),
            config=EvalConfig(limit=run.get("selected_tasks"), epochs=trials),
            metadata={
                "benchwright": {
                    "run_id": run["id"],
                    "benchmark": run.get("benchmark"),
                    "subset": subset,
                    "impl_id": run.get("impl_id"),
                    "fingerprint": run.get("fingerprint"),
                    "display_status": run.get("display_status"),
                    "cost": run.get("cost"),
                    "summary": summary,
                }
            },
        ),
        results=EvalResults(
            total_samples=total * trials,
            completed_samples=total * trials,
            scores=_scores(summary, judged),
        ),
        stats=EvalStats(
            started_at=created,
            completed_at=str(run.get("finished_at") or ""),
            model_usage={
                model: ModelUsage(
                    input_tokens=int(spent.get("prompt_tokens") or 0),
                    output_tokens=int(spent.get("completion_tokens") or 0),
                    total_tokens=int(spent.get("prompt_tokens") or 0)
                    + int(spent.get("completion_tokens") or 0),
                    total_cost=spent.get("amount_usd"),
                )
            },
        ),
        error=(
            EvalError(
                message=f"{error.get('type')}: {error.get('detail') or ''}",
                traceback="",
                traceback_ansi="",
            )
            if error
            else None
        ),
    )


def _scores(summary: dict[str, Any], judged: int) -> list[EvalScore]:
    rate = summary.get("pass_rate")
    # Inspect's stderr metric: the standard error of the mean, sqrt(p(1-p)/(n-1)).
    stderr = (rate * (1 - rate) / (judged - 1)) ** 0.5 if rate is not None and judged > 1 else None
    accuracy = {"accuracy": EvalMetric(name="accuracy", value=float(rate or 0.0))}
    if stderr is not None:
        accuracy["stderr"] = EvalMetric(name="stderr", value=stderr)
    mean = {"mean": EvalMetric(name="mean", value=float(summary.get("mean_score") or 0.0))}
    return [
        EvalScore(name=PASS_SCORER, scorer=PASS_SCORER, scored_samples=judged, metrics=accuracy),
        EvalScore(name=SCORE_SCORER, scorer=SCORE_SCORER, scored_samples=judged, metrics=mean),
    ]


def _model_name(run: dict[str, Any]) -> str:
    model = run.get("model") or {}
    return f"{model.get('provider') or 'unknown'}/{model.get('model') or 'unknown'}"


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _sample(source: SampleSource, model: str) -> EvalSample:
    prompt = _text(source.input)
    output = source.output or ""
    errored = source.outcome == "err" or source.outcome is None
    scores = (
        {}
        if errored
        else {
            PASS_SCORER: Score(
                value=CORRECT if source.outcome == "pass" else INCORRECT,
                answer=output[:1000],
                explanation=source.outcome,
            ),
            SCORE_SCORER: Score(value=float(source.score or 0.0), metadata=source.score_meta),
        }
    )
    messages: list[ChatMessage] = [
        ChatMessageUser(content=prompt),
        ChatMessageAssistant(content=output, model=model),
    ]
    events: list[Event] = []
    if source.conversation is not None:
        messages, events = conversation(source.conversation, model)
        prompt = source.conversation.started.data.instruction if source.conversation.started else ""
    return EvalSample(
        id=source.task_id,
        epoch=source.trial + 1,
        input=prompt,
        target=_text(source.expected),
        messages=messages,
        events=events,
        output=ModelOutput.from_content(model=model, content=output),
        scores=scores,
        metadata={
            "benchwright": {
                "index": source.index,
                "trial": source.trial,
                "outcome": source.outcome,
                "error_type": source.error_type,
                "cost": source.cost,
            }
        },
        total_time=source.duration_ms / 1000 if source.duration_ms is not None else None,
        error=(
            EvalError(
                message=f"{source.error_type}: {source.error or ''}"[:4000],
                traceback=source.error or "",
                traceback_ansi="",
            )
            if errored
            else None
        ),
    )


# What Inspect's tool errors say for a failed call of ours (``is_error``): a timeout
# has no exit code.
def _tool_error(exit_code: int | None, output: str) -> ToolCallError:
    return ToolCallError("timeout" if exit_code is None else "unknown", output[:1000])


def conversation(log: TrialLog, model: str) -> tuple[list[ChatMessage], list[Event]]:
    """An agent's trial as Inspect's messages and its model and tool events."""
    messages: list[ChatMessage] = []
    start = log.started.data if log.started else None
    if start is not None:
        if start.system_prompt:
            messages.append(ChatMessageSystem(content=start.system_prompt))
        messages.append(ChatMessageUser(content=start.instruction))
    tools = [ToolInfo(name=name, description=name) for name in (start.tools if start else [])]
    turned = {t.data.turn for t in log.turns}
    # Calls no model asked for (the oracle's solve.sh): events only, not messages.
    events: list[Event] = [_tool_event(r, {}) for r in log.results if r.data.turn not in turned]
    for entry in log.turns:
        turn = entry.data
        asked = [ToolCall(id=c.id, function=c.name, arguments=c.arguments) for c in turn.tool_calls]
        reply = ChatMessageAssistant(content=turn.text or "", tool_calls=asked or None, model=model)
        usage = ModelUsage(
            input_tokens=turn.input_tokens,
            output_tokens=turn.output_tokens,
            total_tokens=turn.input_tokens + turn.output_tokens,
            total_cost=turn.cost_micros / 1_000_000 if turn.cost_micros is not None else None,
        )
        events.append(
            ModelEvent(
                timestamp=moment(entry.ts),
                working_start=0.0,
                model=model,
                input=list(messages),
                tools=tools,
                tool_choice="auto",
                config=GenerateConfig(),
                output=ModelOutput(
                    model=model,
                    choices=[
                        ChatCompletionChoice(
                            message=reply,
                            stop_reason="tool_calls" if asked else "stop",
                        )
                    ],
                    usage=usage,
                    time=turn.latency_ms / 1000,
                ),
                working_time=turn.latency_ms / 1000,
                metadata={"benchwright": {"turn": turn.turn, "finish_reason": turn.finish_reason}},
            )
        )
        messages.append(reply)
        for result in log.results_of(turn.turn):
            done = result.data
            error = _tool_error(done.exit_code, done.output) if done.is_error else None
            call = next((c for c in asked if c.id == done.call_id), None)
            messages.append(
                ChatMessageTool(
                    content=done.output, tool_call_id=done.call_id, function=done.name, error=error
                )
            )
            events.append(_tool_event(result, call.arguments if call else {}))
    return messages, events


def _tool_event(result: LogEntry[AgentToolResult], arguments: dict[str, Any]) -> ToolEvent:
    done = result.data
    return ToolEvent(
        timestamp=moment(result.ts),
        working_start=0.0,
        id=done.call_id,
        function=done.name,
        arguments=arguments,
        result=done.output,
        error=_tool_error(done.exit_code, done.output) if done.is_error else None,
        working_time=done.duration_ms / 1000,
        metadata={"benchwright": {"exit_code": done.exit_code, "turn": done.turn}},
    )
