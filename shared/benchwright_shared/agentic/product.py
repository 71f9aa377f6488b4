"""``agent: "product"``: a product under test, started in each task's sandbox.

A launch names how the product starts, when it is ready and how a task drives it::

    "agent_args": {
        "command": ["python3", "/srv/product/server.py", "--port", "8765"],
        "ready_url": "http://127.0.0.1:8765/health",    # polled until it answers 2xx
        "ready_timeout_s": 60,                           # the product's own boot, bounded
        "drive_url": "http://127.0.0.1:8765/task",       # the task's instruction is POSTed here
        "body": "json",                                  # {"instruction", "task"}, or "text"
        "requires": ["python3"],                         # what the base image must have
        "cwd": "/app", "env": {"PRODUCT_MODE": "eval"},
    }

Both URLs are inside the sandbox (loopback): the product is reached nowhere else.
Its model is the run's proxy, through ``OPENAI_BASE_URL``/``OPENAI_API_KEY`` and
``ANTHROPIC_BASE_URL``/``ANTHROPIC_API_KEY`` (the run's proxy key, never a provider's):
those names, and the platform's own ``BW_*``, are not the launch's to set. The
arguments, ``env`` included, are kept in the run's metadata: no secret belongs there.
"""

import re
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = [
    "DEFAULT_READY_TIMEOUT_S",
    "MAX_READY_TIMEOUT_S",
    "PRODUCT_AGENT",
    "RESERVED_ENV",
    "ProductAgentArgs",
]

PRODUCT_AGENT = "product"
DEFAULT_READY_TIMEOUT_S = 60.0
MAX_READY_TIMEOUT_S = 900.0
# Set by the platform for the product: pointing it at the run's proxy.
RESERVED_ENV = frozenset(
    {
        "OPENAI_BASE_URL",
        "OPENAI_API_KEY",
        "OPENAI_MODEL",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_MODEL",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
    }
)
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")
LOOPBACK_HOSTS = ("127.0.0.1", "localhost")


def _in_sandbox_url(value: str) -> str:
    try:
        parts = urlsplit(value)
        port = parts.port
    except ValueError:
        raise ValueError("not a URL") from None
    if parts.scheme != "http" or parts.hostname not in LOOPBACK_HOSTS or port is None:
        raise ValueError(
            "must be http://127.0.0.1:<port>/... (or localhost): the product listens "
            "inside its sandbox, and is reached nowhere else"
        )
    return value


class ProductAgentArgs(BaseModel):
    """How a product under test starts, is waited for, and is driven by each task."""

    model_config = ConfigDict(extra="forbid", strict=True)

    # An argv (use ["sh", "-c", "..."] for a shell line); argv[0] is what the probe looks for.
    command: list[str] = Field(min_length=1, max_length=64)
    ready_url: str = Field(max_length=2000)
    ready_timeout_s: float = Field(default=DEFAULT_READY_TIMEOUT_S, gt=0, le=MAX_READY_TIMEOUT_S)
    drive_url: str = Field(max_length=2000)
    body: Literal["json", "text"] = "json"
    # Executables the environment must have (besides argv[0]), checked by the probe.
    requires: list[str] = Field(default_factory=list, max_length=32)
    # Where the product starts: the task's working directory when absent.
    cwd: str | None = Field(default=None, max_length=1000)
    env: dict[str, str] = Field(default_factory=dict, max_length=64)

    @field_validator("command")
    @classmethod
    def _command(cls, value: list[str]) -> list[str]:
        for part in value:
            if "\0" in part or len(part) > 4000:
                raise ValueError("each part is text without NUL, at most 4000 characters")
        if not value[0].strip():
            raise ValueError("argv[0] names the program to start")
        return value

    @field_validator("ready_url", "drive_url")
    @classmethod
    def _url(cls, value: str) -> str:
        return _in_sandbox_url(value)

    @field_validator("requires")
    @classmethod
    def _requires(cls, value: list[str]) -> list[str]:
        for name in value:
            if not name or "\0" in name or len(name) > 200:
                raise ValueError("each is a program name or absolute path")
        return value

    @field_validator("cwd")
    @classmethod
    def _cwd(cls, value: str | None) -> str | None:
        if value is not None and (not value.startswith("/") or "\0" in value):
            raise ValueError("an absolute path inside the sandbox")
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for name, text in value.items():
            if not ENV_NAME.match(name):
                raise ValueError(f"{name[:80]!r} is not a variable name")
            if name in RESERVED_ENV or name.startswith("BW_"):
                raise ValueError(
                    f"{name} is set by the platform (the product's model is the run's proxy)"
                )
            if "\0" in text or len(text) > 4000:
                raise ValueError(f"{name}: text without NUL, at most 4000 characters")
        return value

    @property
    def executables(self) -> list[str]:
        """What the environment must have: the command's program, then ``requires``."""
        return list(dict.fromkeys([self.command[0], *self.requires]))
