"""What the Harbor bridge's child and the orchestrator say to each other.

The child (``harbor_child``) runs one of Harbor's agents against an environment that
has no sandbox of its own: each ``exec``, upload and download it is asked for is one
JSON line on the child's stdout, and the orchestrator answers each on the child's
stdin, after carrying it out in the attempt's task sandbox. The first line on stdin
is the child's ``BridgeConfig``; the child's last line on stdout is ``done``.

Files travel base64-encoded inside the lines, so a binary file crosses unharmed.
"""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "CHILD_MODULE",
    "COST_STAMPS",
    "BridgeConfig",
    "BridgeModel",
    "ChildDone",
    "ChildLine",
    "ChildRequest",
    "ChildSpent",
    "ParentReply",
    "read_child_line",
]

CHILD_MODULE = "benchwright_orchestrator.agents.harbor_child"
# What the proxy stamps on each answer it metered, by the ``ChildSpent`` field it fills.
COST_STAMPS = {
    "x-benchwright-call-cost-micros": "cost_micros",
    "x-benchwright-call-prompt-tokens": "input_tokens",
    "x-benchwright-call-completion-tokens": "output_tokens",
}


class BridgeModel(BaseModel):
    """Where an agent that calls a model sends its calls: the run's proxy, only."""

    model_config = ConfigDict(extra="forbid")

    # LiteLLM's name for it: ``openai/<the model id the proxy knows>``.
    name: str
    api_base: str
    # The run's proxy key: the only credential the child ever holds.
    api_key: str
    headers: dict[str, str] = Field(default_factory=dict)


class BridgeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # Harbor's own name for the agent (``oracle``, ``nop``, ``terminus-2``, ...).
    agent: str
    task_name: str
    instruction: str
    # The task's files the agent may see (never ``tests/``), relative to the task.
    task_files: dict[str, str]
    workdir: str
    timeout_s: float
    model: BridgeModel | None = None
    agent_kwargs: dict[str, Any] = Field(default_factory=dict)
    # One of Harbor's installed agents, whose CLI the sandbox already has.
    installed: bool = False


class ChildRequest(BaseModel):
    """One thing the agent asks its environment to do."""

    model_config = ConfigDict(extra="forbid")

    id: int
    op: Literal["exec", "upload", "download"]
    # exec: a shell command line, run with ``bash -c``.
    command: str | None = None
    cwd: str | None = None
    env: dict[str, str] | None = None
    timeout_s: float | None = None
    # upload and download: the path in the sandbox; upload: the file's bytes.
    path: str | None = None
    content_b64: str | None = None


class ParentReply(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: int
    # None when the request could not be carried out (``error`` says why).
    exit_code: int | None = None
    stdout: str = ""
    stderr: str = ""
    content_b64: str | None = None
    error: str | None = None
    # ENOENT and the like, for a download that found no file.
    errno: int | None = None


class ChildDone(BaseModel):
    model_config = ConfigDict(extra="forbid")

    op: Literal["done"] = "done"
    # The agent raised: its type and message.
    error: str | None = None


class ChildSpent(BaseModel):
    """One model call the proxy answered, as the proxy stamped it (no reply expected)."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["spent"] = "spent"
    cost_micros: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


ChildLine = ChildRequest | ChildDone | ChildSpent
_CHILD_LINE: TypeAdapter[ChildLine] = TypeAdapter(Annotated[ChildLine, Field(discriminator="op")])


def read_child_line(line: bytes) -> ChildLine:
    """One line the child wrote; ``ValueError`` when it is not one of the protocol's."""
    return _CHILD_LINE.validate_json(line)
