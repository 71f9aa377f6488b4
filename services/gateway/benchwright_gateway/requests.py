"""Request bodies of the public API, validated strictly: unknown fields are errors."""

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    HttpUrl,
    StrictBool,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from benchwright_gateway.harness import OWN as OWN_HARNESS
from benchwright_gateway.harness import check_harness
from benchwright_gateway.labelling import NOTE_CAP
from benchwright_shared.contracts import Compute, Visibility
from benchwright_shared.scoring import AggregatorError, validate_aggregator

# Hosted providers the proxy can route to; anything else needs a user's api_base.
HOSTED_PROVIDERS = ("openrouter", "together", "local")
RETIRED_DRIVER_FIELDS = ("agent", "operator")
# A panel of judges: more than this is a budget mistake, not a design.
MAX_JUDGES = 5


class SutIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = Field(min_length=1, max_length=200)
    provider: str = Field(min_length=1, max_length=50)
    api_base: HttpUrl | None = None

    @model_validator(mode="after")
    def _provider_known(self) -> "SutIn":
        if self.api_base is None and self.provider not in HOSTED_PROVIDERS:
            raise ValueError(
                f"unknown provider {self.provider!r}: use one of {', '.join(HOSTED_PROVIDERS)} "
                "or give api_base for a server you run"
            )
        return self


class TrialsPlan(BaseModel):
    model_config = ConfigDict(extra="forbid")

    k: int = Field(default=1, ge=1, le=100)


class TrialsIn(BaseModel):
    """``trials``: k independent trials per task, reduced by a named aggregator."""

    model_config = ConfigDict(extra="forbid")

    plan: TrialsPlan = Field(default_factory=TrialsPlan)
    aggregator: dict[str, Any] = Field(default_factory=lambda: {"name": "any_pass"})

    @field_validator("aggregator")
    @classmethod
    def _known_aggregator(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            return validate_aggregator(value)
        except AggregatorError as exc:
            raise ValueError(str(exc)) from None


LIMIT_LEVELS = ("run", "task", "attempt", "phase")
LIMIT_QUANTITIES = ("cost", "duration", "tasks", "attempts")
# What the platform enforces. Anything else is refused rather than stored and ignored.
ENFORCED_LIMITS = {
    ("run", "cost"),
    ("run", "duration"),
    ("run", "tasks"),
    ("phase", "cost"),
    ("phase", "duration"),
    ("task", "duration"),
    ("task", "attempts"),
    # Metered per task by the proxy, which refuses a task's calls past them.
    ("task", "cost"),
    ("attempt", "cost"),
    ("attempt", "duration"),
}
PHASE_NAMES = ("find", "fetch", "analyze", "setup", "attach", "atomize", "materialize", "report")
FORKABLE_PHASES = ("fetch", "analyze", "setup", "attach", "atomize", "materialize")
DRIVERS = ("builtin", "litellm")
# The phases a Driver decides, each of which ``phase_models`` may give its own model.
DRIVER_PHASES = ("find", "analyze", "atomize")
MAX_HINTS = 20
Hint = Annotated[str, Field(min_length=1, max_length=4000)]


CACHE_MODES = ("off", "read", "read_write")
# A cached answer is served while younger than this, unless the launch says otherwise.
DEFAULT_CACHE_TTL_S = 7 * 24 * 3600


class CacheIn(BaseModel):
    """``cache``: whether the run's model calls read and write the proxy's response
    cache, and how old an answer it accepts (seconds). ``"read_write"`` alone is
    ``{"mode": "read_write"}``."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["off", "read", "read_write"] = "off"
    ttl: int = Field(default=DEFAULT_CACHE_TTL_S, ge=1, le=365 * 24 * 3600)


class TelemetryIn(BaseModel):
    """``telemetry``: this run's OpenTelemetry traces, where the deployment exports
    them (``OTEL_EXPORTER_OTLP_ENDPOINT``): ``traces: false`` leaves the run out;
    ``message_content: true`` records its prompts and answers on the model-call spans."""

    model_config = ConfigDict(extra="forbid")

    traces: StrictBool = True
    message_content: StrictBool = False


class ConstraintsIn(BaseModel):
    """The older spelling of limits, with units in the names."""

    model_config = ConfigDict(extra="forbid")

    max_tasks: int | None = Field(default=None, ge=1)
    max_cost_cents: int | None = Field(default=None, ge=0)
    max_duration_ms: int | None = Field(default=None, ge=0)


def check_limits(limits: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Validate ``limits`` (``<level>.<quantity>``); refuse what is not enforced."""
    checked: dict[str, dict[str, float]] = {}
    for level, quantities in limits.items():
        base, _, named = level.partition(":")
        if base not in LIMIT_LEVELS or (named and base != "phase"):
            raise ValueError(f"unknown limit level {level!r}; levels: {', '.join(LIMIT_LEVELS)}")
        if named and named not in PHASE_NAMES:
            raise ValueError(f"unknown phase {named!r} in limits; phases: {', '.join(PHASE_NAMES)}")
        if not isinstance(quantities, dict):
            raise ValueError(f"limits.{level} must be an object of quantities")
        for quantity, value in quantities.items():
            if quantity not in LIMIT_QUANTITIES:
                raise ValueError(f"unknown quantity {quantity!r} in limits.{level}")
            if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
                raise ValueError(f"limits.{level}.{quantity} must be a positive number")
            if (base, quantity) not in ENFORCED_LIMITS:
                raise ValueError(
                    f"limits.{level}.{quantity} cannot be enforced: a {base} has no "
                    f"{quantity} the platform can meter; remove it rather than rely on it"
                )
            checked.setdefault(level, {})[quantity] = float(value)
    return checked


class LaunchMetadata(BaseModel):
    model_config = ConfigDict(extra="allow")

    limit: int | None = Field(default=None, ge=1, le=1_000_000)


class ReplayIn(BaseModel):
    """``replay``: rerun a run's tasks with its scorer: a slice, a new model, or both."""

    model_config = ConfigDict(extra="forbid")

    from_run: str = Field(min_length=1, max_length=100)
    task_ids: list[str] | None = Field(default=None, min_length=1, max_length=100_000)
    # Tasks whose outcome was not ``pass`` (failures and errors alike).
    only_failed: StrictBool = False


def check_judge(value: SutIn | list[SutIn] | None) -> SutIn | list[SutIn] | None:
    """A launch's (or a rescore's) ``judge``: one, or a panel of distinct judges."""
    if isinstance(value, list):
        if not 1 <= len(value) <= MAX_JUDGES:
            raise ValueError(f"a panel has 1 to {MAX_JUDGES} judges")
        ids = [f"{j.provider}/{j.model}" for j in value]
        if len(set(ids)) != len(ids):
            raise ValueError("a panel names each judge once")
    return value


def judge_list(value: SutIn | list[SutIn] | None) -> list[SutIn]:
    """``judge`` as a list (one judge, or a panel); empty when none."""
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def check_driver(value: str | None) -> str | None:
    """``builtin``, ``litellm``, or ``<provider>://<model>`` for the LLM Driver on that model."""
    if value is None or value in DRIVERS:
        return value
    if "://" in value and all(value.split("://", 1)):
        return f"litellm:{value}"
    raise ValueError(
        f"unknown driver {value!r}: use 'builtin', 'litellm' or '<provider>://<model>'"
    )


class LaunchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    benchmark: str | None = Field(default=None, min_length=1, max_length=300)
    subset: str | None = Field(default=None, min_length=1, max_length=300)
    impl: str | None = Field(default=None, min_length=1, max_length=300)
    request: str | None = Field(default=None, min_length=1, max_length=4000)
    replay: ReplayIn | None = None
    sut: SutIn | None = None
    # The model that grades a model-graded scorer's answers, or a panel of them.
    judge: SutIn | list[SutIn] | None = None
    driver: str | None = Field(default=None, max_length=300)
    # Where the run's sandboxes live; a typo is a 400 naming the field.
    compute: Compute | None = None
    harness: str | None = None
    trials: TrialsIn | None = None
    limits: dict[str, Any] | None = None
    constraints: ConstraintsIn | None = None
    # Guidance for the Driver: a sentence or a list of them.
    hints: Hint | list[Hint] | None = None
    # ``{phase: "<provider>://<model>"}``: the LLM Driver's model for that phase.
    phase_models: dict[str, str] | None = None
    # The proxy's response cache for this run's model calls; off unless asked.
    cache: CacheIn | None = None
    # This run's traces (where the deployment exports them); the defaults when absent.
    telemetry: TelemetryIn | None = None
    metadata: LaunchMetadata = Field(default_factory=LaunchMetadata)

    @field_validator("hints")
    @classmethod
    def _hints(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and not 1 <= len(value) <= MAX_HINTS:
            raise ValueError(f"hints takes 1 to {MAX_HINTS} sentences")
        return value

    @field_validator("phase_models")
    @classmethod
    def _phase_models(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        for phase, model in (value or {}).items():
            if phase not in DRIVER_PHASES:
                raise ValueError(
                    f"phase_models names {phase!r}: the Driver's phases are "
                    f"{', '.join(DRIVER_PHASES)}"
                )
            provider, _, name = model.partition("://")
            if not (provider and name) or len(model) > 300:
                raise ValueError(
                    f"phase_models.{phase} must be '<provider>://<model>', not {model[:60]!r}"
                )
        return value

    @field_validator("judge")
    @classmethod
    def _judge(cls, value: SutIn | list[SutIn] | None) -> SutIn | list[SutIn] | None:
        return check_judge(value)

    def judge_list(self) -> list[SutIn]:
        """``judge`` as a list (one judge, or a panel); empty when none."""
        return judge_list(self.judge)

    def hint_list(self) -> list[str]:
        """``hints`` as a list, whichever form it came in."""
        if self.hints is None:
            return []
        return [self.hints] if isinstance(self.hints, str) else list(self.hints)

    @field_validator("harness")
    @classmethod
    def _harness(cls, value: str | None) -> str | None:
        return check_harness(value)

    def bridged(self) -> bool:
        """Whether a third-party harness scores the run (not our own)."""
        return self.harness not in (None, OWN_HARNESS)

    @field_validator("limits")
    @classmethod
    def _limits(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_limits(value) if value is not None else None

    @field_validator("driver")
    @classmethod
    def _driver(cls, value: str | None) -> str | None:
        return check_driver(value)

    @field_validator("cache", mode="before")
    @classmethod
    def _cache(cls, value: Any) -> Any:
        """``"read_write"`` is short for ``{"mode": "read_write"}``."""
        if isinstance(value, str):
            if value not in CACHE_MODES:
                raise ValueError(
                    f"cache is one of {', '.join(CACHE_MODES)}, or {{mode, ttl}}; not {value!r}"
                )
            return {"mode": value}
        return value

    def cache_setting(self) -> dict[str, Any] | None:
        """``cache`` as ``{"mode", "ttl"}``; None when off (the default)."""
        found = self.cache
        return None if found is None or found.mode == "off" else found.model_dump()

    def telemetry_setting(self) -> dict[str, bool] | None:
        """``telemetry`` as given; None when it asks for the defaults."""
        found = self.telemetry
        return None if found is None or found == TelemetryIn() else found.model_dump()

    def ceilings(self) -> dict[str, dict[str, float]]:
        """``limits`` with the older ``constraints`` folded in (narrowest wins)."""
        merged: dict[str, dict[str, float]] = {k: dict(v) for k, v in (self.limits or {}).items()}
        c = self.constraints
        legacy = {
            "cost": c.max_cost_cents / 100 if c and c.max_cost_cents is not None else None,
            "duration": c.max_duration_ms / 1000 if c and c.max_duration_ms is not None else None,
        }
        for quantity, value in legacy.items():
            if value is not None:
                run = merged.setdefault("run", {})
                run[quantity] = min(value, run.get(quantity, value))
        return merged

    def task_cap(self) -> int | None:
        """``metadata.limit``, ``limits.run.tasks`` and ``max_tasks``: the narrowest wins."""
        caps = [self.metadata.limit]
        if self.limits and "tasks" in self.limits.get("run", {}):
            caps.append(int(self.limits["run"]["tasks"]))
        if self.constraints:
            caps.append(self.constraints.max_tasks)
        present = [c for c in caps if c is not None]
        return min(present) if present else None

    @model_validator(mode="before")
    @classmethod
    def _reject_retired_names(cls, data: Any) -> Any:
        if isinstance(data, dict):
            for name in RETIRED_DRIVER_FIELDS:
                if name in data:
                    raise ValueError(f"{name!r} was renamed: the launch field is 'driver'")
        return data

    @field_validator("benchmark", "subset", "impl")
    @classmethod
    def _strip(cls, value: str | None) -> str | None:
        return value.strip() if value else value


class HaltRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(default=None, max_length=500)
    # Park the run instead of ending it; ``POST /v1/runs/{id}/resume`` carries it on.
    pause: StrictBool = False


class ForkRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    description: str = Field(min_length=1, max_length=20_000)
    from_phase: str = "atomize"
    sut: SutIn | None = None
    driver: str | None = Field(default=None, max_length=300)
    compute: Compute | None = None
    limits: dict[str, Any] | None = None
    idempotency_key: str | None = Field(default=None, max_length=255)

    @field_validator("from_phase")
    @classmethod
    def _phase(cls, value: str) -> str:
        if value not in FORKABLE_PHASES:
            raise ValueError(f"cannot fork from {value!r}; one of {', '.join(FORKABLE_PHASES)}")
        return value

    @field_validator("sut")
    @classmethod
    def _model_swap_needs_attach(cls, value: SutIn | None, info: ValidationInfo) -> SutIn | None:
        # After Attach the parent's model is on record: a new one must be attached anew.
        if value is not None and info.data.get("from_phase") in ("atomize", "materialize"):
            raise ValueError(
                "a fork that swaps the model must rewind to 'attach' or earlier "
                "(or replay the run with the new model)"
            )
        return value

    @field_validator("driver")
    @classmethod
    def _driver(cls, value: str | None) -> str | None:
        return check_driver(value)

    @field_validator("limits")
    @classmethod
    def _limits(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_limits(value) if value is not None else None


class RunPatch(BaseModel):
    """``PATCH /v1/runs/{id}``: who may see the run, the answer to a review, metadata.

    ``metadata`` alone is refused (``invalid_argument``): it rides along with a
    visibility change or a review answer.
    """

    model_config = ConfigDict(extra="forbid")

    visibility: Visibility | None = None
    review_resolution: str | None = Field(default=None, min_length=1, max_length=20_000)
    metadata: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _something_to_do(self) -> "RunPatch":
        if self.visibility is None and self.review_resolution is None:
            raise ValueError(
                "send 'visibility' or 'review_resolution' (metadata rides along with one)"
            )
        return self


class LabelRequest(BaseModel):
    """``POST /v1/runs/{id}/labels``: a person's grade of one task of the run.

    ``task`` is the task's index, its row id (``t1_3``) or its task id; ``trial`` one
    of the run's trials (0 when left out); ``grade`` on the scale of the run's grader
    (``pass``/``fail``, or ``C``/``P``/``I`` when its scorer grades so).
    """

    model_config = ConfigDict(extra="forbid")

    task: StrictInt | str = Field(union_mode="left_to_right")
    trial: int | None = Field(default=None, ge=0, le=10_000)
    grade: str = Field(min_length=1, max_length=20)
    note: str | None = Field(default=None, max_length=NOTE_CAP)

    @field_validator("task", mode="before")
    @classmethod
    def _task_named(cls, value: Any) -> Any:
        # Checked before the union, so that a refusal names ``task``, not a member.
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
        if isinstance(value, str) and 0 < len(value) <= 500:
            return value
        raise ValueError("name the task by its index (0 or more), row id or task id")


class RescoreRequest(BaseModel):
    """``POST /v1/runs/{id}/rescore``: score the run's recorded outputs again with
    ``impl`` (a scorer of the same subset) and, if named, another ``judge``, in a new
    run; the model under test is not called."""

    model_config = ConfigDict(extra="forbid")

    impl: str = Field(min_length=1, max_length=300)
    # Another judge (or panel) for the scorer's judge calls; None: the parent's.
    judge: SutIn | list[SutIn] | None = None
    limits: dict[str, Any] | None = None
    idempotency_key: str | None = Field(default=None, max_length=255)

    @field_validator("impl")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.strip()

    @field_validator("judge")
    @classmethod
    def _judge(cls, value: SutIn | list[SutIn] | None) -> SutIn | list[SutIn] | None:
        return check_judge(value)

    def judge_list(self) -> list[SutIn]:
        """``judge`` as a list (one judge, or a panel); empty when none."""
        return judge_list(self.judge)

    @field_validator("limits")
    @classmethod
    def _limits(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return check_limits(value) if value is not None else None
