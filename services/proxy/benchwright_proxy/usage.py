"""Usage accounting: calls are summed per run and reported in short windows.

A call that finishes after its run's key was revoked (the run's teardown
detached the model while the call was in flight) lingers: it is summed in a
window of its own and reported as ``source="proxy_linger"``.
"""

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from benchwright_shared.contracts import ModelUsageRecorded


@dataclass
class CallRecord:
    run_id: str
    account: str
    model_id: str
    provider: str
    prompt_tokens: int
    completion_tokens: int
    cost_micros: int
    latency_ms: int
    ok: bool
    # Finished after the run was detached (see the module docstring).
    linger: bool = False
    # Answered from the response cache: no tokens, no cost.
    cached: bool = False
    # The model under test's call, or a judge's (metered apart: ``cost.judge``).
    role: Literal["model", "judge"] = "model"


@dataclass
class _Window:
    first: CallRecord
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    calls: int = 0
    failed: int = 0
    cached: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_micros: int = 0
    latency_ms: int = 0


class UsageMeter:
    """Accumulates calls per run; ``drain`` turns them into events."""

    def __init__(self) -> None:
        self._windows: dict[tuple[str, bool, str, str], _Window] = {}

    def record(self, call: CallRecord) -> None:
        where = (call.run_id, call.linger, call.role, call.model_id)
        window = self._windows.setdefault(where, _Window(first=call))
        window.calls += 1
        window.failed += 0 if call.ok else 1
        window.cached += 1 if call.cached else 0
        window.prompt_tokens += call.prompt_tokens
        window.completion_tokens += call.completion_tokens
        window.cost_micros += call.cost_micros
        window.latency_ms += call.latency_ms

    def drain(self) -> list[ModelUsageRecorded]:
        windows, self._windows = self._windows, {}
        now = datetime.now(UTC)
        return [
            ModelUsageRecorded(
                usage_id=str(uuid.uuid4()),
                run_id=run_id,
                account=w.first.account,
                model_id=w.first.model_id,
                provider=w.first.provider,
                source="proxy_linger" if linger else "model",
                role=w.first.role,
                calls=w.calls,
                failed_calls=w.failed,
                cached_calls=w.cached,
                prompt_tokens=w.prompt_tokens,
                completion_tokens=w.completion_tokens,
                cost_micros=w.cost_micros,
                latency_ms_total=w.latency_ms,
                window_start=w.started,
                window_end=now,
            )
            for (run_id, linger, _, _), w in windows.items()
        ]
