"""Benchwright SDK: launch LLM benchmark runs and read their results.

>>> from benchwright import Benchwright
>>> bw = Benchwright()  # BW_PAT / BW_BASE_URL, or the `benchwright up` credentials
>>> run = bw.runs.launch(benchmark="GSM8K", sut={"model": "m", "provider": "openrouter"})
"""

# The names below load on first use: `import benchwright` (and so every `benchwright`
# command, `benchwright up` included) does not pay for the HTTP client and its models
# until something asks for them.
import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
    from ._async_client import AsyncBenchwright
    from ._client import Benchwright
    from ._config import ClientConfig, credentials_path, resolve_config
    from ._errors import (
        APIConnectionError,
        APIResponseError,
        APIStatusError,
        APITimeoutError,
        AuthenticationError,
        BadRequestError,
        BenchwrightError,
        ConfigurationError,
        ConflictError,
        InternalServerError,
        NotFoundError,
        PaymentRequiredError,
        PermissionDeniedError,
        PreconditionFailedError,
        RateLimitError,
        UnprocessableEntityError,
        WaitTimeoutError,
    )
    from ._models import (
        Agreement,
        Artifact,
        ArtifactDetail,
        AsyncTaskList,
        AttrDict,
        BlockedHost,
        DeletedRun,
        EventList,
        Fingerprint,
        Label,
        LabelList,
        Narration,
        ProjectionRebuild,
        Run,
        RunComparison,
        RunEvent,
        RunList,
        TaskList,
        TaskPayload,
        TaskRow,
        TaskSummary,
        TrialResult,
    )
    from .resources.webhooks import (
        Webhook,
        WebhookDelivery,
        WebhookEvent,
        WebhookSignatureError,
        WebhookWithSecret,
    )

_LAZY: dict[str, str] = {
    "AsyncBenchwright": "._async_client",
    "Benchwright": "._client",
    "ClientConfig": "._config",
    "credentials_path": "._config",
    "resolve_config": "._config",
    "APIConnectionError": "._errors",
    "APIResponseError": "._errors",
    "APIStatusError": "._errors",
    "APITimeoutError": "._errors",
    "AuthenticationError": "._errors",
    "BadRequestError": "._errors",
    "BenchwrightError": "._errors",
    "ConfigurationError": "._errors",
    "ConflictError": "._errors",
    "InternalServerError": "._errors",
    "NotFoundError": "._errors",
    "PaymentRequiredError": "._errors",
    "PermissionDeniedError": "._errors",
    "PreconditionFailedError": "._errors",
    "RateLimitError": "._errors",
    "UnprocessableEntityError": "._errors",
    "WaitTimeoutError": "._errors",
    "AsyncTaskList": "._models",
    "AttrDict": "._models",
    "DeletedRun": "._models",
    "EventList": "._models",
    "ProjectionRebuild": "._models",
    "Run": "._models",
    "RunEvent": "._models",
    "RunList": "._models",
    "TaskList": "._models",
    "TaskPayload": "._models",
    "TaskRow": "._models",
    "TaskSummary": "._models",
    "TrialResult": "._models",
    "Webhook": ".resources.webhooks",
    "WebhookDelivery": ".resources.webhooks",
    "WebhookEvent": ".resources.webhooks",
    "WebhookSignatureError": ".resources.webhooks",
    "Artifact": "._models",
    "ArtifactDetail": "._models",
    "BlockedHost": "._models",
    "Fingerprint": "._models",
    "Narration": "._models",
    "RunComparison": "._models",
    "Agreement": "._models",
    "Label": "._models",
    "LabelList": "._models",
    "WebhookWithSecret": ".resources.webhooks",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "APIConnectionError",
    "APIResponseError",
    "APIStatusError",
    "APITimeoutError",
    "Agreement",
    "Artifact",
    "ArtifactDetail",
    "AsyncBenchwright",
    "AsyncTaskList",
    "AttrDict",
    "AuthenticationError",
    "BadRequestError",
    "Benchwright",
    "BenchwrightError",
    "BlockedHost",
    "ClientConfig",
    "ConfigurationError",
    "ConflictError",
    "DeletedRun",
    "EventList",
    "Fingerprint",
    "InternalServerError",
    "Label",
    "LabelList",
    "Narration",
    "NotFoundError",
    "PaymentRequiredError",
    "PermissionDeniedError",
    "PreconditionFailedError",
    "ProjectionRebuild",
    "RateLimitError",
    "Run",
    "RunComparison",
    "RunEvent",
    "RunList",
    "TaskList",
    "TaskPayload",
    "TaskRow",
    "TaskSummary",
    "TrialResult",
    "UnprocessableEntityError",
    "WaitTimeoutError",
    "Webhook",
    "WebhookDelivery",
    "WebhookEvent",
    "WebhookSignatureError",
    "WebhookWithSecret",
    "__version__",
    "credentials_path",
    "resolve_config",
]
