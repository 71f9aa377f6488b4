"""Benchwright SDK: launch LLM benchmark runs and read their results.

>>> from benchwright import Benchwright
>>> bw = Benchwright()  # BW_PAT / BW_BASE_URL, or the `benchwright up` credentials
>>> run = bw.runs.launch(benchmark="GSM8K", sut={"model": "m", "provider": "openrouter"})
"""

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
    AsyncTaskList,
    AttrDict,
    DeletedRun,
    EventList,
    ProjectionRebuild,
    Run,
    RunEvent,
    RunList,
    TaskList,
    TaskPayload,
    TaskRow,
    TaskSummary,
)
from ._version import __version__
from .resources.webhooks import (
    Webhook,
    WebhookDelivery,
    WebhookEvent,
    WebhookSignatureError,
)

__all__ = [
    "APIConnectionError",
    "APIResponseError",
    "APIStatusError",
    "APITimeoutError",
    "AsyncBenchwright",
    "AsyncTaskList",
    "AttrDict",
    "AuthenticationError",
    "BadRequestError",
    "Benchwright",
    "BenchwrightError",
    "ClientConfig",
    "ConfigurationError",
    "ConflictError",
    "DeletedRun",
    "EventList",
    "InternalServerError",
    "NotFoundError",
    "PaymentRequiredError",
    "PermissionDeniedError",
    "PreconditionFailedError",
    "ProjectionRebuild",
    "RateLimitError",
    "Run",
    "RunEvent",
    "RunList",
    "TaskList",
    "TaskPayload",
    "TaskRow",
    "TaskSummary",
    "UnprocessableEntityError",
    "WaitTimeoutError",
    "Webhook",
    "WebhookDelivery",
    "WebhookEvent",
    "WebhookSignatureError",
    "__version__",
    "credentials_path",
    "resolve_config",
]
