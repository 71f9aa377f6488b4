"""Request bodies of the public API, validated strictly: unknown fields are errors."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from benchwright_shared.scoring import AggregatorError, validate_aggregator

# Hosted providers the proxy can route to; anything else needs a user's api_base.
HOSTED_PROVIDERS = ("openrouter", "together", "local")
RETIRED_DRIVER_FIELDS = ("agent", "operator")


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


class LaunchMetadata(BaseModel):
    model_config = ConfigDict(extra="allow")

    limit: int | None = Field(default=None, ge=1, le=1_000_000)


class LaunchRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    benchmark: str | None = Field(default=None, min_length=1, max_length=300)
    subset: str | None = Field(default=None, min_length=1, max_length=300)
    impl: str | None = Field(default=None, min_length=1, max_length=300)
    request: str | None = None
    sut: SutIn
    trials: TrialsIn | None = None
    metadata: LaunchMetadata = Field(default_factory=LaunchMetadata)

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
