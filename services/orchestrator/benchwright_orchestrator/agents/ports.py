"""What the platform's agent loop needs from the world, as protocols.

``TaskSandbox`` runs commands and moves files in the task's sandbox, ``AgentModel``
answers a conversation with text or tool calls (OpenAI chat-completions tool
calling), ``Trajectory`` records each step in the run's log. Production adapters
talk to the sandbox-manager, the proxy (``openai_model.ProxyAgentModel``) and the
bus; tests give in-memory ones. Nothing here does I/O.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from benchwright_shared.contracts.agent_events import (
    AgentAttemptEnded,
    AgentAttemptStarted,
    AgentModelTurn,
    AgentToolResult,
)

# The task's working directory: relative paths in tool calls are relative to it.
APP_DIR = "/app"


@dataclass(frozen=True, slots=True)
class ExecResult:
    exit_code: int
    stdout: str
    stderr: str
    duration_ms: int


class TaskSandbox(Protocol):
    """The task's sandbox, as the agent's tools use it.

    ``read`` and ``write`` raise an ``OSError`` (``FileNotFoundError``,
    ``IsADirectoryError`` ...) for what the agent got wrong, which becomes a tool
    result the model sees; any other exception is the platform's failure and ends the
    attempt. ``write`` creates missing parent directories. ``exec`` raises
    ``TimeoutError`` when the command outlives ``timeout_s``.
    """

    async def exec(
        self,
        argv: Sequence[str],
        *,
        stdin: str | None = None,
        cwd: str = APP_DIR,
        timeout_s: float | None = None,
    ) -> ExecResult: ...

    async def write(self, path: str, content: str) -> None: ...

    async def read(self, path: str) -> str: ...


@dataclass(frozen=True, slots=True)
class ModelToolCall:
    """A call the model asked for, as it sent it (``arguments`` is JSON text)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ModelReply:
    text: str | None
    tool_calls: tuple[ModelToolCall, ...] = ()
    input_tokens: int = 0
    output_tokens: int = 0
    # As the proxy metered it (None: not metered).
    cost_micros: int | None = None
    finish_reason: str | None = None


class ModelRefused(Exception):
    """The model will not answer: ``reason`` is ``"cost"`` (a spending ceiling, HTTP
    402) or ``"model_error"`` (anything else, after the adapter's retries)."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


class AgentModel(Protocol):
    """A chat model that can call tools (OpenAI message and tool formats)."""

    async def complete(
        self, messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]]
    ) -> ModelReply: ...


AgentEvent = AgentAttemptStarted | AgentModelTurn | AgentToolResult | AgentAttemptEnded


class Trajectory(Protocol):
    """Where the loop records each step of the attempt, in order."""

    async def record(self, event: AgentEvent, *, save: bool = True) -> None:
        """Record ``event`` after the steps before it. With ``save`` it is durable, and
        so is every step recorded before it, when this returns; without, it is saved
        with the next step that is (or, a step left unsaved for long, on its own)."""
        ...

    async def keep(self, text: str) -> str | None:
        """Keep a text too long for an event whole, outside the log: the name it is
        kept under (None: this trajectory keeps nothing beyond its events)."""
        ...
